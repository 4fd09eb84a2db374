package proxy

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// mrtrGate decides calls like a testGate, decides the server's requests
// like a serverGate, and "redacts" results like DLP would: every SECRET in
// the result it is shown becomes [R]. It keeps the results it was shown.
type mrtrGate struct {
	*serverGate
	mu    sync.Mutex
	shown []string
}

func (g *mrtrGate) Result(_ context.Context, _ *Call, res json.RawMessage) (json.RawMessage, error) {
	g.mu.Lock()
	g.shown = append(g.shown, string(res))
	g.mu.Unlock()
	if !strings.Contains(string(res), "SECRET") {
		return nil, nil
	}
	return json.RawMessage(strings.ReplaceAll(string(res), "SECRET", "[R]")), nil
}

const (
	mrtrMeta  = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	mrtrAsk   = `{"confirm":{"method":"elicitation/create","params":{"message":"Deploy? SECRET","requestedSchema":{"type":"object"}}}}`
	mrtrState = `"v1:SECRET:\u0041\/x"`
)

// TestRelayInputRequired: an input_required result (MCP 2026-07-28)
// reaches the client with its requestState and inputRequests byte for
// byte, whatever the result checker (DLP) does to the rest of it, which
// it still sees; each embedded request is decided as the server's request
// would be, and one refused withholds the result with a reason the model
// can read, in a result valid for the revision.
func TestRelayInputRequired(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse map[string]string
		result string
		// wantSame: the client gets the server's message byte for byte.
		wantSame bool
		// want are substrings of what the client gets.
		want []string
		// wantShown is what the result checker was shown; "" for nothing.
		wantShown string
	}{
		{
			name:      "nothing to redact",
			result:    `{"resultType":"input_required","inputRequests":` + mrtrAsk + `,"requestState":` + mrtrState + `}`,
			wantSame:  true,
			wantShown: `{"resultType":"input_required"}`,
		},
		{
			name:   "the rest redacted, the state and the requests as they came",
			result: `{"_meta":{"note":"SECRET"},"resultType":"input_required","inputRequests":` + mrtrAsk + `,"requestState":` + mrtrState + `}`,
			want: []string{
				`"_meta":{"note":"[R]"}`,
				`"inputRequests":` + mrtrAsk,
				`"requestState":` + mrtrState,
			},
			wantShown: `{"_meta":{"note":"SECRET"},"resultType":"input_required"}`,
		},
		{
			name:      "only a state",
			result:    `{"requestState":` + mrtrState + `,"resultType":"input_required"}`,
			wantSame:  true,
			wantShown: `{"resultType":"input_required"}`,
		},
		{
			name:   "an embedded request refused",
			refuse: map[string]string{"elicitation/create": "no elicitation here"},
			result: `{"resultType":"input_required","inputRequests":` + mrtrAsk + `,"requestState":` + mrtrState + `}`,
			want:   []string{`"resultType":"complete"`, `"isError":true`, `no elicitation here`, `\"confirm\"`},
		},
		{
			name:   "a requestState that is not a string",
			result: `{"resultType":"input_required","requestState":{"x":1}}`,
			want:   []string{`"resultType":"complete"`, `"isError":true`, reasonResultWithheld},
		},
		{
			name:   "an embedded request without a method",
			result: `{"resultType":"input_required","inputRequests":{"a":{"params":{}}}}`,
			want:   []string{`"isError":true`, reasonResultWithheld},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &mrtrGate{serverGate: &serverGate{testGate: &testGate{}, refuse: tc.refuse}}
			h := newHarness(t, g)
			call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy","arguments":{"env":"prod"},` + mrtrMeta + `}}`
			h.fromClient(call)
			h.serverGetsOnly(call)
			answer := `{"jsonrpc":"2.0","id":1,"result":` + tc.result + `}`
			h.fromServer(answer)
			got := h.clientGets()
			if tc.wantSame && got != answer {
				t.Errorf("client got\n%s\nwant the server's answer\n%s", got, answer)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("client got\n%s\nwant it to hold %s", got, w)
				}
			}
			var shown string
			if len(g.shown) > 0 {
				shown = g.shown[0]
			}
			if shown != tc.wantShown {
				t.Errorf("result checker shown %s, want %s", shown, tc.wantShown)
			}
			h.barrier(2)
		})
	}
}

