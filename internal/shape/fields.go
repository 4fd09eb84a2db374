package shape

import (
	"fmt"
	"slices"
	"sync"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
)

// Fields is what aegis writes into one tool's arguments whatever the model
// wrote (R12), and where its URL arguments may point (R14): fields pinned
// to a value, fields cleared, identity fields injected from the session,
// and URL arguments confined to paths on a base URL. The zero value
// rewrites nothing.
type Fields struct {
	// Set pins fields to fixed values and Clear removes fields, whatever
	// the model wrote, after the model's answer (R12).
	Set   []Assign
	Clear []args.Pointer
	// Identity fields are server-derived: a model-supplied value at one of
	// them refuses the call, and the value is injected from the session's
	// principal (R12).
	Identity []IdentityField
	// RelativeURL constrains URL arguments to paths on a base URL (R14).
	RelativeURL []RelativeURL

	once       sync.Once
	compileErr error
	clear      [][]string // Clear's tokens
	// flat says every set, clear and identity field is a member of the
	// arguments object itself (one token, no *), each named once, and
	// touched holds their names: the cleared, then the pinned, then the
	// identity fields, in their order.
	flat    bool
	touched []string
	// setBytes is room enough for the pinned members a flat edit appends,
	// beside the identity fields' values.
	setBytes int
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

// RelativeURL says that the string at Pointer must be a path relative to
// Base, never a URL that names a host of its own.
type RelativeURL struct {
	Pointer args.Pointer
	Base    *capability.BaseURL
}

// Compile parses, once, what the rewrite uses on every call: the pinned
// values. A configuration is compiled when it is loaded, so that a bad
// value is an error there rather than a refusal of every call.
func (t *Fields) Compile() error {
	t.once.Do(func() { t.compileErr = t.compile() })
	return t.compileErr
}

// Edits reports whether t rewrites the arguments: pinned, cleared or
// identity fields.
func (t *Fields) Edits() bool { return len(t.Set)+len(t.Clear)+len(t.Identity) > 0 }

func (t *Fields) compile() error {
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
func (t *Fields) touches(key string) bool { return slices.Contains(t.touched, key) }

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
