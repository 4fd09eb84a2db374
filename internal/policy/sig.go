package policy

import "github.com/aegis-mcp/aegis/internal/capability"

// Signatures let Decide reject most candidate rules without reading them.
// A signature summarises, in 16-bit lanes, what each list matcher of a rule
// accepts; the request's signature has the bits of its own values. A rule
// can match only if every lane it uses shares a bit with the request's
// lane. Hash collisions only let a candidate through to the full matcher,
// so a signature never changes a decision.
//
// Call lanes: server, tool, principal, roles. A name sets a bit of its
// hash in the low byte of its lane; a glob sets a bit of its first byte in
// the high byte (the request sets both), or the whole lane if it starts
// with a wildcard. Capability lanes (net.connect): ports and schemes, two
// lanes of 32 bits; a capability without a port or scheme sets the whole
// lane, so that deny rules, which match it, pass.

const (
	laneServer = 0
	laneTool   = 16
	lanePrinc  = 32
	laneRoles  = 48
)

// nameHash hashes a name in constant time, from its length and its first
// and last bytes.
func nameHash(s string) uint {
	if s == "" {
		return 0
	}
	return uint(len(s)) ^ uint(s[0])>>1 ^ uint(s[len(s)-1])<<2
}

func nameBit8(s string) uint64 { return 1 << (nameHash(s) & 7) }

func firstBit8(s string) uint64 {
	if s == "" {
		return 0
	}
	return 1 << (8 + s[0]&7)
}

// globLane returns the lane of a server or tool matcher: 0 if there is none.
func globLane(gs globs) uint64 {
	var l uint64
	for i := range gs {
		g := &gs[i]
		switch {
		case !g.wild:
			l |= nameBit8(g.literal)
		case g.pattern[0] == '*' || g.pattern[0] == '?':
			return 0xffff
		case g.pattern[0] == '\\':
			l |= firstBit8(g.pattern[1:])
		default:
			l |= firstBit8(g.pattern)
		}
	}
	return l
}

func namesLane(names []string) uint64 {
	var l uint64
	for _, n := range names {
		l |= 1 << (nameHash(n) & 15)
	}
	return l
}

// ruleSig returns the call signature of r.
func ruleSig(r *rule) uint64 {
	return globLane(r.servers)<<laneServer | globLane(r.tools)<<laneTool |
		namesLane(r.principals)<<lanePrinc | namesLane(r.roles)<<laneRoles
}

// requestSig returns the call signature of req.
func requestSig(req *Request) uint64 {
	s := globLaneOf(req.Server)<<laneServer | globLaneOf(req.Tool)<<laneTool |
		uint64(1)<<(nameHash(req.Principal)&15)<<lanePrinc
	for _, role := range req.Roles {
		s |= 1 << (nameHash(role) & 15) << laneRoles
	}
	return s
}

// globLaneOf is a request's server or tool lane: nameBit8(s) | firstBit8(s).
func globLaneOf(s string) uint64 {
	if s == "" {
		return 1
	}
	return 1<<(nameHash(s)&7) | 1<<(8+s[0]&7)
}

// ruleCapSig returns the capability signature of r: ports in the low 32
// bits, schemes in the high 32.
func ruleCapSig(r *rule) uint64 {
	var ports, schemes uint64
	for _, p := range r.ports {
		if int(p.hi)-int(p.lo) >= 31 {
			ports = 0xffffffff
			break
		}
		for q := int(p.lo); q <= int(p.hi); q++ {
			ports |= 1 << (q & 31)
		}
	}
	for _, s := range r.schemes {
		schemes |= 1 << (nameHash(s) & 31)
	}
	return ports | schemes<<32
}

// capSig returns the capability signature of c.
func capSig(c *capability.Capability) uint64 {
	if c.Kind != capability.NetConnect && c.Kind != capability.NetLink {
		return ^uint64(0)
	}
	ports := uint64(0xffffffff)
	if c.Port != 0 {
		ports = 1 << (c.Port & 31)
	}
	schemes := uint64(0xffffffff)
	if c.Scheme != "" {
		schemes = 1 << (nameHash(c.Scheme) & 31)
	}
	return ports | schemes<<32
}

// Lane masks: the high bit of each lane, and the others.
const (
	high16 = 0x8000_8000_8000_8000
	low16  = 0x7fff_7fff_7fff_7fff
	high32 = 0x8000_0000_8000_0000
	low32  = 0x7fff_ffff_7fff_ffff
)

// nonzero16 sets the high bit of each non-zero 16-bit lane of v.
func nonzero16(v uint64) uint64 { return ((v & low16) + low16 | v) & high16 }

func nonzero32(v uint64) uint64 { return ((v & low32) + low32 | v) & high32 }
