package gateway

import (
	"sync"
	"sync/atomic"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/schema"
	"github.com/aegis-mcp/aegis/internal/session"
	"github.com/aegis-mcp/aegis/internal/shape"
)

// Tool is the per-tool configuration of the checks (DESIGN.md R11–R19).
// The zero value checks nothing beyond the policy.
type Tool struct {
	// Clamp maps a JSON Pointer to a ceiling: a number above it is lowered
	// to it before the schema is checked (R11).
	Clamp map[string]float64
	// Open names argument objects (JSON Pointers; "" is the arguments
	// object itself) left as the server's schema declares them rather than
	// closed: for a free-form map such as Python's dict[str, Any] (R11).
	Open []string
	// Fields are what aegis writes into the arguments whatever the model
	// wrote — pinned, cleared and identity fields (R12) — and where URL
	// arguments may point (R14).
	shape.Fields
	// schemaOpts are the options the tool's pinned schema compiles with.
	schemaOpts *schema.Options

	once       sync.Once
	compileErr error
	lastSchema atomic.Pointer[schemaMemo]
	// Caps limit the calls per turn, per minute and per session (R18).
	Caps session.Limits
	// Untrusted marks a tool whose results taint the session (R19): web
	// fetches, email reads.
	Untrusted bool
	// AllowUnattended lets an ask in an unattended session wait for a
	// person; without it, ask is declined at once there (R19).
	AllowUnattended bool
	// RunUnbound runs the tool's calls that the policy lets through in the
	// server's unbound twin (R29): a second instance of the server with no
	// file or network authority at all, so that whatever the arguments
	// say, the call can compute and answer but reach nothing. Where no
	// twin can be started the calls are refused.
	RunUnbound bool
	// IDs are the fields of this tool's results that yield ids for
	// provenance (R16).
	IDs []IDSource
}

// IDSource says that the values Pointer selects in a result of the tool
// are ids of Kind. Pointer is into the tool's result object as the server
// sent it (e.g. /structuredContent/messages/*/id): a value inside a text
// block is free text, which no pointer reaches, and never counts.
type IDSource struct {
	Kind    string
	Pointer args.Pointer
}

// compiled parses, once, what t's checks use on every call.
func (t *Tool) compiled() error {
	t.once.Do(func() { t.compileErr = t.compile() })
	return t.compileErr
}

func (t *Tool) compile() error {
	if err := t.Fields.Compile(); err != nil {
		return err
	}
	t.schemaOpts = &schema.Options{Open: t.Open}
	if len(t.Clamp) > 0 {
		t.schemaOpts.Clamp = make(map[string]schema.Range, len(t.Clamp))
		for p, max := range t.Clamp {
			t.schemaOpts.Clamp[p] = schema.Ceiling(max)
		}
	}
	return nil
}
