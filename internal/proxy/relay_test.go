package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// pong is the server's answer to ping(id).
func pong(id int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":"ping-%d","result":{}}`, id) }

// barrier sends a ping through both directions and checks it is the next
// thing each side receives: nothing else got through before it.
func (h *harness) barrier(id int) {
	h.t.Helper()
	h.fromClient(ping(id))
	h.serverGetsOnly(ping(id))
	h.fromServer(pong(id))
	h.clientGetsOnly(pong(id))
}

// wantError checks that line is a JSON-RPC error response to id with code,
// whose message contains msg.
func wantError(t *testing.T, line, id string, code int, msg string) {
	t.Helper()
	decode(t, line)
	var m struct {
		ID    json.RawMessage
		Error map[string]any
	}
	json.Unmarshal([]byte(line), &m)
	e := m.Error
	if string(m.ID) != id || e == nil || e["code"] != float64(code) || !strings.Contains(fmt.Sprint(e["message"]), msg) {
		t.Fatalf("got %s\nwant an error response to id %s, code %d, message containing %q", line, id, code, msg)
	}
}

// wantToolError checks that line is a tools/call result to id with isError
// set and text as its text.
func wantToolError(t *testing.T, line, id, text string) {
	t.Helper()
	want := `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":` + mustJSON(text) + `}],"isError":true}}`
	if line != want {
		t.Fatalf("got  %s\nwant %s", line, want)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestRelayPassesMessagesThroughUnchanged(t *testing.T) {
	fromClient := []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2099-01-01","capabilities":{"x-future":{"a":[1,2]}},"clientInfo":{"name":"c","version":"1"}},"x-extra":true}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"r1","method":"resources/read","params":{"uri":"demo://readme","_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"greet","arguments":{"name":"caf\u00e9"}}}`,
		`{ "jsonrpc" : "2.0" , "id" : 3 , "method" : "x-vendor/unknown" , "params" : [ 1 , {"deep":{"er":null}} ] }`,
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{"_meta":{}}}`,
		`{"jsonrpc":"2.0","id":"srv-7","result":{"model":"m","role":"assistant","content":{"type":"text","text":"hi \ud83d\ude00"}}}`,
		`{"jsonrpc":"2.0","id":"srv-8","error":{"code":-1,"message":"user declined"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"abc"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"demo://readme"},"unknown":[]}`,
	}
	fromServer := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":2,"message":"half"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"x","data":{"k":[1]}}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","id":"srv-7","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"q"}}],"maxTokens":10}}`,
		`{"jsonrpc":"2.0","id":"srv-8","method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{}}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"roots/list"}`,
		`{"jsonrpc":"2.0","id":10,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"x-vendor/event","params":{"a":"\u00e9"},"x":1}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
		// Answers to the client's requests above, with fields aegis has never heard of.
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2099-01-01","capabilities":{},"serverInfo":{"name":"s","version":"1"},"x-new":1}}`,
		`{"jsonrpc":"2.0","id":"r1","result":{"contents":[{"uri":"demo://readme","text":"t"}]}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"no such prompt","data":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"anything":["goes"]}}`,
		`{"jsonrpc":"2.0","id":4,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}],"nextCursor":"n"}}`,
		`{"jsonrpc":"2.0","id":5.0,"result":{}}`,
	}
	h := newHarness(t, &testGate{})
	for _, l := range fromClient {
		h.fromClient(l)
		h.serverGetsOnly(l)
	}
	for _, l := range fromServer {
		h.fromServer(l)
		h.clientGetsOnly(l)
	}
	h.barrier(1)
}

func TestRelayGatesToolsCall(t *testing.T) {
	tests := []struct {
		name       string
		gate       *testGate
		call       string
		wantServer string // what the server receives; "" for nothing
		wantClient string // the refusal the client receives; "" for none
		wantCall   *Call  // what the gate saw
	}{
		{
			name:       "allowed, relayed byte for byte",
			gate:       &testGate{},
			call:       `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"read_file","arguments":{"path":"/tmp/a"},"_meta":{"progressToken":7}}}`,
			wantServer: `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"read_file","arguments":{"path":"/tmp/a"},"_meta":{"progressToken":7}}}`,
			wantCall:   &Call{ID: json.RawMessage(`1`), Tool: "read_file", Arguments: json.RawMessage(`{"path":"/tmp/a"}`), Meta: json.RawMessage(`{"progressToken":7}`)},
		},
		{
			name:       "refused with the gate's reason",
			gate:       &testGate{deny: map[string]string{"read_file": "denied by rule no-ssh (policy.yaml:3)"}},
			call:       `{"jsonrpc":"2.0","id":"c-2","method":"tools/call","params":{"name":"read_file","arguments":{"path":"/home/a/.ssh/id_rsa"}}}`,
			wantClient: `{"jsonrpc":"2.0","id":"c-2","result":{"content":[{"type":"text","text":"denied by rule no-ssh (policy.yaml:3)"}],"isError":true}}`,
			wantCall:   &Call{ID: json.RawMessage(`"c-2"`), Tool: "read_file", Arguments: json.RawMessage(`{"path":"/home/a/.ssh/id_rsa"}`)},
		},
		{
			name:       "refused without a reason",
			gate:       &testGate{deny: map[string]string{"x": ""}},
			call:       `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
			wantClient: `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"aegis refused this call"}],"isError":true}}`,
			wantCall:   &Call{ID: json.RawMessage(`3`), Tool: "x", Arguments: json.RawMessage(`{}`)},
		},
		{
			name:       "gate error refuses, generically",
			gate:       &testGate{err: errors.New("chain: disk full at /var/secret/path")},
			call:       `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
			wantClient: `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"aegis refused this call: it could not be checked"}],"isError":true}}`,
			wantCall:   &Call{ID: json.RawMessage(`4`), Tool: "x", Arguments: json.RawMessage(`{}`)},
		},
		{
			name:       "missing arguments are gated as {}",
			gate:       &testGate{},
			call:       `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"now"}}`,
			wantServer: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"now"}}`,
			wantCall:   &Call{ID: json.RawMessage(`5`), Tool: "now", Arguments: json.RawMessage(`{}`)},
		},
		{
			name:       "replacement arguments",
			gate:       &testGate{args: json.RawMessage("{\n  \"path\": \"/srv/pinned\"\n}")},
			call:       `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/tmp/a"},"x":1}}`,
			wantServer: `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/srv/pinned"},"x":1}}`,
			wantCall:   &Call{ID: json.RawMessage(`6`), Tool: "read_file", Arguments: json.RawMessage(`{"path":"/tmp/a"}`)},
		},
		{
			name:       "replacement arguments where there were none",
			gate:       &testGate{args: json.RawMessage(`{"tenant":"acme"}`)},
			call:       `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"now" }}`,
			wantServer: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"now" ,"arguments":{"tenant":"acme"}}}`,
			wantCall:   &Call{ID: json.RawMessage(`7`), Tool: "now", Arguments: json.RawMessage(`{}`)},
		},
		{
			name:       "replacement arguments that are not an object refuse",
			gate:       &testGate{args: json.RawMessage(`["x"]`)},
			call:       `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
			wantClient: `{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"aegis refused this call: it could not be checked"}],"isError":true}}`,
			wantCall:   &Call{ID: json.RawMessage(`8`), Tool: "x", Arguments: json.RawMessage(`{}`)},
		},
		{
			name:       "replacement arguments with duplicate keys refuse",
			gate:       &testGate{args: json.RawMessage(`{"a":1,"a":2}`)},
			call:       `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
			wantClient: `{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"aegis refused this call: it could not be checked"}],"isError":true}}`,
			wantCall:   &Call{ID: json.RawMessage(`9`), Tool: "x", Arguments: json.RawMessage(`{}`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.gate)
			h.fromClient(tt.call)
			if tt.wantClient != "" {
				h.clientGetsOnly(tt.wantClient)
			}
			if tt.wantServer != "" {
				h.serverGetsOnly(tt.wantServer)
			}
			h.barrier(1)
			if diff := cmp.Diff([]*Call{tt.wantCall}, tt.gate.seen()); diff != "" {
				t.Errorf("gate saw (-want +got)\n%s", diff)
			}
		})
	}
}

// TestRelayRefusesSmuggling feeds the relay messages built to make aegis and
// the server disagree about what they are. None may reach the server.
func TestRelayRefusesSmuggling(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantCode int    // the error the client receives; 0 for none
		wantID   string // its id
		wantMsg  string
	}{
		{name: "duplicate method", in: `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"x"}}`, wantCode: codeParseError, wantID: "1", wantMsg: "duplicate key"},
		{name: "duplicate method other order", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"method":"ping"}`, wantCode: codeParseError, wantID: "1", wantMsg: "duplicate key"},
		{name: "case variant method", in: `{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"x"}}`, wantCode: codeParseError, wantID: "1", wantMsg: "differ only in case"},
		{name: "lone case variant method", in: `{"jsonrpc":"2.0","id":1,"METHOD":"tools/call","params":{"name":"x"}}`, wantCode: codeInvalidRequest, wantID: "1", wantMsg: "case variant"},
		{name: "duplicate params", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok"},"params":{"name":"evil"}}`, wantCode: codeParseError, wantID: "1", wantMsg: "duplicate key"},
		{name: "duplicate name", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","name":"evil"}}`, wantCode: codeParseError, wantID: "1", wantMsg: "duplicate key"},
		{name: "duplicate argument", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"r","arguments":{"path":"/ok","path":"/home/a/.ssh/id_rsa"}}}`, wantCode: codeParseError, wantID: "1", wantMsg: "duplicate key"},
		{name: "case variant argument", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"r","arguments":{"path":"/ok","PATH":"/etc/shadow"}}}`, wantCode: codeParseError, wantID: "1", wantMsg: "differ only in case"},
		{name: "escaped duplicate argument", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"r","arguments":{"path":"/ok","p\u0061th":"/x"}}}`, wantCode: codeParseError, wantID: "1", wantMsg: "duplicate key"},
		{name: "lone case variant name", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"evil","arguments":{}}}`, wantCode: codeInvalidParams, wantID: "1", wantMsg: "case variant"},
		{name: "long-s arguments", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"r","argumentſ":{"path":"/etc/shadow"}}}`, wantCode: codeInvalidParams, wantID: "1", wantMsg: "case variant"},
		{name: "lookalike method", in: `{"jsonrpc":"2.0","id":1,"method":"Tools/Call","params":{"name":"x"}}`, wantCode: codeInvalidRequest, wantID: "1", wantMsg: "resembles tools/call"},
		{name: "lookalike method NUL", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call\u0000","params":{"name":"x"}}`, wantCode: codeInvalidRequest, wantID: "1", wantMsg: "control character"},
		{name: "invalid UTF-8", in: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"r\",\"arguments\":{\"path\":\"/a\xc0\xae\"}}}", wantCode: codeParseError, wantID: "1", wantMsg: "invalid UTF-8"},
		{name: "lone surrogate", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"r","arguments":{"path":"/a\ud800"}}}`, wantCode: codeParseError, wantID: "1", wantMsg: "surrogate"},
		{name: "trailing garbage", in: `{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`, wantCode: codeParseError, wantID: "1", wantMsg: "after the JSON value"},
		{name: "trailing comment", in: `{"jsonrpc":"2.0","id":1,"method":"ping"}//`, wantCode: codeParseError, wantID: "1", wantMsg: "after the JSON value"},
		{name: "two ids", in: `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}`},
		{name: "id and ID", in: `{"jsonrpc":"2.0","id":1,"ID":2,"method":"tools/call","params":{"name":"x"}}`},
		{name: "garbage without id", in: `{"jsonrpc":"2.0","method":"tools/call",}`},
		{name: "not JSON", in: `tools/call`},
		{name: "tools/call notification", in: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","arguments":{}}}`},
		{name: "no params", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, wantCode: codeInvalidParams, wantID: "1", wantMsg: "params must be an object"},
		{name: "null params", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`, wantCode: codeInvalidParams, wantID: "1", wantMsg: "params must be an object"},
		{name: "params array", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["x",{}]}`, wantCode: codeInvalidParams, wantID: "1", wantMsg: "params must be an object"},
		{name: "no name", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`, wantCode: codeInvalidParams, wantID: "1", wantMsg: "params.name must be a string"},
		{name: "empty name", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":""}}`, wantCode: codeInvalidParams, wantID: "1", wantMsg: "empty"},
		{name: "name not string", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["x"]}}`, wantCode: codeInvalidParams, wantID: "1", wantMsg: "params.name must be a string"},
		{name: "arguments null", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":null}}`, wantCode: codeInvalidParams, wantID: "1", wantMsg: "arguments must be an object"},
		{name: "arguments array", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":["/etc/shadow"]}}`, wantCode: codeInvalidParams, wantID: "1", wantMsg: "arguments must be an object"},
		{name: "arguments string", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":"{\"path\":\"/etc/shadow\"}"}}`, wantCode: codeInvalidParams, wantID: "1", wantMsg: "arguments must be an object"},
		{name: "task-augmented", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{},"task":{"ttl":1000}}}`, wantCode: codeInvalidParams, wantID: "1", wantMsg: "task-augmented"},
		{name: "fractional id", in: `{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"x"}}`, wantCode: codeInvalidRequest, wantID: "1.0", wantMsg: "integer"},
		{name: "exponent id", in: `{"jsonrpc":"2.0","id":1e0,"method":"ping"}`, wantCode: codeInvalidRequest, wantID: "1e0", wantMsg: "integer"},
		{name: "huge id", in: `{"jsonrpc":"2.0","id":123456789012345678901,"method":"ping"}`, wantCode: codeInvalidRequest, wantID: "123456789012345678901", wantMsg: "integer"},
		{name: "object id", in: `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"x"}}`},
		{name: "too deep", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}}`, wantCode: codeParseError, wantID: "1", wantMsg: "nested deeper"},
		{name: "batch with tools/call", in: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{}}}]`, wantCode: codeInvalidRequest, wantID: "batch", wantMsg: "may not hold tools/call"},
		{name: "batch with escaped tools/call notification", in: `[{"jsonrpc":"2.0","method":"tools\/call","params":{"name":"x","arguments":{}}}]`},
		{name: "batch with invalid element", in: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"1.0","id":2,"method":"tools/call"}]`, wantCode: codeInvalidRequest, wantID: "batch", wantMsg: "invalid message in batch"},
		{name: "batch with duplicate key", in: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping","method":"tools/call"}]`},
		{name: "batch with duplicate ids", in: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"1","method":"ping"}]`, wantCode: codeInvalidRequest, wantID: "batch", wantMsg: "already awaiting"},
		{name: "nested batch", in: `[[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}]]`},
		{name: "empty batch", in: `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gate := &testGate{}
			h := newHarness(t, gate)
			h.fromClient(tt.in)
			if tt.wantCode != 0 {
				got := h.clientGets()
				if tt.wantID == "batch" {
					var arr []json.RawMessage
					if err := json.Unmarshal([]byte(got), &arr); err != nil || len(arr) != 2 {
						t.Fatalf("got %s, want a batch of 2 error responses", got)
					}
					wantError(t, string(arr[0]), "1", tt.wantCode, tt.wantMsg)
				} else {
					wantError(t, got, tt.wantID, tt.wantCode, tt.wantMsg)
				}
			}
			h.barrier(1) // nothing reached the server, nothing else reached the client
			if calls := gate.seen(); len(calls) != 0 {
				t.Errorf("the gate saw %d calls, want none (the relay refuses before gating)", len(calls))
			}
		})
	}
}

