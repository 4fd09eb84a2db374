package gateway

import (
	"strings"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
)

// provenance checks every id capability against the ids the server
// returned in this session (R16): every candidate of every kind must be a
// member; an empty list where ids belong fails the call.
func (e *Engine) provenance(c *Call, b *binding.Binding, caps []capability.Capability, root args.Value) error {
	var kinds []string
	for i := range b.Args {
		a := &b.Args[i]
		if a.Kind != capability.ID {
			continue
		}
		if emptyList(a.Pointer, root) {
			return refusal(RuleProvenance, "argument %s is an empty list of %s ids", a.Pointer, a.IDKind)
		}
		if a.IDKind != "" && !contains(kinds, a.IDKind) {
			kinds = append(kinds, a.IDKind)
		}
	}
	var ids []string
	for _, k := range kinds {
		ids = ids[:0]
		for i := range caps {
			if cp := &caps[i]; cp.Kind == capability.ID && cp.IDKind == k {
				ids = append(ids, cp.ID)
			}
		}
		if len(ids) == 0 {
			continue // the argument is absent: no id to prove
		}
		if ok, why := e.sessions.Check(c.Session, k, ids); !ok {
			return refusal(RuleProvenance, "%s: ids must come from this session's own results", why)
		}
	}
	return nil
}

// emptyList reports whether a pointer of the form /a/b/* names an array
// or object that is present and empty.
func emptyList(p args.Pointer, root args.Value) bool {
	parent, ok := strings.CutSuffix(p.String(), "/*")
	if !ok {
		return false
	}
	pp, err := args.ParsePointer(parent)
	if err != nil {
		return false
	}
	empty := false
	pp.Select(root, func(v args.Value, _ args.Loc) {
		if (v.Kind() == args.Array || v.Kind() == args.Object) && v.Len() == 0 {
			empty = true
		}
	})
	return empty
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
