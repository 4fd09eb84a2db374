package proxy

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/args"
)

// TestRelayResultTypeForRevision: a result aegis writes itself (a refusal)
// carries "resultType":"complete" when the call names protocol revision
// 2026-07-28 or later in its _meta, as that revision requires of every
// result (issue 15, point 10); for an earlier revision, or none, it is
// written as before.
func TestRelayResultTypeForRevision(t *testing.T) {
	for _, tc := range []struct {
		name, meta string
		want       bool
	}{
		{"no _meta", ``, false},
		{"2026-07-28", `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, true},
		{"a later revision", `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-15"}`, true},
		{"2025-11-25", `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}`, false},
		{"a version that is not a date", `,"_meta":{"io.modelcontextprotocol/protocolVersion":"draft"}`, false},
		{"not a string", `,"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}`, false},
		{"other _meta", `,"_meta":{"progressToken":1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, &testGate{deny: map[string]string{"x": "no"}})
			h.fromClient(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}` + tc.meta + `}}`)
			got := h.clientGets()
			if strings.Contains(got, `"resultType":"complete"`) != tc.want {
				t.Fatalf("refusal %s: resultType present = %v, want %v", got, !tc.want, tc.want)
			}
			if !strings.Contains(got, `"isError":true`) {
				t.Fatalf("not a refusal: %s", got)
			}
			h.barrier(1)
		})
	}
}

// FuzzTypedResults: no _meta makes typedResults panic, and it says yes
// exactly for a revision written as a date no earlier than 2026-07-28, as
// encoding/json and a regular expression read the _meta.
func FuzzTypedResults(f *testing.F) {
	f.Add([]byte(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`))
	f.Add([]byte(`{"io.modelcontextprotocol/protocolVersion":"2025-11-25","x":[1,{"y":"\u0041"}]}`))
	f.Add([]byte(`{"io.modelcontextprotocol\/protocolVersion":"2026-12-01"}`))
	// A later revision with no "20" in it (the property checked once
	// said a yes needed one).
	f.Add([]byte(`{"io.modelcontextprotocol/protocolVersion":"3025-11-25","x":[1,{"y":"\u0041"}]}`))
	f.Add([]byte(`{"io.modelcontextprotocol/protocolVersion":"2026-07-2\u0038"}`))
	date := regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	f.Fuzz(func(t *testing.T, meta []byte) {
		if _, err := args.Validate(meta, 64); err != nil {
			return // the relay passes on only _meta it validated
		}
		var m map[string]json.RawMessage
		var rev string
		want := json.Unmarshal(meta, &m) == nil && json.Unmarshal(m[metaProtocolVersion], &rev) == nil &&
			date.MatchString(rev) && rev >= "2026-07-28"
		if got := typedResults(meta); got != want {
			t.Fatalf("typedResults(%s) = %v, want %v", meta, got, want)
		}
	})
}

// TestRelayOwnAnswersPerRevision: every answer the relay writes itself to
// a tools/call (a refusal, a failed gate, a withheld result, a withheld
// input_required result, a call timeout) is a tool result valid for the
// call's revision: with "resultType":"complete" at 2026-07-28, whose
// client refuses a result without it, and without it before, as the
// older revisions' schemas have it.
func TestRelayOwnAnswersPerRevision(t *testing.T) {
	type path struct {
		name string
		gate Gate
		// answer is what the server answers the call with; "" for
		// nothing (the call is refused, or times out).
		answer  string
		timeout bool
	}
	withhold := func(*Call, json.RawMessage) (json.RawMessage, error) { return nil, &Withheld{Reason: "rule x"} }
	paths := []path{
		{name: "refused", gate: &testGate{deny: map[string]string{"t": "rule x"}}},
		{name: "the gate failed", gate: &testGate{err: errors.New("boom")}},
		{name: "result withheld", gate: &checkingGate{testGate: &testGate{}, result: withhold}, answer: `{"content":[]}`},
		{name: "input_required withheld", gate: &checkingGate{testGate: &testGate{}, result: withhold}, answer: `{"resultType":"input_required","requestState":"s"}`},
		{name: "an embedded request refused", gate: &mrtrGate{serverGate: &serverGate{testGate: &testGate{}, refuse: map[string]string{"elicitation/create": "no"}}}, answer: `{"resultType":"input_required","inputRequests":` + mrtrAsk + `}`},
		{name: "timed out", gate: &testGate{}, timeout: true},
	}
	for _, rev := range []string{"2026-07-28", "2025-11-25", ""} {
		for _, p := range paths {
			t.Run(rev+" "+p.name, func(t *testing.T) {
				timers := make(fakeTimers, 10)
				o := options{maxMsg: 1 << 20, maxDepth: 64, maxReqs: 100}
				if p.timeout {
					o.callTimeout, o.afterFunc = time.Second, timers.after
				}
				h := newHarnessOpts(t, p.gate, o)
				meta := ""
				if rev != "" {
					meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"` + rev + `"}`
				}
				call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}` + meta + `}}`
				h.fromClient(call)
				switch {
				case p.answer != "":
					h.serverGetsOnly(call)
					h.fromServer(`{"jsonrpc":"2.0","id":1,"result":` + p.answer + `}`)
				case p.timeout:
					h.serverGetsOnly(call)
					timers.next(t).f()
					h.serverGets() // the cancellation
				}
				got := decode(t, h.clientGets())
				res, ok := got["result"].(map[string]any)
				if !ok || res["isError"] != true {
					t.Fatalf("client got %v, want a tool error", got)
				}
				typed := rev >= "2026-07-28"
				if rt, has := res["resultType"]; has != typed || typed && rt != "complete" {
					t.Errorf("resultType %v (present %v) at revision %q", rt, has, rev)
				}
			})
		}
	}
}
