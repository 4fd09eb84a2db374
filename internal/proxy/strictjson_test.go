package proxy

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
)

func TestValidateStrict(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string // substring; "" means valid
	}{
		{name: "object", in: `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`},
		{name: "surrounding whitespace", in: " \t\r\n{}\r\n"},
		{name: "array", in: `[1,2,{"a":[]}]`},
		{name: "numbers", in: `[0,-0,1.5,-1e10,2E+3,3e-2,123456789012345678901234567890]`},
		{name: "escapes", in: `{"a":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}`},
		{name: "escaped key same as other key differs", in: `{"a\u0062":1,"ab2":2}`},
		{name: "utf8 raw", in: `{"k":"héllo 😀"}`},
		{name: "NUL escape in value", in: `{"k":"a\u0000b"}`},
		{name: "empty key", in: `{"":1}`},

		{name: "empty", in: ``, wantErr: "unexpected end"},
		{name: "only space", in: `   `, wantErr: "unexpected end"},
		{name: "trailing garbage", in: `{"a":1}x`, wantErr: "after the JSON value"},
		{name: "two values", in: `{"a":1} {"b":2}`, wantErr: "after the JSON value"},
		{name: "trailing comma object", in: `{"a":1,}`, wantErr: "want a string"},
		{name: "trailing comma array", in: `[1,]`, wantErr: "invalid character"},
		{name: "duplicate key", in: `{"method":"tools/list","method":"tools/call"}`, wantErr: `duplicate key "method"`},
		{name: "duplicate key nested", in: `{"params":{"arguments":{"path":"/a","path":"/b"}}}`, wantErr: `duplicate key "path"`},
		{name: "duplicate key via escape", in: `{"method":"a","m\u0065thod":"b"}`, wantErr: `duplicate key "method"`},
		{name: "duplicate key via escaped slash", in: `{"a/b":1,"a\/b":2}`, wantErr: `duplicate key "a/b"`},
		{name: "case variant keys", in: `{"method":"tools/list","Method":"tools/call"}`, wantErr: "differ only in case"},
		{name: "case variant keys nested", in: `{"x":[{"path":"/a","PATH":"/b"}]}`, wantErr: "differ only in case"},
		{name: "long s folds to s", in: `{"params":1,"paramſ":2}`, wantErr: "differ only in case"},
		{name: "kelvin folds to k", in: `{"k":1,"\u212a":2}`, wantErr: "differ only in case"},
		{name: "NUL in key", in: `{"method\u0000x":1}`, wantErr: "NUL"},
		{name: "invalid utf8", in: "{\"a\":\"\xff\"}", wantErr: "invalid UTF-8"},
		{name: "invalid utf8 in key", in: "{\"\xc3\x28\":1}", wantErr: "invalid UTF-8"},
		{name: "utf8 encoded surrogate", in: "{\"a\":\"\xed\xa0\x80\"}", wantErr: "invalid UTF-8"},
		{name: "overlong utf8", in: "{\"a\":\"\xc0\xaf\"}", wantErr: "invalid UTF-8"},
		{name: "lone high surrogate", in: `{"a":"\ud800"}`, wantErr: "surrogate"},
		{name: "lone high surrogate then text", in: `{"a":"\ud800x"}`, wantErr: "surrogate"},
		{name: "high then high", in: `{"a":"\ud800\ud800"}`, wantErr: "surrogate"},
		{name: "lone low surrogate", in: `{"a":"\udc00"}`, wantErr: "surrogate"},
		{name: "bad escape", in: `{"a":"\x"}`, wantErr: "invalid escape"},
		{name: "short unicode escape", in: `{"a":"\u12"}`, wantErr: "invalid \\u escape"},
		{name: "raw control char", in: "{\"a\":\"x\ny\"}", wantErr: "control character"},
		{name: "raw tab in string", in: "{\"a\":\"x\ty\"}", wantErr: "control character"},
		{name: "unterminated string", in: `{"a":"x`, wantErr: "unexpected end"},
		{name: "unterminated object", in: `{"a":1`, wantErr: "unexpected end"},
		{name: "leading zero", in: `[01]`, wantErr: "invalid character"},
		{name: "bare minus", in: `[-]`, wantErr: "invalid number"},
		{name: "dot no digits", in: `[1.]`, wantErr: "invalid number"},
		{name: "exp no digits", in: `[1e]`, wantErr: "invalid number"},
		{name: "plus sign", in: `[+1]`, wantErr: "invalid character"},
		{name: "NaN", in: `[NaN]`, wantErr: "invalid character"},
		{name: "single quotes", in: `{'a':1}`, wantErr: "want a string"},
		{name: "bad literal", in: `[tru]`, wantErr: "invalid literal"},
		{name: "BOM", in: "\ufeff{}", wantErr: "invalid character"},
		{name: "missing colon", in: `{"a" 1}`, wantErr: "want ':'"},
		{name: "comment", in: `{} // x`, wantErr: "after the JSON value"},
		{name: "too deep", in: strings.Repeat("[", 300) + strings.Repeat("]", 300), wantErr: "nested deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := validate([]byte(tt.in), 256)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("validate(%q) = %v, want nil", tt.in, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("validate(%q) = nil, want error containing %q", tt.in, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("validate(%q) = %q, want error containing %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

func TestValidateManyKeys(t *testing.T) {
	// Past the pairwise limit, duplicate detection switches to a map; both
	// exact and case-folded duplicates must still be found.
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"key` + strings.Repeat("x", i) + `":1`)
	}
	ok := b.String() + "}"
	if _, err := validate([]byte(ok), 256); err != nil {
		t.Fatalf("100 distinct keys: %v", err)
	}
	for _, dup := range []string{`,"keyxxx":2}`, `,"KEYXXX":2}`, `,"\u212aeyxx":2}`} {
		if _, err := validate([]byte(b.String()+dup), 256); err == nil {
			t.Errorf("100 keys then %s: no error", dup)
		}
	}
}

func TestValidateTopMembers(t *testing.T) {
	in := `{"jsonrpc":"2.0","i\u0064":7,"method":"tools\/call","params":{"a":1}}`
	_, top, err := validateTop([]byte(in), 256, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range top {
		got = append(got, string(m.key)+"="+in[m.start:m.end])
	}
	want := []string{`jsonrpc="2.0"`, `id=7`, `method="tools\/call"`, `params={"a":1}`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("top members = %q, want %q", got, want)
	}
}

func TestUnquote(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "plain", in: `"tools/call"`, want: "tools/call"},
		{name: "escaped slash", in: `"tools\/call"`, want: "tools/call"},
		{name: "unicode", in: `"\u0074ools/call"`, want: "tools/call"},
		{name: "pair", in: `"\ud83d\ude00"`, want: "😀"},
		{name: "controls", in: `"a\n\t\"\\b"`, want: "a\n\t\"\\b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(unquote([]byte(tt.in))); got != tt.want {
				t.Fatalf("unquote(%s) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzValidate checks validate against encoding/json: whatever validate
// accepts, encoding/json must accept too (it is the laxer parser), and must
// decode to the same string values for the top-level keys.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`[{"a":1},{"b":"\ud83d\ude00"}]`, `{"a":"\ud800"}`, `{"a":1,"A":2}`, "{\"a\":\"\xff\"}",
		`{"a":[1,2,{"b":null}],"c":-1.5e3}`, `{"k":"\u212a","\u212a":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, top, err := validateTop(data, 64, nil)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("validate accepted %q, encoding/json rejects it", data)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber() // validate does not bound numbers; 1e700 is valid JSON
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("unmarshal of accepted %q: %v", data, err)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		if len(obj) != len(top) {
			t.Fatalf("%q: %d top members, encoding/json sees %d keys", data, len(top), len(obj))
		}
		for _, m := range top {
			if _, ok := obj[string(m.key)]; !ok {
				t.Fatalf("%q: key %q not seen by encoding/json", data, m.key)
			}
			if !json.Valid(data[m.start:m.end]) {
				t.Fatalf("%q: member %q span %q is not a JSON value", data, m.key, data[m.start:m.end])
			}
		}
	})
}

func TestPlain8(t *testing.T) {
	// plain8 must agree with the byte table on every word made of one
	// varied byte among plain ones, at every position.
	for c := range 256 {
		for pos := range 8 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			want := true
			for _, b := range w {
				want = want && plain[b]
			}
			if got := plain8(binary.LittleEndian.Uint64(w)); got != want {
				t.Fatalf("plain8(%q) = %v, want %v", w, got, want)
			}
		}
	}
}
