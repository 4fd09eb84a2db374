package shape

import (
	"fmt"
	"strings"

	"github.com/aegis-mcp/aegis/internal/args"
)

// The checks of a rewrite that can refuse a call, as [Refusal.Check] names
// them; the gateway records a refusal under the rule "aegis:" + Check.
const (
	CheckIdentity    = "identity"     // a model-supplied identity field, or a principal without its value
	CheckField       = "shape"        // a pinned or cleared field the model reached around, or arguments that cannot be rewritten
	CheckRelativeURL = "relative-url" // a URL argument that leaves its base
)

// A Refusal is a call the rewrite refuses: Check names the check.
type Refusal struct {
	Check string
	Err   error
}

func (r *Refusal) Error() string { return r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

func refusal(check string, format string, a ...any) error {
	return &Refusal{Check: check, Err: fmt.Errorf(format, a...)}
}

// Work is the storage one rewrite uses, reused call after call by one
// goroutine at a time: the arguments' document and a spare one, the builder
// of the flat edit and its output buffer.
type Work struct {
	// Doc holds the arguments as they stand: Apply reads it and leaves the
	// rewritten arguments in it. Spare is another document, not Doc.
	Doc, Spare *args.Doc
	B          args.Builder
	// Out is the buffer the flat edit writes into; Apply keeps it grown.
	// The text Apply returns may live in it.
	Out []byte
	// Limits are the argument limits a rewritten document is decoded
	// under; nil means args' defaults.
	Limits *args.Limits
}

// Principal is who a call acts for, the source of its identity fields: a
// field's source "principal" is Name, and "principal.ATTR" is Attrs[ATTR].
type Principal struct {
	Name  string
	Attrs map[string]string
}

// value returns the value of an identity source for p.
func (p *Principal) value(source string) (string, bool) {
	if p == nil || p.Name == "" {
		return "", false
	}
	if source == "principal" {
		return p.Name, true
	}
	attr, ok := strings.CutPrefix(source, "principal.")
	if !ok {
		return "", false
	}
	v, ok := p.Attrs[attr]
	return v, ok && v != ""
}

func (p *Principal) name() string {
	if p == nil {
		return ""
	}
	return p.Name
}

// Apply rewrites the arguments in w.Doc, whose text is cur (DESIGN.md
// pipeline step 4): a model-supplied identity field refuses the call;
// template markers in model-written strings are neutralised when templates
// is set; pinned fields are set, cleared fields removed and identity fields
// injected from p. When anything changed, w.Doc holds the rewritten
// arguments, which it returns; otherwise it returns cur. t may be nil: no
// fields. An error is a [*Refusal].
func (t *Fields) Apply(w *Work, cur []byte, templates *Syntax, p *Principal) ([]byte, error) {
	out := cur
	if t == nil && templates == nil {
		return out, nil
	}
	doc := w.Doc
	root := doc.Root()
	edits := t != nil && t.Edits()
	var plan flatPlan // for a flat tool: the members the edit drops
	if edits {
		// Compiled before the case check reads t.flat and t.touched, which
		// the compile writes (under its sync.Once).
		if err := t.Compile(); err != nil {
			return nil, refusal(CheckField, "%v", err)
		}
		var err error
		if plan, err = t.caseChecks(root); err != nil {
			return nil, err
		}
	}
	var tree *jnode
	if templates != nil {
		rewritten, _, err := templates.NeutraliseJSON(root)
		if err != nil {
			return nil, refusal(CheckField, "neutralising template markers: %v", err)
		}
		if rewritten != nil {
			out = rewritten
			if err := doc.Decode(out, w.Limits); err != nil {
				return nil, refusal(CheckField, "the neutralised arguments: %v", err)
			}
			root = doc.Root()
			plan = flatPlan{} // of the members before the rewrite
		}
	}
	if !edits {
		return out, nil
	}
	if t.flat && root.Kind() == args.Object {
		return t.applyFlat(w, p, root, len(out), plan)
	}
	tree = treeOf(root)
	for _, toks := range t.clear {
		tree.remove(toks)
	}
	for i := range t.Set {
		a := &t.Set[i]
		if err := tree.set(a.toks, a.node); err != nil {
			return nil, refusal(CheckField, "pinned field %s: %v", a.Pointer, err)
		}
	}
	for _, f := range t.Identity {
		v, ok := p.value(f.Source)
		if !ok {
			return nil, refusal(CheckIdentity, "argument %s: the principal %q has no %s in the configuration", f.Pointer, p.name(), f.Source)
		}
		val := &jnode{kind: args.String, raw: string(args.AppendString(nil, strings.ToValidUTF8(v, "\uFFFD")))}
		if err := tree.set(f.toks, val); err != nil {
			return nil, refusal(CheckIdentity, "argument %s: %v", f.Pointer, err)
		}
	}
	out = tree.appendJSON(make([]byte, 0, len(out)+64))
	if err := doc.Decode(out, w.Limits); err != nil {
		return nil, refusal(CheckField, "the shaped arguments: %v", err)
	}
	return out, nil
}

// caseChecks refuses arguments that supply an identity field, or a key
// that differs from a pinned or cleared field's only in case: such a key
// would survive the edit, and a server matching keys without case (Go's
// encoding/json, ASP.NET) would read it as that field. t must be compiled.
// For a flat tool it also returns the members the edit drops.
func (t *Fields) caseChecks(root args.Value) (flatPlan, error) {
	if plan, err := t.caseCheckFlat(root); plan.known || err != nil {
		return plan, err
	}
	for _, f := range t.Identity {
		found := false
		f.Pointer.Select(root, func(args.Value, args.Loc) { found = true })
		if _, variant := f.Pointer.CaseVariant(root); found || variant {
			return flatPlan{}, refusal(CheckIdentity, "argument %s is set by aegis from the session; the call may not supply it", f.Pointer)
		}
	}
	for i := range t.Set {
		if key, ok := t.Set[i].Pointer.CaseVariant(root); ok {
			return flatPlan{}, refusal(CheckField, "argument %q differs from the pinned field %s only in case", key, t.Set[i].Pointer)
		}
	}
	for _, p := range t.Clear {
		if key, ok := p.CaseVariant(root); ok {
			return flatPlan{}, refusal(CheckField, "argument %q differs from the cleared field %s only in case", key, p)
		}
	}
	return flatPlan{}, nil
}
