package policy

import (
	"fmt"
	"strings"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// Explanation lists every rule that matched a call, for `aegis explain`
// (DESIGN.md R30). It is the slow path: it scans every rule.
type Explanation struct {
	Decision Decision
	// Action are the rules that matched the action, in file order.
	Action []Match
	// Caps are the rules that matched each capability, in file order.
	Caps [][]Match
}

// Match is one rule that matched a target.
type Match struct {
	Rule *Rule
	// Decides is set for the rule that decided the target's Effect, and
	// DecidesWould for the one that decided its Would.
	Decides, DecidesWould bool
	// CondErr is the error of the rule's condition, if it failed to
	// evaluate: the rule matched because it denies or asks.
	CondErr error
	// Below is, for a capability on a whole subtree, the rule's directory
	// under the capability's path by which the rule reached it; "" when
	// the rule holds the path itself or has no path_under.
	Below string
}

// Explain decides req and lists every rule that matched it.
func (s *Set) Explain(req *Request) Explanation {
	x := Explanation{Decision: s.Decide(req)}
	var vars *celVars
	scan := func(c *capability.Capability, v Verdict) []Match {
		var ms []Match
		for _, r := range s.rules {
			ok, err := r.matches(req, c, &vars)
			if !ok {
				continue
			}
			m := Match{Rule: r.info, Decides: v.Rule == r.info, DecidesWould: v.WouldRule == r.info, CondErr: err}
			if c != nil {
				m.Below = reachedBelow(r.info, c, req.FoldCase)
			}
			ms = append(ms, m)
		}
		return ms
	}
	x.Action = scan(nil, x.Decision.action)
	x.Caps = make([][]Match, len(req.Caps))
	for i := range req.Caps {
		if v := x.Decision.Cap(i); !v.Invalid {
			x.Caps[i] = scan(&req.Caps[i], v)
		}
	}
	return x
}

// String renders the explanation as indented text, one line per target and
// per matching rule.
func (x Explanation) String() string {
	var b strings.Builder
	d := x.Decision
	if d.req == nil {
		return d.Reason() + "\n"
	}
	fmt.Fprintf(&b, "%s: %s\n", d.Effect(), d.Reason())
	if sr := d.ShadowReason(); sr != "" {
		fmt.Fprintf(&b, "would %s: %s\n", d.Would(), sr)
	}
	target := func(name string, v Verdict, ms []Match) {
		fmt.Fprintf(&b, "  %s: %s", name, v.Effect)
		if v.Would != v.Effect {
			fmt.Fprintf(&b, " (would %s)", v.Would)
		}
		switch {
		case v.Invalid:
			b.WriteString(", invalid capability")
		case len(ms) == 0:
			b.WriteString(", no rule matched")
		}
		b.WriteByte('\n')
		for _, m := range ms {
			mark := " "
			if m.Decides {
				mark = "*"
			}
			fmt.Fprintf(&b, "   %s %s %q %s:%d", mark, m.Rule.Effect, m.Rule.ID, m.Rule.File, m.Rule.Line)
			if m.Rule.Mode == Shadow {
				b.WriteString(" (shadow)")
			}
			if m.Below != "" {
				fmt.Fprintf(&b, " (for %s, under it)", m.Below)
			}
			if m.CondErr != nil {
				fmt.Fprintf(&b, " (condition failed: %v)", m.CondErr)
			}
			b.WriteByte('\n')
		}
	}
	target(d.req.what(), d.action, x.Action)
	for i := range d.n {
		name := fmt.Sprintf("capability %d", i)
		if i < len(d.req.Caps) {
			name = describeCap(&d.req.Caps[i])
		}
		var ms []Match
		if i < len(x.Caps) {
			ms = x.Caps[i]
		}
		target(name, d.Cap(i), ms)
	}
	return b.String()
}
