package proxy

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/google/go-cmp/cmp"
)

func TestParseMessage(t *testing.T) {
	type result struct {
		Kind   kind
		Class  class
		Method string
		ID     string
	}
	tests := []struct {
		name    string
		in      string
		want    result
		wantErr string
	}{
		{name: "request", in: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, want: result{kindRequest, classOther, "ping", "1"}},
		{name: "tools/call", in: `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{}}`, want: result{kindRequest, classToolsCall, "tools/call", `"a"`}},
		{name: "escaped tools/call", in: `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{}}`, want: result{kindRequest, classToolsCall, "tools/call", "1"}},
		{name: "unicode-escaped tools/call", in: `{"jsonrpc":"2.0","id":1,"method":"\u0074ools/call","params":{}}`, want: result{kindRequest, classToolsCall, "tools/call", "1"}},
		{name: "tools/list", in: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, want: result{kindRequest, classToolsList, "tools/list", "1"}},
		{name: "cancelled", in: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, want: result{kindNotification, classCancelled, "notifications/cancelled", ""}},
		{name: "notification", in: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, want: result{kindNotification, classOther, "notifications/initialized", ""}},
		{name: "unknown method and fields", in: `{"jsonrpc":"2.0","id":9,"method":"x/y","params":[1],"extra":{"a":1}}`, want: result{kindRequest, classDecided, "x/y", "9"}},
		{name: "housekeeping request", in: `{"jsonrpc":"2.0","id":9,"method":"resources/list"}`, want: result{kindRequest, classOther, "resources/list", "9"}},
		{name: "resources/read is decided", in: `{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"u"}}`, want: result{kindRequest, classDecided, "resources/read", "9"}},
		{name: "unknown notification", in: `{"jsonrpc":"2.0","method":"x/y"}`, want: result{kindNotification, classOther, "x/y", ""}},
		{name: "result", in: `{"jsonrpc":"2.0","id":1,"result":{}}`, want: result{kindResponse, 0, "", "1"}},
		{name: "error", in: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, want: result{kindResponse, 0, "", "null"}},
		{name: "batch", in: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, want: result{Kind: kindBatch}},

		{name: "duplicate method", in: `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}`, want: result{ID: "1"}, wantErr: "duplicate key"},
		{name: "case variant method alone", in: `{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`, want: result{ID: "1"}, wantErr: "case variant"},
		{name: "case variant params", in: `{"jsonrpc":"2.0","id":1,"method":"ping","PARAMS":{}}`, want: result{ID: "1"}, wantErr: "case variant"},
		{name: "long-s params", in: `{"jsonrpc":"2.0","id":1,"method":"ping","paramſ":{}}`, want: result{ID: "1"}, wantErr: "case variant"},
		{name: "lookalike upper", in: `{"jsonrpc":"2.0","id":1,"method":"Tools/Call"}`, want: result{ID: "1"}, wantErr: "resembles tools/call"},
		{name: "lookalike dot", in: `{"jsonrpc":"2.0","id":1,"method":"tools.call"}`, want: result{ID: "1"}, wantErr: "resembles tools/call"},
		{name: "lookalike zero width", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call\u200b"}`, want: result{ID: "1"}, wantErr: "resembles tools/call"},
		{name: "lookalike trailing space", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call "}`, want: result{ID: "1"}, wantErr: "resembles tools/call"},
		{name: "lookalike list", in: `{"jsonrpc":"2.0","id":1,"method":"TOOLS/LIST"}`, want: result{ID: "1"}, wantErr: "resembles tools/list"},
		{name: "NUL in method", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call\u0000x"}`, want: result{ID: "1"}, wantErr: "control character"},
		{name: "no version", in: `{"id":1,"method":"ping"}`, want: result{ID: "1"}, wantErr: `"jsonrpc" must be "2.0"`},
		{name: "wrong version", in: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, want: result{ID: "1"}, wantErr: `"jsonrpc" must be "2.0"`},
		{name: "method not string", in: `{"jsonrpc":"2.0","id":1,"method":7}`, want: result{ID: "1"}, wantErr: "must be a string"},
		{name: "method and result", in: `{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, want: result{ID: "1"}, wantErr: "both a method"},
		{name: "result and error", in: `{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, want: result{ID: "1"}, wantErr: "both a result and an error"},
		{name: "id object", in: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, want: result{ID: "{}"}, wantErr: "not a string or a number"},
		{name: "id null request", in: `{"jsonrpc":"2.0","id":null,"method":"tools/call"}`, want: result{ID: "null"}, wantErr: "not a string or a number"},
		{name: "result null id", in: `{"jsonrpc":"2.0","id":null,"result":{}}`, want: result{ID: "null"}, wantErr: "null id"},
		{name: "neither", in: `{"jsonrpc":"2.0","id":1}`, want: result{ID: "1"}, wantErr: "neither"},
		{name: "params scalar", in: `{"jsonrpc":"2.0","id":1,"method":"ping","params":3}`, want: result{ID: "1"}, wantErr: "object or an array"},
		{name: "scalar message", in: `"tools/call"`, wantErr: "not a JSON object"},
		{name: "trailing garbage keeps id", in: `{"jsonrpc":"2.0","id":5,"method":"tools/call"}}`, want: result{ID: "5"}, wantErr: "after the JSON value"},
		{name: "two ids unusable", in: `{"jsonrpc":"2.0","id":5,"id":6,"method":"tools/call"}`, wantErr: "duplicate key"},
		{name: "invalid utf8 keeps id", in: "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\xff\"}", want: result{ID: "5"}, wantErr: "invalid UTF-8"},
		{name: "lone surrogate", in: `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":"\udfff"}}`, want: result{ID: "5"}, wantErr: "surrogate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parseMessage([]byte(tt.in), 64)
			got := result{Kind: m.kind, Class: m.class, Method: string(m.method), ID: string(m.id)}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				got = result{ID: got.ID}
			} else if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestParseMessageInvalidJSONIsParseError(t *testing.T) {
	_, err := parseMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`), 64)
	if !errors.Is(err, errInvalidJSON) {
		t.Errorf("duplicate key: %v is not errInvalidJSON", err)
	}
	// Peers read this in the error response: the relay's words, not args'.
	if want := `invalid JSON: duplicate key "method" at offset 37`; err == nil || err.Error() != want {
		t.Errorf("duplicate key: %v, want %q", err, want)
	}
	var se *args.SyntaxError
	if !errors.As(err, &se) || se.Offset != 37 {
		t.Errorf("duplicate key: %v does not wrap the *args.SyntaxError at 37", err)
	}
	_, err = parseMessage([]byte(`{"jsonrpc":"2.0","id":1}`), 64)
	if err == nil || errors.Is(err, errInvalidJSON) {
		t.Errorf("valid JSON, invalid message: %v", err)
	}
}

func TestRequestKeys(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr bool
	}{
		{name: "int", in: `7`, want: "7"},
		{name: "negative", in: `-7`, want: "-7"},
		{name: "zero", in: `0`, want: "0"},
		{name: "string", in: `"7"`, want: "7"},
		{name: "escaped string", in: `"\u0037"`, want: "7"},
		{name: "max", in: `9007199254740991`, want: "9007199254740991"},
		{name: "too big", in: `9007199254740992`, wantErr: true},
		{name: "fraction", in: `7.0`, wantErr: true},
		{name: "exponent", in: `7e0`, wantErr: true},
		{name: "negative zero", in: `-0`, wantErr: true},
		{name: "huge", in: `1e400`, wantErr: true},
		{name: "long string", in: `"` + strings.Repeat("a", maxIDBytes) + `"`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := requestKey([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("requestKey(%s) err = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("requestKey(%s) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestResponseKeys(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{`7`, "7", true},
		{`"7"`, "7", true},
		{`7.0`, "7", true},
		{`7e0`, "7", true},
		{`-0`, "0", true},
		{`7.5`, "", false},
		{`null`, "", false},
		{`1e400`, "", false},
		{`{}`, "", false},
	}
	for _, tt := range tests {
		got, ok := responseKey([]byte(tt.in))
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("responseKey(%s) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestLineReader(t *testing.T) {
	big := `{"jsonrpc":"2.0","method":"x","params":{"p":"` + strings.Repeat("a", 200) + `"},"id":42}`
	tests := []struct {
		name  string
		in    string
		max   int
		want  []string // lines, or "ERR <id>" for an oversized line
		final error
	}{
		{name: "lines", in: "a\nb\n", max: 100, want: []string{"a\n", "b\n"}},
		{name: "crlf kept", in: "a\r\n", max: 100, want: []string{"a\r\n"}},
		{name: "no final newline", in: "a\nb", max: 100, want: []string{"a\n", "b\n"}},
		{name: "blank lines skipped", in: "\n \r\n\ta\n\n", max: 100, want: []string{"\ta\n"}},
		{name: "exactly max", in: "abcd\n", max: 4, want: []string{"abcd\n"}},
		{name: "over max", in: "abcde\nok\n", max: 4, want: []string{"ERR ", "ok\n"}},
		{name: "oversized id found", in: big + "\nok\n", max: 100, want: []string{"ERR 42", "ok\n"}},
		{name: "oversized string id", in: `{"id":"x\"y","p":"` + strings.Repeat("b", 300) + "\"}\n", max: 100, want: []string{`ERR "x\"y"`}},
		{name: "oversized two ids", in: `{"id":1,"p":"` + strings.Repeat("b", 300) + `","id":2}` + "\n", max: 100, want: []string{"ERR "}},
		{name: "oversized nested id ignored", in: `{"p":{"id":1},"q":"` + strings.Repeat("b", 300) + "\"}\n", max: 100, want: []string{"ERR "}},
		{name: "oversized array", in: `[{"id":1,"q":"` + strings.Repeat("b", 300) + "\"}]\n", max: 100, want: []string{"ERR "}},
		{name: "oversized at EOF", in: strings.Repeat("c", 300), max: 100, want: []string{"ERR "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := newLineReader(strings.NewReader(tt.in), tt.max)
			lr.pool = &bufPool{size: 16} // exercise the accumulate path with a tiny buffer
			var got []string
			for {
				line, err := lr.next()
				var tl *tooLongError
				if errors.As(err, &tl) {
					got = append(got, "ERR "+string(tl.ID))
					continue
				}
				if err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatalf("err = %v", err)
					}
					break
				}
				got = append(got, string(line))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestLineReaderLongLineWithinCap(t *testing.T) {
	line := `{"a":"` + strings.Repeat("z", 3*readBufferSize) + `"}` + "\n"
	lr := newLineReader(strings.NewReader(line+line), 4*readBufferSize)
	for range 2 {
		got, err := lr.next()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, []byte(line)) {
			t.Fatalf("got %d bytes, want %d", len(got), len(line))
		}
	}
}
