package policy

// MayAllow reports whether some call of req's tool could be allowed (or
// asked about) for req's principal and roles: whether an allow or ask rule
// matches the tool's action as far as the call's server, tool, principal,
// roles and binding go. Everything a single call adds (arguments,
// capabilities, origin, taint, tier, CEL conditions) is assumed to match, so
// a false answer is certain: no call of the tool can be allowed, and the
// tool may be hidden from the client's list of tools. req's Caps, Origin,
// Taint and Tier are ignored.
func (s *Set) MayAllow(req *Request) bool {
	for _, r := range s.rules {
		if r.effect == Deny || r.kinds != 0 {
			continue
		}
		if r.unbound != !req.Bound || r.methodMask()&callBits(req) == 0 {
			continue
		}
		if r.callLists(req) {
			return true
		}
	}
	return false
}
