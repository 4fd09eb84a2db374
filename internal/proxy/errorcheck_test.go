package proxy

import (
	"context"
	"encoding/json"
	"testing"
)

// errorGate checks the JSON-RPC errors answering calls with fn.
type errorGate struct {
	*testGate
	fn func(json.RawMessage) (json.RawMessage, error)
}

func (g *errorGate) Error(_ context.Context, _ *Call, e json.RawMessage) (json.RawMessage, error) {
	return g.fn(e)
}

// TestRelayErrorChecker: an error answering a call goes through the gate's
// ErrorChecker: relayed byte for byte, replaced in place, or withheld with
// the gate's reason; an error answering what the gate never saw (tools/list)
// is not its business.
func TestRelayErrorChecker(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`
	const secret = `{"jsonrpc":"2.0","id":1,"error":{"code":-32000, "message":"key AKIA… rejected"}}`
	tests := []struct {
		name string
		fn   func(json.RawMessage) (json.RawMessage, error)
		want string
		code int
		why  string
	}{
		{"passed on byte for byte", func(json.RawMessage) (json.RawMessage, error) { return nil, nil }, secret, 0, ""},
		{"replaced", func(json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"code":-32000,"message":"key [REDACTED] rejected"}`), nil
		}, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"key [REDACTED] rejected"}}`, 0, ""},
		{"withheld with a reason", func(json.RawMessage) (json.RawMessage, error) { return nil, &Withheld{Reason: "it holds a secret"} }, "", codeInternalError, "it holds a secret"},
		{"a replacement that is not an object", func(json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`"x"`), nil }, "", codeInternalError, "withheld"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen json.RawMessage
			h := newHarness(t, &errorGate{testGate: &testGate{}, fn: func(e json.RawMessage) (json.RawMessage, error) { seen = e; return tt.fn(e) }})
			h.fromClient(call)
			h.serverGetsOnly(call)
			h.fromServer(secret)
			if tt.want != "" {
				h.clientGetsOnly(tt.want)
			} else {
				wantError(t, h.clientGets(), "1", tt.code, tt.why)
			}
			h.barrier(1)
			if string(seen) != `{"code":-32000, "message":"key AKIA… rejected"}` {
				t.Errorf("the gate saw %s", seen)
			}
		})
	}
}

// TestRelayNullIDErrorChecked: an error the server could not attribute to
// a request ("id": null) reaches the client too, so it passes the gate's
// ErrorChecker like any other.
func TestRelayNullIDErrorChecked(t *testing.T) {
	const leak = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error near AKIA…"}}`
	var seen json.RawMessage
	h := newHarness(t, &errorGate{testGate: &testGate{}, fn: func(e json.RawMessage) (json.RawMessage, error) {
		seen = e
		return nil, &Withheld{Reason: "it holds a secret"}
	}})
	h.fromServer(leak)
	wantError(t, h.clientGets(), "null", codeInternalError, "it holds a secret")
	if string(seen) != `{"code":-32700,"message":"parse error near AKIA…"}` {
		t.Errorf("the gate saw %s", seen)
	}
}

// TestRelayWithheldAnswerIsUndelivered: a call whose answer the relay
// withholds as invalid is reported to the gate as not served.
func TestRelayWithheldAnswerIsUndelivered(t *testing.T) {
	g := &lossGate{testGate: &testGate{}}
	h := newHarness(t, g)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`
	h.fromClient(call)
	h.serverGetsOnly(call)
	h.fromServer(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"Content":[]}}`)
	wantError(t, h.clientGets(), "1", codeInternalError, "withheld")
	h.barrier(1)
	if got := g.reported(); len(got) != 1 || got[0] != "1 answer-withheld" {
		t.Errorf("reported %v, want [1 answer-withheld]", got)
	}
}