func TestRelayBatchWithoutToolsCallIsRelayed(t *testing.T) {
	h := newHarness(t, &testGate{})
	batch := `[{"jsonrpc":"2.0","id":1,"method":"resources/list"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`
	h.fromClient(batch)
	h.serverGetsOnly(batch)
	resp := `[{"jsonrpc":"2.0","id":1,"result":{"resources":[]}},{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}]`
	h.fromServer(resp)
	h.clientGetsOnly(resp)
	// A stray response in the server's batch is dropped; the batch is split.
	h.fromClient(`{"jsonrpc":"2.0","id":3,"method":"resources/list"}`)
	h.serverGets()
	h.fromServer(`[{"jsonrpc":"2.0","id":3,"result":{}},{"jsonrpc":"2.0","id":99,"result":{"forged":true}},{"jsonrpc":"2.0","method":"notifications/message","params":{}}]`)
	h.clientGetsOnly(`{"jsonrpc":"2.0","id":3,"result":{}}`)
	h.clientGetsOnly(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)
	h.barrier(1)
}

func TestRelayRequestIDs(t *testing.T) {
	t.Run("an id already awaiting an answer is refused", func(t *testing.T) {
		h := newHarness(t, &testGate{})
		first := `{"jsonrpc":"2.0","id":1,"method":"resources/list"}`
		h.fromClient(first)
		h.serverGetsOnly(first)
		for _, again := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`,
			`{"jsonrpc":"2.0","id":"1","method":"prompts/list"}`, // "1" and 1 would confuse a lax peer
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		} {
			h.fromClient(again)
			wantError(t, h.clientGets(), strings.Split(strings.Split(again, `"id":`)[1], ",")[0], codeInvalidRequest, "already awaiting")
		}
		h.fromServer(`{"jsonrpc":"2.0","id":1,"result":{"resources":[]}}`)
		h.clientGetsOnly(`{"jsonrpc":"2.0","id":1,"result":{"resources":[]}}`)
		h.fromClient(first) // answered, so the id is free again
		h.serverGetsOnly(first)
		h.barrier(1)
	})
	t.Run("a forged response to a refused call is dropped", func(t *testing.T) {
		h := newHarness(t, &testGate{deny: map[string]string{"x": "no"}})
		h.fromClient(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x"}}`)
		wantToolError(t, h.clientGets(), "9", "no")
		h.fromServer(`{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"forged"}]}}`)
		h.barrier(1)
	})
	t.Run("a forged response while the call is gated is dropped", func(t *testing.T) {
		gate := &testGate{block: make(chan struct{})}
		h := newHarness(t, gate)
		call := `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"x","arguments":{}}}`
		h.fromClient(call)
		h.fromServer(`{"jsonrpc":"2.0","id":10,"result":{"content":[{"type":"text","text":"forged"}]}}`)
		h.barrier(1)
		close(gate.block)
		h.serverGetsOnly(call)
		real := `{"jsonrpc":"2.0","id":10,"result":{"content":[{"type":"text","text":"real"}]}}`
		h.fromServer(real)
		h.clientGetsOnly(real)
		h.barrier(2)
	})
	t.Run("a response that matches nothing is dropped", func(t *testing.T) {
		h := newHarness(t, &testGate{})
		h.fromServer(`{"jsonrpc":"2.0","id":12345,"result":{}}`, `{"jsonrpc":"2.0","id":"zz","error":{"code":1,"message":"x"}}`)
		h.barrier(1)
	})
}

