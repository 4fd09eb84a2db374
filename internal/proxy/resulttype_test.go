package proxy

import (
	"strings"
	"testing"

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

// FuzzTypedResults: no _meta makes typedResults panic, and it says yes only
// for a revision written as a date no earlier than 2026-07-28.
func FuzzTypedResults(f *testing.F) {
	f.Add([]byte(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`))
	f.Add([]byte(`{"io.modelcontextprotocol/protocolVersion":"2025-11-25","x":[1,{"y":"\u0041"}]}`))
	f.Add([]byte(`{"io.modelcontextprotocol\/protocolVersion":"2026-12-01"}`))
	f.Fuzz(func(t *testing.T, meta []byte) {
		if _, err := args.Validate(meta, 64); err != nil {
			return // the relay passes on only _meta it validated
		}
		if typedResults(meta) && !strings.Contains(string(meta), "20") {
			t.Fatalf("typedResults(%s) with no revision in it", meta)
		}
	})
}
