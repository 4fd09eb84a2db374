package gateway

import (
	"strconv"
	"strings"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/schema"
	"github.com/aegis-mcp/aegis/internal/shape"
)

// defaults runs after the closed schema (issue 15, "every default"): a bound
// argument (or a URL argument confined to a base URL) the model left out is one the server fills in with its schema's
// default, so the default is written into the arguments, as the server
// would read them, before the capabilities are derived. What aegis decides
// on is then what it forwards, whether or not the server fills defaults in
// the way aegis reads the schema. Only a bound argument is filled, and only
// at the outermost member the model left out (an argument under an object
// the model did write is that object's business). Two different defaults
// for one argument refuse the call. When anything was filled, sc.w.Doc
// holds the new arguments, which it returns; otherwise it returns cur.
func (e *Engine) defaults(r *route, sch *schema.Schema, sc *scratch, cur []byte) ([]byte, error) {
	if sch == nil {
		return cur, nil
	}
	// The arguments capabilities are derived from: the binding's, then the
	// URL arguments confined to a base URL (R14).
	nb, nr := 0, 0
	if r.b != nil {
		nb = len(r.b.Args)
	}
	rel := r.fields()
	if rel != nil {
		nr = len(rel.RelativeURL)
	}
	var set []shape.Assign
	root := sc.w.Doc.Root()
	var absent []string
	for k := range nb + nr {
		var ptr string
		if k < nb {
			ptr = r.b.Args[k].Pointer.String()
		} else {
			ptr = rel.RelativeURL[k-nb].Pointer.String()
		}
		absent = outermostAbsent(absent[:0], root, ptr)
		for _, at := range absent {
			// The schema's pointer names array elements "*".
			def, ok, err := sch.Default(schemaPointer(at))
			if err != nil {
				return nil, refusal(RuleSchema, "argument %s is left out, and %v", at, err)
			}
			if !ok || string(def) == "null" {
				// A null default is what leaving it out means: nothing.
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

// outermostAbsent appends to dst the pointers (as strings) of the
// outermost members on pointer p's way that root does not hold: where a
// server would put a default. Through a "*" it follows every element that
// is there (a server fills a default in each element of a list), so an
// element's absent member is named by its index. A way through a value
// that is not an object or array there ends: nothing to fill.
func outermostAbsent(dst []string, root args.Value, p string) []string {
	if p == "" {
		return dst
	}
	return absentFrom(dst, root, p, 0, "")
}

func absentFrom(dst []string, v args.Value, p string, at int, prefix string) []string {
	if at >= len(p) {
		return dst
	}
	next := strings.IndexByte(p[at+1:], '/')
	if next < 0 {
		next = len(p)
	} else {
		next += at + 1
	}
	raw := p[at+1 : next]
	if raw == "*" {
		if v.Kind() != args.Array {
			return dst
		}
		for i := range v.Len() {
			dst = absentFrom(dst, v.Index(i), p, next, prefix+"/"+strconv.Itoa(i))
		}
		return dst
	}
	if v.Kind() != args.Object {
		return dst
	}
	tok := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
	m, ok := v.Lookup(tok)
	if !ok {
		return append(dst, prefix+"/"+raw)
	}
	return absentFrom(dst, m, p, next, prefix+"/"+raw)
}

// schemaPointer is at, a pointer into the arguments, with its array
// indexes written "*", as the schema names the members of elements.
func schemaPointer(at string) string {
	toks := strings.Split(at, "/")
	for i, t := range toks {
		if i > 0 && t != "" && strings.Trim(t, "0123456789") == "" {
			toks[i] = "*"
		}
	}
	return strings.Join(toks, "/")
}

func assigns(set []shape.Assign, at string) bool {
	for _, a := range set {
		if a.Pointer.String() == at {
			return true
		}
	}
	return false
}
