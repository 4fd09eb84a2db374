package policy

import (
	"unicode/utf8"

	"github.com/aegis-mcp/aegis/internal/capability"
	"golang.org/x/text/unicode/norm"
)

// referenceDecide is the naive reference for Decide: it scans every rule
// for every target, in file order, with no index and no pruning, and
// combines the matches the plain way.
func referenceDecide(s *Set, req *Request) outcome {
	var vars *celVars
	pick := func(ms []*rule) (Effect, *rule) {
		for _, want := range []Effect{Deny, Ask, Allow} {
			for _, r := range ms {
				if r.effect == want {
					return want, r
				}
			}
		}
		return Deny, nil
	}
	target := func(c *capability.Capability) (eff, would Effect, by, wouldBy *rule) {
		var enforced, all []*rule
		for _, r := range s.rules {
			if ok, _ := refMatches(r, req, c, &vars); !ok {
				continue
			}
			all = append(all, r)
			if !r.shadow {
				enforced = append(enforced, r)
			}
		}
		eff, by = pick(enforced)
		would, wouldBy = pick(all)
		return eff, would, by, wouldBy
	}
	id := func(r *rule) string {
		if r == nil {
			return ""
		}
		return r.info.ID
	}
	var o outcome
	var shadowed []*rule
	note := func(eff, would Effect, wouldBy *rule) {
		if eff == would || wouldBy == nil {
			return
		}
		for _, r := range shadowed {
			if r == wouldBy {
				return
			}
		}
		shadowed = append(shadowed, wouldBy)
	}
	eff, would, by, wouldBy := target(nil)
	o.Effect, o.Would, o.Action = eff, would, id(by)
	note(eff, would, wouldBy)
	for i := range req.Caps {
		c := &req.Caps[i]
		if !validCap(c) || !refFormsOK(c, req.FoldCase) {
			o.Effect, o.Would = Deny, Deny
			o.Caps = append(o.Caps, "!")
			continue
		}
		eff, would, by, wouldBy := target(c)
		o.Caps = append(o.Caps, id(by))
		note(eff, would, wouldBy)
		o.Effect = worse(o.Effect, eff)
		o.Would = worse(o.Would, would)
	}
	for _, r := range shadowed {
		o.Shadowed = append(o.Shadowed, r.info.ID)
	}
	return o
}

func worse(a, b Effect) Effect {
	if a == Deny || b == Deny {
		return Deny
	}
	if a == Ask || b == Ask {
		return Ask
	}
	return Allow
}

// refMatches is rule.matches with the call scalars checked the plain way,
// not through the call bits.
func refMatches(r *rule, req *Request, c *capability.Capability, vars **celVars) (bool, error) {
	if (c == nil) != (r.kinds == 0) || !refCallScalars(r, req) || !r.callLists(req) {
		return false, nil
	}
	if c != nil {
		// The path the plain way; matchCap checks the rest.
		isFS := c.Kind == capability.FSRead || c.Kind == capability.FSWrite
		if isFS && r.kinds.has(c.Kind) && r.paths != nil && !refPathOK(r, c, req.FoldCase) {
			return false, nil
		}
		if !r.matchCap(c, nil, donePath) {
			return false, nil
		}
	}
	return r.cond(req, c, vars)
}

// refPathOK is rule.pathOK from the definitions: NFC forms compared, and
// on a case-insensitive volume fold keys for a deny and ASCII lower case
// for a grant. A capability on a whole subtree (c.Subtree) is also met by
// a deny or ask rule's directory strictly under its path, in the same
// forms: the kind on that directory is among what the capability does.
func refPathOK(r *rule, c *capability.Capability, fold bool) bool {
	if !utf8.ValidString(c.Path) {
		return false
	}
	n := norm.NFC.String(c.Path)
	for _, d := range r.paths {
		// p and dir in the forms the rule meets them by.
		p, dir := n, d
		switch {
		case !fold:
		case r.grants():
			p, dir = refLower(n), refLower(d)
		default:
			var ok bool
			if p, ok = capability.FoldPath(n); !ok {
				continue
			}
			dir, _ = capability.FoldPath(d)
		}
		if capability.PathUnder(p, dir) {
			return true
		}
		if c.Subtree && r.effect != Allow && dir != p && capability.PathUnder(dir, p) {
			return true
		}
	}
	return false
}

func refLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

func refCallScalars(r *rule, req *Request) bool {
	method := req.Method
	if method == "" {
		method = ToolsCall
	}
	if r.tools != nil && method != ToolsCall || r.prompts != nil && method != PromptsGet {
		return false
	}
	if r.unbound {
		if req.Bound {
			return false
		}
	} else if !req.Bound && r.effect != Deny {
		return false
	}
	if r.origin != capability.OriginUnknown && r.origin != req.Origin {
		known := req.Origin == capability.Interactive || req.Origin == capability.Unattended
		if known || r.effect != Deny {
			return false
		}
	}
	if r.taint == 1 && req.Taint || r.taint == 2 && !req.Taint {
		return false
	}
	tier := req.Tier
	if tier == capability.TierUnknown || tier > capability.TierMutating {
		tier = capability.TierMutating
	}
	return r.tiers == 0 || r.tiers&(1<<tier) != 0
}

// refFormsOK reports whether an fs capability's path has the forms rules
// match: it is text, and on a case-insensitive volume it has a fold key.
func refFormsOK(c *capability.Capability, fold bool) bool {
	if c.Kind != capability.FSRead && c.Kind != capability.FSWrite {
		return true
	}
	if !utf8.ValidString(c.Path) {
		return false
	}
	if fold {
		_, ok := capability.FoldPath(c.Path)
		return ok
	}
	return true
}
