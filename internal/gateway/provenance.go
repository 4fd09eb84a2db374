package gateway

import (
	"slices"
	"strings"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
)

// provenance checks every id capability against the ids the server
// returned in this session (R16): every candidate of every kind must be a
// member; an empty list where ids belong fails the call. A kind whose every
// argument the binding flags (provenance flag) is checked id by id
// instead: a non-member is marked Unproven, for the policy to decide
// (only rules that say unproven: true grant it), and a blank one still
// fails the call.
func (e *Engine) provenance(c *Call, b *binding.Binding, caps []capability.Capability, root args.Value) error {
	var kinds []string
	var required []string // the kinds some argument requires proven
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
		if !a.FlagUnproven && !contains(required, a.IDKind) {
			required = append(required, a.IDKind)
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
		if contains(required, k) {
			// A member of a trusted set of the kind is proven by it; the
			// rest must be the server's own.
			ids = slices.DeleteFunc(ids, func(id string) bool { return e.isTrusted(k, id) })
			if len(ids) == 0 {
				continue
			}
			if ok, why := e.sessions.Check(c.Session, k, ids); !ok && !e.sharedHas(c.Session, k, ids) {
				return refusal(RuleProvenance, "%s: ids must come from this session's own results", why)
			}
			continue
		}
		// Flagged: each was marked before the policy (flagUnproven); a
		// blank one is no id at all.
		for i := range caps {
			if cp := &caps[i]; cp.Kind == capability.ID && cp.IDKind == k && strings.TrimSpace(cp.ID) == "" {
				return refusal(RuleProvenance, "a blank id of kind %s", k)
			}
		}
	}
	return nil
}

// flagUnproven marks, before the policy decides, each id of a kind whose
// every argument the binding flags (provenance flag) that the server did
// not return in this session: the policy then decides it, and only a rule
// that says unproven: true grants it.
func (e *Engine) flagUnproven(c *Call, b *binding.Binding, caps []capability.Capability) {
	var flagged, required []string
	for i := range b.Args {
		a := &b.Args[i]
		switch {
		case a.Kind == capability.NetLink:
			// The addresses written in a text are the model's: one the
			// server never returned, and no trusted set holds, is
			// unproven (a new recipient).
			flagged = append(flagged, binding.IDKindEmail)
		case a.Kind != capability.ID:
		case a.FlagUnproven:
			flagged = append(flagged, a.IDKind)
		default:
			required = append(required, a.IDKind)
		}
	}
	if len(flagged) == 0 {
		return
	}
	for i := range caps {
		cp := &caps[i]
		if cp.Kind != capability.ID || !contains(flagged, cp.IDKind) || contains(required, cp.IDKind) {
			continue
		}
		if e.isTrusted(cp.IDKind, cp.ID) {
			continue
		}
		if ok, _ := e.sessions.Check(c.Session, cp.IDKind, []string{cp.ID}); !ok && !e.sharedHas(c.Session, cp.IDKind, []string{cp.ID}) {
			cp.Unproven = true
		}
	}
}

// isTrusted reports whether id is a member of a trusted set of kind.
func (e *Engine) isTrusted(kind, id string) bool {
	for _, vs := range e.trusted {
		if vs.IDKind == kind && vs.Has(id) {
			return true
		}
	}
	return false
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
