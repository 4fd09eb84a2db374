package policycmp

import (
	"net/netip"
	"path"
	"strings"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// Invalid stands for a capability denied as not canonical in
// [Outcome.Caps].
const Invalid = "!"

// Outcome is what the agreement test compares: the decision and the rule
// that decided each target, "" for default deny.
type Outcome struct {
	Effect policy.Effect
	Action string
	Caps   []string
}

// verdict is one target's outcome: the winning rank (-1: no rule matched)
// and the index of the deciding rule, the first in file order with that
// rank.
type verdict struct{ rank, idx int }

var noRule = verdict{-1, -1}

// consider adds a matching rule of rank r at index i.
func (v *verdict) consider(r, i int) {
	if r > v.rank || r == v.rank && i < v.idx {
		v.rank, v.idx = r, i
	}
}

// effect is the verdict's effect: no rule denies.
func (v verdict) effect() policy.Effect {
	switch v.rank {
	case 0:
		return policy.Allow
	case 1:
		return policy.Ask
	}
	return policy.Deny
}

// stricter joins the effects of two targets: deny beats ask beats allow.
func stricter(a, b policy.Effect) policy.Effect {
	r := func(e policy.Effect) int {
		switch e {
		case policy.Allow:
			return 0
		case policy.Ask:
			return 1
		}
		return 2
	}
	if r(b) > r(a) {
		return b
	}
	return a
}

// outcomeOf builds an Outcome from per-target verdicts (invalid caps are
// marked by rank -2).
func outcomeOf(p *Policy, action verdict, caps []verdict) Outcome {
	id := func(v verdict) string {
		switch {
		case v.rank == -2:
			return Invalid
		case v.idx < 0:
			return ""
		}
		return p.Rules[v.idx].ID
	}
	o := Outcome{Effect: action.effect(), Action: id(action)}
	for _, v := range caps {
		o.Effect = stricter(o.Effect, v.effect())
		o.Caps = append(o.Caps, id(v))
	}
	return o
}

// The adapters below turn a policy.Request into what Cedar and Rego read.
// They carry over aegis's per-request semantics that a policy language
// cannot compute by itself, and are counted in the benchmarks as the
// per-request work a deployment would do.

// validCap is aegis's check that a capability is canonical and complete
// (policy.validCap): anything else is denied without consulting rules.
func validCap(c *capability.Capability) bool {
	switch c.Kind {
	case capability.FSRead, capability.FSWrite:
		return c.Path != "" && c.Path[0] == '/' && path.Clean(c.Path) == c.Path && strings.IndexByte(c.Path, 0) < 0
	case capability.NetConnect:
		return c.Host != ""
	case capability.Exec:
		return c.Shell || c.Program != ""
	case capability.ID:
		return true
	}
	return false
}

// tierName is the tier a call is matched with: unknown counts as mutating.
func tierName(t capability.Tier) string {
	if t == capability.TierUnknown || t > capability.TierMutating {
		t = capability.TierMutating
	}
	return t.String()
}

// originName is the origin as the generated policies spell it.
func originName(o capability.Origin) string { return o.String() }

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
	compat    = netip.MustParsePrefix("::/96")
	lastV6    = netip.MustParseAddr("::ffff")
)

// embeddedV4 returns the IPv4 address an IPv6 address carries, as aegis's
// deny rules see it (policy.embeddedV4): a denied network also matches it.
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	case teredo.Contains(a):
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	case compat.Contains(a) && a.Compare(lastV6) > 0:
		return netip.AddrFrom4([4]byte(b[12:16])), true
	}
	return netip.Addr{}, false
}