func TestRelayCancellation(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"user"}}`

	t.Run("a cancelled gate refuses silently", func(t *testing.T) {
		gate := &testGate{block: make(chan struct{})}
		h := newHarness(t, gate)
		h.fromClient(call, cancel)
		h.barrier(1) // neither the call nor its cancellation reached the server; the client got no answer
		h.r.gates.Wait()
		if diff := cmp.Diff([]error{errCanceled}, gate.ctxErr, cmpErrors); diff != "" {
			t.Errorf("gate context (-want +got)\n%s", diff)
		}
	})
	t.Run("a call and its cancellation read in one piece", func(t *testing.T) {
		// Both lines arrive in one write, so the reader finds the
		// cancellation buffered and hands the reading on before deciding.
		gate := &testGate{block: make(chan struct{})}
		h := newHarness(t, gate)
		h.fromClient(call + "\n" + cancel)
		h.barrier(1)
		h.r.gates.Wait()
		if diff := cmp.Diff([]error{errCanceled}, gate.ctxErr, cmpErrors); diff != "" {
			t.Errorf("gate context (-want +got)\n%s", diff)
		}
	})
	t.Run("a cancellation does not overtake its call", func(t *testing.T) {
		gate := &ignoringGate{release: make(chan struct{})}
		h := newHarness(t, gate)
		h.fromClient(call, cancel)
		h.barrier(1) // the cancellation waits behind the gated call
		close(gate.release)
		h.serverGetsOnly(call)
		h.serverGetsOnly(cancel)
	})
	t.Run("a cancellation for a forwarded call goes straight through", func(t *testing.T) {
		h := newHarness(t, &testGate{})
		h.fromClient(call)
		h.serverGetsOnly(call)
		h.fromClient(cancel)
		h.serverGetsOnly(cancel)
	})
}

var errCanceled = errors.New("context canceled")

var cmpErrors = cmp.Comparer(func(a, b error) bool { return a.Error() == b.Error() })

// ignoringGate forwards every call once released, whatever its context says.
type ignoringGate struct{ release chan struct{} }

func (g *ignoringGate) Call(context.Context, *Call) (Verdict, error) {
	<-g.release
	return Verdict{Forward: true}, nil
}

func TestRelaySlowGateDoesNotBlockOtherMessages(t *testing.T) {
	gate := &testGate{block: make(chan struct{})}
	h := newHarness(t, gate)
	call := `{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"x","arguments":{}}}`
	h.fromClient(call)
	h.barrier(1)
	h.barrier(2)
	close(gate.block)
	h.serverGetsOnly(call)
}

func TestRelayToolsList(t *testing.T) {
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	result := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{"type":"object"},"x-new":1}],"nextCursor":"n","_meta":{"k":"v"}}}`
	tests := []struct {
		name    string
		tools   func([]json.RawMessage) ([]json.RawMessage, error)
		result  string
		want    string
		wantErr bool
	}{
		{
			name:   "unchanged is byte for byte",
			tools:  func(ts []json.RawMessage) ([]json.RawMessage, error) { return ts, nil },
			result: result,
			want:   result,
		},
		{
			name:   "filtered",
			tools:  func(ts []json.RawMessage) ([]json.RawMessage, error) { return ts[1:], nil },
			result: result,
			want:   `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"b","inputSchema":{"type":"object"},"x-new":1}],"nextCursor":"n","_meta":{"k":"v"}}}`,
		},
		{
			name:   "all hidden",
			tools:  func([]json.RawMessage) ([]json.RawMessage, error) { return nil, nil },
			result: result,
			want:   `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"nextCursor":"n","_meta":{"k":"v"}}}`,
		},
		{
			name:    "checker error withholds",
			tools:   func([]json.RawMessage) ([]json.RawMessage, error) { return nil, errors.New("pin store down") },
			result:  result,
			wantErr: true,
		},
		{
			name: "checker returns a non-object",
			tools: func([]json.RawMessage) ([]json.RawMessage, error) {
				return []json.RawMessage{json.RawMessage(`"a"`)}, nil
			},
			result:  result,
			wantErr: true,
		},
		{
			name:    "no tools array",
			tools:   func(ts []json.RawMessage) ([]json.RawMessage, error) { return ts, nil },
			result:  `{"jsonrpc":"2.0","id":1,"result":{"Tools":[{"name":"evil"}]}}`,
			wantErr: true,
		},
		{
			name:    "a tool that is not an object",
			tools:   func(ts []json.RawMessage) ([]json.RawMessage, error) { return ts, nil },
			result:  `{"jsonrpc":"2.0","id":1,"result":{"tools":["a"]}}`,
			wantErr: true,
		},
		{
			name:    "case-variant duplicate in a tool",
			tools:   func(ts []json.RawMessage) ([]json.RawMessage, error) { return ts, nil },
			result:  `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{},"InputSchema":{"properties":{"path":{}}}}]}}`,
			wantErr: true,
		},
		{
			name:   "an error response passes",
			tools:  func(ts []json.RawMessage) ([]json.RawMessage, error) { panic("not called") },
			result: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no tools"}}`,
			want:   `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no tools"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &checkingGate{testGate: &testGate{}, tools: tt.tools})
			h.fromClient(list)
			h.serverGetsOnly(list)
			h.fromServer(tt.result)
			got := h.clientGets()
			if tt.wantErr {
				wantError(t, got, "1", codeInternalError, "withheld")
			} else if got != tt.want {
				t.Fatalf("client got\n  %s\nwant\n  %s", got, tt.want)
			}
			h.barrier(1)
		})
	}
}

func TestRelayResults(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/a"}}}`
	result := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"AKIAIOSFODNN7EXAMPLE"}],"x":1}}`
	tests := []struct {
		name   string
		check  func(*Call, json.RawMessage) (json.RawMessage, error)
		result string
		want   string
	}{
		{
			name:   "unchanged is byte for byte",
			check:  func(*Call, json.RawMessage) (json.RawMessage, error) { return nil, nil },
			result: result,
			want:   result,
		},
		{
			name: "replaced",
			check: func(c *Call, res json.RawMessage) (json.RawMessage, error) {
				if c.Tool != "read_file" || !strings.Contains(string(res), "AKIA") {
					return nil, fmt.Errorf("checker got %s %s", c.Tool, res)
				}
				return json.RawMessage(`{"content":[{"type":"text","text":"[redacted: aws-key]"}]}`), nil
			},
			result: result,
			want:   `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"[redacted: aws-key]"}]}}`,
		},
		{
			name:   "checker error withholds",
			check:  func(*Call, json.RawMessage) (json.RawMessage, error) { return nil, errors.New("dlp down") },
			result: result,
			want:   `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"aegis withheld this tool's result: it could not be checked"}],"isError":true}}`,
		},
		{
			name: "checker withholds with a reason",
			check: func(*Call, json.RawMessage) (json.RawMessage, error) {
				return nil, fmt.Errorf("scan: %w", &Withheld{Reason: "it holds a private_key at \"/x\""})
			},
			result: result,
			want:   `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"aegis withheld this tool's result: it holds a private_key at \"/x\""}],"isError":true}}`,
		},
		{
			name:   "checker returns a non-object",
			check:  func(*Call, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`[1]`), nil },
			result: result,
			want:   `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"aegis withheld this tool's result: it could not be checked"}],"isError":true}}`,
		},
		{
			name:   "an error response passes",
			check:  func(*Call, json.RawMessage) (json.RawMessage, error) { panic("not called") },
			result: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`,
			want:   `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &checkingGate{testGate: &testGate{}, result: tt.check})
			h.fromClient(call)
			h.serverGetsOnly(call)
			h.fromServer(tt.result)
			h.clientGetsOnly(tt.want)
			h.barrier(1)
		})
	}
}

func TestRelayInvalidServerMessages(t *testing.T) {
	h := newHarness(t, &testGate{})
	h.fromClient(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	h.serverGets()
	// A response the client's decoder might read differently is withheld,
	// and the client is told.
	h.fromServer(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}],"Content":[{"type":"text","text":"b"}]}}`)
	got := h.clientGets()
	wantError(t, got, "1", codeInternalError, "withheld")
	if strings.Contains(got, "Content") {
		t.Errorf("the refusal quotes the server's message, which no check has seen: %s", got)
	}
	// Invalid messages that answer nothing are dropped.
	h.fromServer(`{"jsonrpc":"2.0","method":"notifications/message","method":"x"}`, `not json`, `{"jsonrpc":"2.0","id":7}`)
	h.barrier(1)
}

