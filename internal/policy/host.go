package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// hostMatcher is the `host` matcher of a rule: any of exact canonical names
// or addresses, strict-subdomain suffixes (*.example.com), networks (CIDR)
// and address classes (class:private).
type hostMatcher struct {
	exact    []string
	suffixes []string // "example.com" for "*.example.com"
	prefixes []netip.Prefix
	classes  capability.Class
}

// add compiles one host pattern.
func (h *hostMatcher) add(p string) error {
	switch {
	case strings.HasPrefix(p, "class:"):
		c, err := capability.ParseClass(p[len("class:"):])
		if err != nil {
			return err
		}
		h.classes |= c
	case strings.Contains(p, "/"):
		pre, err := netip.ParsePrefix(p)
		if err != nil {
			return fmt.Errorf("bad network %q: want an address/bits CIDR such as 10.0.0.0/8", p)
		}
		if pre.Addr().Zone() != "" {
			return fmt.Errorf("bad network %q: zones are not supported", p)
		}
		if pre.Masked() != pre {
			return fmt.Errorf("bad network %q: host bits are set; did you mean %s?", p, pre.Masked())
		}
		if a := pre.Addr(); a.Is4In6() {
			// Capabilities carry IPv4-mapped addresses unmapped.
			if pre.Bits() < 96 {
				return fmt.Errorf("bad network %q: an IPv4-mapped network needs at least 96 bits", p)
			}
			pre = netip.PrefixFrom(a.Unmap(), pre.Bits()-96)
		}
		h.prefixes = append(h.prefixes, pre)
	case strings.HasPrefix(p, "*."):
		name, addr, err := capability.CanonHost(p[2:])
		if err != nil {
			return fmt.Errorf("bad host pattern %q: %v", p, err)
		}
		if addr.IsValid() {
			return fmt.Errorf("bad host pattern %q: a wildcard needs a name, not an address", p)
		}
		h.suffixes = append(h.suffixes, name)
	case strings.ContainsAny(p, "*?"):
		return fmt.Errorf("bad host pattern %q: a wildcard may only be a leading \"*.\"", p)
	default:
		name, _, err := capability.CanonHost(p)
		if err != nil {
			return fmt.Errorf("bad host %q: %v", p, err)
		}
		h.exact = append(h.exact, name)
	}
	return nil
}

// match reports whether the host of c matches. A name never matches a
// network, and an address never matches a suffix. When embedded is set
// (deny rules), a network also matches the IPv4 address embedded in an
// IPv6 one, by every embedding [capability.EmbeddedIPv4] reads, so that no
// spelling of a denied address escapes its rule.
func (h *hostMatcher) match(c *capability.Capability, embedded bool) bool {
	for _, e := range h.exact {
		if e == c.Host {
			return true
		}
	}
	if c.Classes&h.classes != 0 {
		return true
	}
	if c.Addr.IsValid() {
		for _, p := range h.prefixes {
			if p.Contains(c.Addr) {
				return true
			}
		}
		if embedded && len(h.prefixes) > 0 {
			if v4, ok := capability.EmbeddedIPv4(c.Addr); ok {
				for _, p := range h.prefixes {
					if p.Contains(v4) {
						return true
					}
				}
			}
		}
		return false
	}
	for _, s := range h.suffixes {
		if len(c.Host) > len(s)+1 && strings.HasSuffix(c.Host, s) && c.Host[len(c.Host)-len(s)-1] == '.' {
			return true
		}
	}
	return false
}

// portRange is an inclusive range of ports.
type portRange struct{ lo, hi uint16 }

func parsePort(s scalar) (portRange, error) {
	if s.tag == "!!int" {
		p, err := portNumber(s.value)
		return portRange{p, p}, err
	}
	lo, hi, ok := strings.Cut(s.value, "-")
	if !ok {
		p, err := portNumber(s.value)
		return portRange{p, p}, err
	}
	l, err := portNumber(strings.TrimSpace(lo))
	if err != nil {
		return portRange{}, err
	}
	h, err := portNumber(strings.TrimSpace(hi))
	if err != nil {
		return portRange{}, err
	}
	if l > h {
		return portRange{}, fmt.Errorf("port range %q is empty: %d > %d", s.value, l, h)
	}
	return portRange{l, h}, nil
}

func portNumber(s string) (uint16, error) {
	n := 0
	if s == "" || len(s) > 5 {
		return 0, fmt.Errorf("bad port %q: want a number from 1 to 65535 or a range such as 8000-8100", s)
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad port %q: want a number from 1 to 65535 or a range such as 8000-8100", s)
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %s out of range: want 1 to 65535", s)
	}
	return uint16(n), nil
}

func validScheme(s string) error {
	if s == "" {
		return errors.New("empty scheme")
	}
	for i, c := range []byte(s) {
		if 'a' <= c && c <= 'z' || i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.') {
			continue
		}
		return fmt.Errorf("bad scheme %q: want lower-case letters, digits, +, - and . (such as https)", s)
	}
	return nil
}
