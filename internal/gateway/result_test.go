package gateway

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/session"
)

// TestResultIDsOutliveTheResult holds Engine.Result's pooled document: the
// ids it records for provenance must stay what the server sent after the
// caller reuses the result's buffer and later results are read into the
// same document, escaped ids (which the document unescapes into storage of
// its own) included.
func TestResultIDsOutliveTheResult(t *testing.T) {
	p, err := args.ParsePointer("/items/*/id")
	if err != nil {
		t.Fatal(err)
	}
	sessions := session.New(nil)
	e := newEngine(t, "")
	e.sessions = sessions
	e.servers["misc"].Tools = map[string]*Tool{"list": {IDs: []IDSource{{Kind: "doc", Pointer: p}}}}
	tests := []struct {
		name, id, json string
	}{
		{"plain", "doc-1", `"doc-1"`},
		{"escaped", "doc\n2\u00e9", `"doc\n2\u00e9"`},
		{"number", "12345", `12345`},
	}
	buf := make([]byte, 0, 256)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf = fmt.Appendf(buf[:0], `{"items":[{"id":%s}],"content":[]}`, tt.json)
			if _, _, err := e.Result(&ResultEvent{Session: "s", Server: "misc", Tool: "list", Result: buf}); err != nil {
				t.Fatal(err)
			}
			// The caller reuses its buffer, and another result is read
			// into the pooled document.
			copy(buf, bytes.Repeat([]byte{'x'}, len(buf)))
			other := []byte(`{"items":[{"id":"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\tzz"}]}`)
			if _, _, err := e.Result(&ResultEvent{Session: "s2", Server: "misc", Tool: "list", Result: other}); err != nil {
				t.Fatal(err)
			}
			if ok, reason := sessions.Check("s", "doc", []string{tt.id}); !ok {
				t.Errorf("id %q is not known after its result's buffer was reused: %s", tt.id, reason)
			}
		})
	}
}
