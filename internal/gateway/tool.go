package gateway

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/schema"
	"github.com/aegis-mcp/aegis/internal/session"
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
	// Set pins fields to fixed values and Clear removes fields, whatever
	// the model wrote, after the model's answer (R12).
	Set   []Assign
	Clear []args.Pointer
	clear [][]string // Clear's tokens
	// flat says every set, clear and identity field is a member of the
	// arguments object itself (one token, no *), each named once, and
	// touched holds their names: the cleared, then the pinned, then the
	// identity fields, in their order.
	flat    bool
	touched []string
	// setBytes is room enough for the pinned members a flat edit appends,
	// beside the identity fields' values.
	setBytes int
	// schemaOpts are the options the tool's pinned schema compiles with.
	schemaOpts *schema.Options

	once       sync.Once
	compileErr error
	lastSchema atomic.Pointer[schemaMemo]
	// Identity fields are server-derived: a model-supplied value at one of
	// them refuses the call, and the value is injected from the session's
	// principal (R12).
	Identity []IdentityField
	// RelativeURL constrains URL arguments to paths on a base URL (R14).
	RelativeURL []RelativeURL
	// Caps limit the calls per turn, per minute and per session (R18).
	Caps session.Limits
	// Untrusted marks a tool whose results taint the session (R19): web
	// fetches, email reads.
	Untrusted bool
	// AllowUnattended lets an ask in an unattended session wait for a
	// person; without it, ask is declined at once there (R19).
	AllowUnattended bool
	// IDs are the fields of this tool's results that yield ids for
	// provenance (R16).
	IDs []IDSource
}

// Assign sets the field at Pointer to Value, a JSON value.
type Assign struct {
	Pointer args.Pointer
	Value   []byte

	toks  []string   // Pointer's tokens
	node  *jnode     // Value, parsed once
	value args.Value // Value as node writes it, decoded once, for the flat edit
}

// IdentityField is a field whose value comes from the session: Source is
// "principal" (the principal's name) or "principal.ATTR" (an attribute of
// the principal in the configuration's principals table).
type IdentityField struct {
	Pointer args.Pointer
	Source  string

	toks []string
}

// compiled parses, once, what t's checks use on every call.
func (t *Tool) compiled() error {
	t.once.Do(func() { t.compileErr = t.compile() })
	return t.compileErr
}

func (t *Tool) compile() error {
	for i := range t.Set {
		a := &t.Set[i]
		n, err := parseJSONValue(a.Value)
		if err != nil {
			return fmt.Errorf("set %s: %w", a.Pointer, err)
		}
		a.node, a.toks = n.share(), pointerTokens(a.Pointer)
		if a.value, err = decodedValue(n); err != nil {
			return fmt.Errorf("set %s: %w", a.Pointer, err)
		}
	}
	for i := range t.Identity {
		t.Identity[i].toks = pointerTokens(t.Identity[i].Pointer)
	}
	t.schemaOpts = &schema.Options{Open: t.Open}
	if len(t.Clamp) > 0 {
		t.schemaOpts.Clamp = make(map[string]schema.Range, len(t.Clamp))
		for p, max := range t.Clamp {
			t.schemaOpts.Clamp[p] = schema.Ceiling(max)
		}
	}
	t.clear = make([][]string, len(t.Clear))
	for i, p := range t.Clear {
		t.clear[i] = pointerTokens(p)
	}
	t.flat, t.touched = true, nil
	touch := func(toks []string) {
		if len(toks) != 1 || toks[0] == "*" {
			t.flat = false
			return
		}
		if !slices.Contains(t.touched, toks[0]) {
			t.touched = append(t.touched, toks[0])
		}
	}
	for _, toks := range t.clear {
		touch(toks)
	}
	for _, a := range t.Set {
		touch(a.toks)
	}
	for _, f := range t.Identity {
		touch(f.toks)
	}
	t.setBytes = 32 * len(t.Identity)
	for _, a := range t.Set {
		if len(a.toks) == 1 {
			t.setBytes += len(a.toks[0]) + len(a.value.Raw()) + 8 // quotes, escapes, colon, comma
		}
	}
	if t.flat && (len(t.Set) > 64 || len(t.touched) != len(t.clear)+len(t.Set)+len(t.Identity)) {
		t.flat = false // one field named twice: the tree edit's order decides
	}
	return nil
}

// touches reports whether aegis sets or clears the member key of the
// arguments object (for a flat tool). A tool touches a few fields: a look
// along a short list beats hashing the key.
func (t *Tool) touches(key string) bool { return slices.Contains(t.touched, key) }

// decodedValue returns the configured value n, written as the tree edit
// writes it, decoded: the flat edit copies it into the shaped arguments.
func decodedValue(n *jnode) (args.Value, error) {
	var d args.Doc
	if err := d.Decode(append(n.appendJSON([]byte(`{"v":`)), '}'), nil); err != nil {
		return args.Value{}, err
	}
	v, _ := d.Root().Lookup("v")
	return v, nil
}

// RelativeURL says that the string at Pointer must be a path relative to
// Base, never a URL that names a host of its own.
type RelativeURL struct {
	Pointer args.Pointer
	Base    *capability.BaseURL
}

// IDSource says that the values Pointer selects in a result of the tool
// are ids of Kind. Pointer is into the tool's result object as the server
// sent it (e.g. /structuredContent/messages/*/id): a value inside a text
// block is free text, which no pointer reaches, and never counts.
type IDSource struct {
	Kind    string
	Pointer args.Pointer
}
