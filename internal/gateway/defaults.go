package gateway

import (
	"strings"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/schema"
	"github.com/aegis-mcp/aegis/internal/shape"
)

// defaults runs after the closed schema (issue 15, "every default"): a bound
// argument the model left out is one the server fills in with its schema's
// default, so the default is written into the arguments, as the server
// would read them, before the capabilities are derived. What aegis decides
// on is then what it forwards, whether or not the server fills defaults in
// the way aegis reads the schema. Only a bound argument is filled, and only
// at the outermost member the model left out (an argument under an object
// the model did write is that object's business). Two different defaults
// for one argument refuse the call. When anything was filled, sc.w.Doc
// holds the new arguments, which it returns; otherwise it returns cur.
func (e *Engine) defaults(b *binding.Binding, sch *schema.Schema, sc *scratch, cur []byte) ([]byte, error) {
	if b == nil || sch == nil {
		return cur, nil
	}
	var set []shape.Assign
	root := sc.w.Doc.Root()
	for i := range b.Args {
		at, ok := outermostAbsent(root, b.Args[i].Pointer)
		if !ok {
			continue
		}
		def, ok, err := sch.Default(at)
		if err != nil {
			return nil, refusal(RuleSchema, "argument %s is left out, and %v", at, err)
		}
		if !ok {
			continue
		}
		p, err := args.ParsePointer(at)
		if err != nil {
			return nil, refusal(RuleSchema, "argument %s: %v", at, err)
		}
		if !assigns(set, at) {
			set = append(set, shape.Assign{Pointer: p, Value: def})
		}
	}
	if len(set) == 0 {
		return cur, nil
	}
	// A rare call: its own Fields and buffer, so that nothing of the shaped
	// arguments (which cur may be) is written over.
	f := &shape.Fields{Set: set}
	if err := f.Compile(); err != nil {
		return nil, refusal(RuleSchema, "a default of the tool's schema: %v", err)
	}
	w := sc.w
	w.Out, w.Limits = nil, &e.limits
	out, err := f.Apply(&w, cur, nil, nil)
	if err != nil {
		return nil, refusal(RuleSchema, "filling in a default of the tool's schema: %v", err)
	}
	sc.w.Doc, sc.w.Spare = w.Doc, w.Spare
	return out, nil
}

// outermostAbsent returns the pointer (as a string) of the outermost member
// on p's way that root does not hold, up to p's first "*": where a server
// would put a default. ok is false when every member on the way is present,
// or the way passes through a value that is not an object.
func outermostAbsent(root args.Value, p args.Pointer) (string, bool) {
	s := p.String()
	if s == "" {
		return "", false
	}
	v := root
	end := 0
	for end < len(s) {
		next := strings.IndexByte(s[end+1:], '/')
		if next < 0 {
			next = len(s)
		} else {
			next += end + 1
		}
		tok := strings.ReplaceAll(strings.ReplaceAll(s[end+1:next], "~1", "/"), "~0", "~")
		if tok == "*" || v.Kind() != args.Object {
			return "", false
		}
		m, ok := v.Lookup(tok)
		if !ok {
			return s[:next], true
		}
		v, end = m, next
	}
	return "", false
}

func assigns(set []shape.Assign, at string) bool {
	for _, a := range set {
		if a.Pointer.String() == at {
			return true
		}
	}
	return false
}