// TestRelayRetryContinues: a tools/call that retries an input_required
// result with the server's requestState continues it, once: a replay of
// the same state, a state the server never issued, or the state with other
// arguments, does not. Every retry still goes to the gate.
func TestRelayRetryContinues(t *testing.T) {
	g := &mrtrGate{serverGate: &serverGate{testGate: &testGate{}}}
	h := newHarness(t, g)
	call := func(id, args, extra string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"deploy","arguments":` + args + extra + `,` + mrtrMeta + `}}`
	}
	const answers = `,"inputResponses":{"confirm":{"action":"accept","content":{"reason":"ok"}}}`
	first := call("1", `{"env":"prod"}`, "")
	h.fromClient(first)
	h.serverGetsOnly(first)
	// The server's state, escaped its way; the client echoes the value
	// its own way.
	h.fromServer(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":` + mrtrAsk + `,"requestState":"s\u00e9"}}`)
	h.clientGets()
	steps := []struct {
		name, line string
		want       bool
	}{
		{"another state", call("2", `{"env":"prod"}`, answers+`,"requestState":"forged"`), false},
		{"other arguments", call("3", `{"env":"dev"}`, answers+`,"requestState":"sé"`), false},
		{"the retry", call("4", `{"env":"prod"}`, answers+`,"requestState":"sé"`), true},
		{"a replay", call("5", `{"env":"prod"}`, answers+`,"requestState":"sé"`), false},
		{"no retry members", call("6", `{"env":"prod"}`, ""), false},
	}
	for _, s := range steps {
		h.fromClient(s.line)
		h.serverGetsOnly(s.line)
	}
	seen := g.testGate.seen()
	if len(seen) != 1+len(steps) {
		t.Fatalf("gate saw %d calls, want %d", len(seen), 1+len(steps))
	}
	for i, s := range steps {
		c := seen[i+1]
		if c.Continues != s.want {
			t.Errorf("%s: Continues = %v, want %v", s.name, c.Continues, s.want)
		}
		if strings.Contains(s.line, "inputResponses") != (c.InputResponses != nil) {
			t.Errorf("%s: InputResponses = %s", s.name, c.InputResponses)
		}
	}
	if got := string(seen[4].InputResponses); got != `{"confirm":{"action":"accept","content":{"reason":"ok"}}}` {
		t.Errorf("InputResponses = %s", got)
	}
	if got := string(seen[4].RequestState); got != `"sé"` {
		t.Errorf("RequestState = %s", got)
	}
	h.barrier(10)
}

// TestRelayRetryMembersStrict: the retry members are read strictly, as
// the rest of a call: of the wrong type or in another case, the call is
// refused.
func TestRelayRetryMembersStrict(t *testing.T) {
	for _, params := range []string{
		`"inputResponses":[1]`,
		`"requestState":1`,
		`"RequestState":"x"`,
		`"inputresponses":{}`,
	} {
		t.Run(params, func(t *testing.T) {
			g := &testGate{}
			h := newHarness(t, g)
			h.fromClient(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy",` + params + `}}`)
			wantError(t, h.clientGets(), "1", codeInvalidParams, "")
			if len(g.seen()) != 0 {
				t.Error("the gate saw the call")
			}
		})
	}
}

// TestRelayReplacesInputResponses: a gate's inputResponses (the answers
// with a secret redacted) replace the client's, wherever they stand in the
// params and whether or not the arguments are replaced too.
func TestRelayReplacesInputResponses(t *testing.T) {
	for _, tc := range []struct {
		name, params, args, want string
	}{
		{"alone", `{"name":"t","arguments":{"a":1},"inputResponses":{"k":"SECRET"}}`, "", `{"name":"t","arguments":{"a":1},"inputResponses":{"k":"[R]"}}`},
		{"arguments before", `{"name":"t","arguments":{"a":1},"inputResponses":{"k":"SECRET"}}`, `{"a":2}`, `{"name":"t","arguments":{"a":2},"inputResponses":{"k":"[R]"}}`},
		{"arguments after", `{"name":"t","inputResponses":{"k":"SECRET"},"arguments":{"a":1}}`, `{"a":2}`, `{"name":"t","inputResponses":{"k":"[R]"},"arguments":{"a":2}}`},
		{"arguments absent", `{"name":"t","inputResponses":{"k":"SECRET"}}`, `{"a":2}`, `{"name":"t","inputResponses":{"k":"[R]"},"arguments":{"a":2}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &inputsGate{args: json.RawMessage(tc.args)}
			if tc.args == "" {
				g.args = nil
			}
			h := newHarness(t, g)
			h.fromClient(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tc.params + `}`)
			want := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tc.want + `}`
			h.serverGetsOnly(want)
		})
	}
}

// inputsGate forwards every call, with args and the call's
// inputResponses with SECRET redacted.
type inputsGate struct{ args json.RawMessage }

func (g *inputsGate) Call(_ context.Context, c *Call) (Verdict, error) {
	return Verdict{Forward: true, Arguments: g.args, InputResponses: json.RawMessage(strings.ReplaceAll(string(c.InputResponses), "SECRET", "[R]"))}, nil
}
