package proxy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// answerGate lets every request of the server through and checks the
// client's answers to them: SECRET is redacted, DENY withholds the answer.
type answerGate struct {
	*serverGate
	methods []string
}

func (g *answerGate) Answer(_ context.Context, method string, result json.RawMessage) (json.RawMessage, error) {
	g.methods = append(g.methods, method)
	switch s := string(result); {
	case strings.Contains(s, "DENY"):
		return nil, &Withheld{Reason: "the answer holds a secret"}
	case strings.Contains(s, "SECRET"):
		return json.RawMessage(strings.ReplaceAll(s, "SECRET", "[R]")), nil
	}
	return nil, nil
}

// TestRelayChecksAnswers: the client's answer to a request of the server
// that the gate let through is the gate's to check before the server gets
// it: relayed byte for byte, replaced, or withheld (the server gets an
// error under the request's id). An answer to nothing the server asked,
// or a second answer, is relayed as it is, as without aegis; an answer the
// gate checks may not hide in a batch.
func TestRelayChecksAnswers(t *testing.T) {
	ask := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"elicitation/create","params":{"message":"why?","requestedSchema":{"type":"object"}}}`
	}
	answer := func(id, reason string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"action":"accept","content":{"reason":"` + reason + `"}}}`
	}
	for _, tc := range []struct {
		name, id, answerID, reason string
		// want is what the server gets.
		want string
	}{
		{"as it came", `"s1"`, `"s1"`, "ok", answer(`"s1"`, "ok")},
		{"redacted", `7`, `7`, "a SECRET", answer(`7`, "a [R]")},
		{"withheld", `"s2"`, `"s2"`, "DENY", `{"jsonrpc":"2.0","id":"s2","error":{"code":-32001,"message":"aegis withheld the client's answer: the answer holds a secret"}}`},
		{"an answer to nothing asked", `"s3"`, `"other"`, "DENY SECRET", answer(`"other"`, "DENY SECRET")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &answerGate{serverGate: &serverGate{testGate: &testGate{}}}
			h := newHarness(t, g)
			h.fromServer(ask(tc.id))
			h.clientGetsOnly(ask(tc.id))
			h.fromClient(answer(tc.answerID, tc.reason))
			h.serverGetsOnly(tc.want)
			if tc.answerID == tc.id {
				// Answered once: a second answer is not checked.
				h.fromClient(answer(tc.id, "SECRET"))
				h.serverGetsOnly(answer(tc.id, "SECRET"))
			}
		})
	}

	t.Run("in a batch", func(t *testing.T) {
		g := &answerGate{serverGate: &serverGate{testGate: &testGate{}}}
		h := newHarness(t, g)
		h.fromServer(ask(`"s1"`))
		h.clientGetsOnly(ask(`"s1"`))
		h.fromClient(`[` + answer(`"s1"`, "SECRET") + `,` + ping(1) + `]`)
		got := h.clientGets()
		if !strings.Contains(got, "may not hold an answer") {
			t.Fatalf("client got %s, want the batch refused", got)
		}
		h.barrier(2)
	})
}
