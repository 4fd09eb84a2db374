package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// pattern is one host entry of an allowlist or an admission: an exact
// canonical name, a wildcard over the names under a canonical suffix, or an
// address prefix (a single address is a /32 or /128).
type pattern struct {
	name     string // canonical name, or the suffix of a wildcard
	wildcard bool
	prefix   netip.Prefix
}

// parsePattern parses a host pattern of the configuration. Names are
// canonicalised as [capability.CanonHost] does for the hosts of calls, so
// that "*.BÜCHER.example." and a call to shop.xn--bcher-kva.example agree.
// Addresses must be written in standard form.
func parsePattern(s string) (pattern, error) {
	switch {
	case s == "":
		return pattern{}, errors.New("empty host pattern")
	case s == "*":
		return pattern{}, fmt.Errorf(`%q: a bare "*" would match every name; leave allow_hosts empty to allow every host whose classes pass`, s)
	case strings.IndexByte(s, '/') >= 0:
		return parsePrefix(s)
	}
	wildcard := false
	host := s
	if strings.HasPrefix(s, "*.") {
		wildcard, host = true, s[2:]
		if host == "" || host == "." {
			return pattern{}, fmt.Errorf("%q: a wildcard needs a suffix (*.example.com)", s)
		}
	}
	if strings.IndexByte(host, '*') >= 0 {
		return pattern{}, fmt.Errorf(`%q: "*" is allowed only as the whole first label (*.example.com)`, s)
	}
	if strings.IndexByte(host, '%') >= 0 {
		return pattern{}, fmt.Errorf("%q: percent-encoding in a host pattern", s)
	}
	name, addr, err := capability.CanonHost(host)
	if err != nil {
		return pattern{}, fmt.Errorf("%q: %w", s, err)
	}
	if addr.IsValid() {
		if wildcard {
			return pattern{}, fmt.Errorf("%q: a wildcard over an IP address", s)
		}
		plain := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		a, err := parseAddr(plain)
		if err != nil {
			return pattern{}, fmt.Errorf("%s (write %s)", err, addr)
		}
		return pattern{prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	return pattern{name: name, wildcard: wildcard}, nil
}

// parsePrefix parses a CIDR pattern.
func parsePrefix(s string) (pattern, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return pattern{}, fmt.Errorf("%q is not a CIDR prefix", s)
	}
	if p.Addr().Is4In6() {
		return pattern{}, fmt.Errorf("%q: an IPv4-mapped prefix; write the IPv4 prefix", s)
	}
	if m := p.Masked(); m != p {
		return pattern{}, fmt.Errorf("%q has host bits set (did you mean %s?)", s, m)
	}
	return pattern{prefix: p}, nil
}

// matches reports whether the pattern matches a canonical name (which may
// be empty) or an address (which may be invalid). addr MUST be unmapped
// and without zone.
func (p pattern) matches(name string, addr netip.Addr) bool {
	switch {
	case p.prefix.IsValid():
		return addr.IsValid() && p.prefix.Contains(addr)
	case name == "":
		return false
	case p.wildcard:
		return len(name) > len(p.name)+1 && strings.HasSuffix(name, p.name) && name[len(name)-len(p.name)-1] == '.'
	}
	return name == p.name
}

// String returns the pattern in canonical form, which parses back to the
// same pattern.
func (p pattern) String() string {
	switch {
	case p.prefix.IsValid():
		return p.prefix.String()
	case p.wildcard:
		return "*." + p.name
	}
	return p.name
}
