package proxy

import (
	"context"
	"testing"
)

// scribblingGate writes over the Call it was given, in place and past each
// field's end (what it was given is its own), and then forwards the call,
// or refuses it if refuse is set.
type scribblingGate struct{ refuse bool }

func (g scribblingGate) Call(_ context.Context, c *Call) (Verdict, error) {
	for _, b := range [][]byte{c.ID, c.Arguments, c.Meta} {
		for i := range b {
			b[i] = '#'
		}
		_ = append(b, "########"...)
	}
	return Verdict{Forward: !g.refuse, Reason: "no"}, nil
}

// TestRelayGateOwnsItsCall holds parseCallInto's one allocation: a gate that
// changes the id, arguments and _meta it was given, in place or by
// appending, changes neither the message forwarded nor the id the answer is
// routed by, nor another field.
func TestRelayGateOwnsItsCall(t *testing.T) {
	tests := []struct {
		name, call string
	}{
		{"all fields", `{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"x","arguments":{"a":[1,2]},"_meta":{"progressToken":"p"}}}`},
		{"no arguments", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`},
		{"meta first", `{"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{},"name":"x","arguments":{}},"id":8}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, scribblingGate{})
			h.fromClient(tt.call)
			h.serverGetsOnly(tt.call)
			m, err := parseMessage([]byte(tt.call), 64)
			if err != nil {
				t.Fatal(err)
			}
			result := `{"jsonrpc":"2.0","id":` + string(m.id) + `,"result":{"content":[]}}`
			h.fromServer(result)
			h.clientGetsOnly(result)

			// Refused: the answer goes to the id the client sent.
			h = newHarness(t, scribblingGate{refuse: true})
			h.fromClient(tt.call)
			h.clientGetsOnly(string(toolError(&request{id: m.id}, "no")[:len(toolError(&request{id: m.id}, "no"))-1]))
		})
	}
}

// TestParseCallIntoCopies holds the copies parseCallInto makes: equal to
// the message's parts, and each capped at its own end.
func TestParseCallIntoCopies(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"x","arguments":{"a":1},"_meta":{"k":"v"}}}` + "\n")
	m, err := parseMessage(line, 64)
	if err != nil {
		t.Fatal(err)
	}
	var c Call
	msg, id, _, _, err := parseCallInto(&c, line, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		got, want []byte
	}{
		{"msg", msg, line},
		{"relay's id", id, []byte(`"c-1"`)},
		{"id", c.ID, []byte(`"c-1"`)},
		{"arguments", c.Arguments, []byte(`{"a":1}`)},
		{"meta", c.Meta, []byte(`{"k":"v"}`)},
	} {
		if string(tt.got) != string(tt.want) {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
		if cap(tt.got) != len(tt.got) {
			t.Errorf("%s has room past its end (len %d, cap %d)", tt.name, len(tt.got), cap(tt.got))
		}
		if &tt.got[0] == &line[0] {
			t.Errorf("%s is not a copy", tt.name)
		}
	}
}
