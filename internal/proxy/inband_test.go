package proxy

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/aegis-mcp/aegis/internal/approval"
	"github.com/aegis-mcp/aegis/internal/gateway"
)

// TestTakeAnswer: aegis's round is taken out of a retry, and only
// aegis's: the server's state and answers, and a request with none of
// aegis's, go on as they came.
func TestTakeAnswer(t *testing.T) {
	const st = `"aegis-approval.0123456789abcdef.MAC"`
	for _, tt := range []struct {
		name, in, out string
		ans           *gateway.Answer // nil: the line goes as it came
	}{
		{"no state", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}`, "", nil},
		{"the server's state",
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","inputResponses":{"aegis-approval":{"action":"accept"}},"requestState":"v1:aegis-approval.x"}}`, "", nil},
		{"state not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","requestState":["aegis-approval."]}}`, "", nil},
		{"accept",
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"inputResponses":{"aegis-approval":{"action":"accept","content":{"scope":"session"}}},"requestState":` + st + `}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}`,
			&gateway.Answer{State: "aegis-approval.0123456789abcdef.MAC", Answered: true, Approve: true, Scope: approval.ScopeSession}},
		{"accept without scope is this call",
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","inputResponses":{"aegis-approval":{"action":"accept"}},"requestState":` + st + `}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}`,
			&gateway.Answer{State: "aegis-approval.0123456789abcdef.MAC", Answered: true, Approve: true, Scope: approval.ScopeCall}},
		{"decline",
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","inputResponses":{"aegis-approval":{"action":"decline"}},"requestState":` + st + `}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}`,
			&gateway.Answer{State: "aegis-approval.0123456789abcdef.MAC", Answered: true}},
		{"cancel answers nothing",
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","inputResponses":{"aegis-approval":{"action":"cancel"}},"requestState":` + st + `}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}`,
			&gateway.Answer{State: "aegis-approval.0123456789abcdef.MAC"}},
		{"a scope not offered answers nothing",
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","inputResponses":{"aegis-approval":{"action":"accept","content":{"scope":"forever"}}},"requestState":` + st + `}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}`,
			&gateway.Answer{State: "aegis-approval.0123456789abcdef.MAC"}},
		{"the server's answers stay",
			`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p","inputResponses":{"confirm":{"action":"accept","content":{"r":"x"}},"aegis-approval":{"action":"accept"}},"requestState":` + st + `,"_meta":{"k":1}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p","inputResponses":{"confirm":{"action":"accept","content":{"r":"x"}}},"_meta":{"k":1}}}`,
			&gateway.Answer{State: "aegis-approval.0123456789abcdef.MAC", Answered: true, Approve: true, Scope: approval.ScopeCall}},
		{"an escaped state is read unescaped",
			`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t","requestState":"\u0061egis-approval.0123456789abcdef.MAC"}}`,
			`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t"}}`,
			&gateway.Answer{State: "aegis-approval.0123456789abcdef.MAC"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parseMessage([]byte(tt.in), 64)
			if err != nil {
				t.Fatal(err)
			}
			out, ans := takeAnswer([]byte(tt.in), m)
			if tt.ans == nil {
				if ans != nil || string(out) != tt.in {
					t.Errorf("got %s, %+v; want the line as it came", out, ans)
				}
				return
			}
			if ans == nil || *ans != *tt.ans {
				t.Errorf("answer %+v, want %+v", ans, tt.ans)
			}
			if string(out) != tt.out {
				t.Errorf("line\n%s\nwant\n%s", out, tt.out)
			}
		})
	}
}

// TestAnswersInBand: only a 2026-07-28 request whose client declared
// elicitation is asked in its round trips.
func TestAnswersInBand(t *testing.T) {
	for _, tt := range []struct {
		meta string
		want bool
	}{
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`, true},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`, true},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`, false},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":true}}`, false},
		{`{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`, false},
		{``, false},
	} {
		if got := answersInBand([]byte(tt.meta)); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.meta, got, tt.want)
		}
	}
}

// FuzzTakeAnswer: whatever the client sends, what goes on is a valid
// message with no state of aegis's in it and no answer under aegis's key,
// and a line without aegis's state goes as it came.
func FuzzTakeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","inputResponses":{"aegis-approval":{"action":"accept"},"x":1},"requestState":"aegis-approval.a.b"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","requestState":"aegis-approval."}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","requestState":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := parseMessage(line, 64)
		if err != nil || m.kind != kindRequest {
			return
		}
		out, ans := takeAnswer(line, m)
		if ans == nil {
			if !bytes.Equal(out, line) {
				t.Fatalf("changed without an answer: %s", out)
			}
			return
		}
		m2, err := parseMessage(out, 64)
		if err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		var p struct {
			RequestState   *string                    `json:"requestState"`
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
		}
		if err := json.Unmarshal(m2.params.of(out), &p); err != nil {
			t.Fatalf("params %s: %v", m2.params.of(out), err)
		}
		if p.RequestState != nil {
			t.Fatalf("a state went on: %s", out)
		}
		if _, ok := p.InputResponses[gateway.InputKey]; ok {
			t.Fatalf("aegis's answer went on: %s", out)
		}
		if p.InputResponses != nil && len(p.InputResponses) == 0 {
			t.Fatalf("an empty inputResponses went on: %s", out)
		}
	})
}