func TestRelayOversizedMessages(t *testing.T) {
	h := newHarnessOpts(t, &testGate{}, options{maxMsg: 200, maxDepth: 64, maxReqs: 100})
	big := strings.Repeat("x", 300)
	h.fromClient(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","arguments":{"a":"` + big + `"}},"id":"late-id"}`)
	wantError(t, h.clientGets(), `"late-id"`, codeInvalidRequest, "exceeds the 200-byte limit")
	h.barrier(1)

	h.fromClient(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"x"}}`)
	h.serverGets()
	h.fromServer(`{"jsonrpc":"2.0","id":2,"result":{"contents":[{"uri":"x","text":"` + big + `"}]}}`)
	wantError(t, h.clientGets(), "2", codeInternalError, "exceeds the 200-byte limit")
	h.barrier(2)
}

func TestRelayMaxInFlight(t *testing.T) {
	h := newHarnessOpts(t, &testGate{}, options{maxMsg: 1 << 20, maxDepth: 64, maxReqs: 2})
	h.fromClient(`{"jsonrpc":"2.0","id":1,"method":"a"}`, `{"jsonrpc":"2.0","id":2,"method":"a"}`)
	h.serverGets()
	h.serverGets()
	h.fromClient(`{"jsonrpc":"2.0","id":3,"method":"a"}`)
	wantError(t, h.clientGets(), "3", codeInternalError, "more than 2 requests")
}

func TestRelayServerGone(t *testing.T) {
	gate := &testGate{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	h := newHarness(t, gate)
	h.fromClient(`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`)
	h.serverGets()
	h.fromClient(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`)
	<-gate.entered // being gated
	h.r.serverGone(errors.New("the MCP server exited (exit status 3)"))
	wantError(t, h.clientGets(), "1", codeServerGone, "the MCP server exited (exit status 3) before answering")
	h.fromClient(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	wantError(t, h.clientGets(), "3", codeServerGone, "exit status 3")
	close(gate.block)
	wantError(t, h.clientGets(), "2", codeServerGone, "exit status 3")
}
