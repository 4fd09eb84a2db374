package egress

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// Checker decides whether a net.connect may happen. Build one with [New];
// it is safe for concurrent use.
type Checker struct {
	schemes        map[string]bool
	http, https    bool // schemes["http"], schemes["https"], read without the map
	block          capability.Class
	allow          []pattern // AllowHosts and every Admit pattern
	restricted     bool      // AllowHosts was set: a host must match allow
	allowByAddr    bool      // allow holds an address pattern
	admit          []admission
	allowUnchecked bool
	resolver       namedResolver
}

// Reason names why a [Verdict] is what it is. Its String is the name an
// audit record or log line carries.
type Reason uint8

// The reasons.
const (
	Allowed          Reason = iota // every check passed
	AllowedUnchecked               // the name did not resolve and on_resolve_error is allow-unchecked
	BadCapability                  // not a net.connect capability
	BadHost                        // the host is empty or does not canonicalise
	SchemeNotAllowed               // the URL's scheme is not in schemes
	HostNotAllowed                 // allow_hosts is set and neither the name nor the address matches it
	BlockedName                    // the name's own class is blocked (localhost, .internal, metadata names)
	BlockedAddress                 // an address, literal or resolved, is in a blocked class
	ResolveFailed                  // the name did not resolve
	NoAddresses                    // the name resolved to no address (or none for the network dialled)
	BadNetwork                     // a dial on a network other than TCP or UDP over IP
	BadAddress                     // a dial address that is not ip:port
	NotChecked                     // a connect to an address Check did not approve

	reasonEnd
)

var reasonNames = [...]string{
	Allowed:          "allowed",
	AllowedUnchecked: "allowed-unchecked",
	BadCapability:    "bad-capability",
	BadHost:          "bad-host",
	SchemeNotAllowed: "scheme-not-allowed",
	HostNotAllowed:   "host-not-allowed",
	BlockedName:      "blocked-name",
	BlockedAddress:   "blocked-address",
	ResolveFailed:    "resolve-failed",
	NoAddresses:      "no-addresses",
	BadNetwork:       "bad-network",
	BadAddress:       "bad-address",
	NotChecked:       "not-checked",
}

// String returns the reason's name.
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Verdict is the outcome of a check, with what the audit record needs to
// explain it. It never holds the URL's path, query or userinfo.
type Verdict struct {
	Allow  bool
	Reason Reason
	// Host is the canonical host checked; Scheme its scheme, if any.
	Host   string
	Scheme string
	// Addr is the address the reason is about: the blocked or unlisted
	// one for a denial.
	Addr netip.Addr
	// Classes are the blocked classes that denied the call; for an allowed
	// call, the blocked classes an admission opened.
	Classes capability.Class
	// Addrs are, for an allowed call, every address checked: the literal,
	// or all the addresses the name resolved to. A dialer connects only to
	// these. Empty for AllowedUnchecked.
	Addrs []netip.Addr
	// Err is the resolver's error for ResolveFailed and AllowedUnchecked.
	Err error
}

// String explains the verdict in one sentence for logs and errors.
func (v Verdict) String() string {
	var what string
	switch v.Reason {
	case Allowed:
		what = fmt.Sprintf("%s is allowed", v.Host)
		if v.Classes != 0 {
			what += fmt.Sprintf(" (admitted: %v)", v.Classes)
		}
	case AllowedUnchecked:
		why := "no addresses"
		if v.Err != nil {
			why = v.Err.Error()
		}
		what = fmt.Sprintf("%s did not resolve (%s); allowed unchecked by on_resolve_error", v.Host, why)
	case BadCapability:
		what = "not a net.connect capability"
	case BadHost:
		what = fmt.Sprintf("host %q does not canonicalise", v.Host)
	case SchemeNotAllowed:
		what = fmt.Sprintf("scheme %q is not allowed", v.Scheme)
	case HostNotAllowed:
		if v.Addr.IsValid() && v.Addr.String() != v.Host {
			what = fmt.Sprintf("%s resolves to %s, which allow_hosts does not list", v.Host, v.Addr)
		} else {
			what = fmt.Sprintf("%s is not in allow_hosts", v.Host)
		}
	case BlockedName:
		what = fmt.Sprintf("%s is a %v name", v.Host, v.Classes)
	case BlockedAddress:
		if v.Addr.String() == v.Host || v.Host == "" {
			what = fmt.Sprintf("address %s is %v", v.Addr, v.Classes)
		} else {
			what = fmt.Sprintf("%s resolves to %s, which is %v", v.Host, v.Addr, v.Classes)
		}
	case ResolveFailed:
		what = fmt.Sprintf("%s did not resolve: %v", v.Host, v.Err)
	case NoAddresses:
		what = fmt.Sprintf("%s resolved to no usable address", v.Host)
	case BadNetwork:
		what = fmt.Sprintf("network of %s is not TCP or UDP over IP", v.Host)
	case BadAddress:
		what = fmt.Sprintf("%q is not an ip:port address", v.Host)
	case NotChecked:
		what = fmt.Sprintf("connect to %s, which the check did not approve", v.Addr)
	default:
		what = v.Reason.String()
	}
	if v.Allow {
		return "egress: " + what
	}
	return "egress denied: " + what
}

func denied(r Reason, host string) Verdict { return Verdict{Reason: r, Host: host} }

// Check decides whether the net.connect c may happen: its scheme, its
// host's name classes, and, for a name, every address the resolver returns
// — A and AAAA — must pass. One bad address denies the call, so a name
// that resolves to a public and a private address (DNS rebinding) is
// denied. An IP literal is not resolved; its address is checked.
//
// Check re-canonicalises c.Host rather than trusting it. Resolution errors
// and empty answers deny, unless on_resolve_error is allow-unchecked. The
// allowed Verdict's Addrs are the addresses to connect to; connecting to
// any other address, or resolving the name again, defeats the check.
func (ch *Checker) Check(ctx context.Context, c capability.Capability) Verdict {
	return ch.CheckCapability(ctx, &c)
}

// CheckCapability is [Checker.Check] for *c, which it neither keeps nor
// changes: the capability is not copied on the way.
func (ch *Checker) CheckCapability(ctx context.Context, c *capability.Capability) Verdict {
	if c.Kind != capability.NetConnect {
		return denied(BadCapability, c.Host)
	}
	host, addr, classes, err := capability.CanonHostClasses(c.Host)
	if err != nil {
		return denied(BadHost, c.Host)
	}
	if c.Addr.IsValid() && c.Addr.Unmap().WithZone("") != addr {
		return denied(BadHost, c.Host)
	}
	if c.Scheme != "" && !ch.schemeAllowed(c.Scheme) {
		v := denied(SchemeNotAllowed, host)
		v.Scheme = c.Scheme
		return v
	}
	if addr.IsValid() {
		v := ch.checkAddr("", addr, ch.restricted)
		v.Host, v.Scheme = host, c.Scheme
		if v.Allow {
			v.Addr, v.Addrs = netip.Addr{}, []netip.Addr{addr}
		}
		return v
	}
	return ch.checkName(ctx, host, classes, c.Scheme)
}

// schemeAllowed reports whether schemes holds s, the common two from
// fields.
func (ch *Checker) schemeAllowed(s string) bool {
	switch s {
	case "https":
		return ch.https
	case "http":
		return ch.http
	}
	return ch.schemes[s]
}

// checkName checks a canonical name, whose NameClass is classes, and every
// address it resolves to.
func (ch *Checker) checkName(ctx context.Context, host string, classes capability.Class, scheme string) Verdict {
	v := Verdict{Host: host, Scheme: scheme}
	nameListed := !ch.restricted
	if ch.restricted {
		for _, p := range ch.allow {
			if p.matches(host, netip.Addr{}) {
				nameListed = true
				break
			}
		}
		if !nameListed && !ch.allowByAddr {
			v.Reason = HostNotAllowed
			return v
		}
	}
	nameClasses := classes & ch.block
	admitted := ch.admitted(host, netip.Addr{})
	if bad := nameClasses &^ admitted; bad != 0 {
		v.Reason, v.Classes = BlockedName, bad
		return v
	}
	opened := nameClasses

	as, err := ch.resolver.Resolve(ctx, host)
	if err == nil && len(as) == 0 {
		v.Reason = NoAddresses
		if !ch.allowUnchecked {
			return v
		}
	}
	if err != nil || len(as) == 0 {
		v.Err = err
		if v.Reason == 0 {
			v.Reason = ResolveFailed
		}
		if ch.allowUnchecked && nameListed {
			v.Allow, v.Reason = true, AllowedUnchecked
		}
		return v
	}
	seen := make([]netip.Addr, 0, len(as))
	for _, a := range as {
		a = a.Unmap().WithZone("")
		if containsAddr(seen, a) {
			continue
		}
		av := ch.checkAddr(host, a, !nameListed)
		if !av.Allow {
			av.Host, av.Scheme = host, scheme
			return av
		}
		opened |= av.Classes
		seen = append(seen, a)
	}
	v.Allow, v.Reason, v.Classes, v.Addrs = true, Allowed, opened, seen
	return v
}

// checkAddr checks one address, reached through the canonical name host
// (empty for a literal or at connect time). With needListed, the address
// must match an address pattern of the allowlist. The allowed verdict's
// Classes are the blocked classes an admission opened.
func (ch *Checker) checkAddr(host string, a netip.Addr, needListed bool) Verdict {
	v := Verdict{Addr: a}
	if needListed && !ch.listedAddr(a) {
		v.Reason = HostNotAllowed
		return v
	}
	cls := capability.ClassOf(a) & ch.block
	if bad := cls &^ ch.admitted(host, a); bad != 0 {
		v.Reason, v.Classes = BlockedAddress, bad
		return v
	}
	v.Allow, v.Reason, v.Classes = true, Allowed, cls
	return v
}

// listedAddr reports whether an address pattern of the allowlist matches a.
func (ch *Checker) listedAddr(a netip.Addr) bool {
	for _, p := range ch.allow {
		if p.matches("", a) {
			return true
		}
	}
	return false
}

// admitted returns the classes that admissions matching the name or the
// address open.
func (ch *Checker) admitted(host string, a netip.Addr) capability.Class {
	var c capability.Class
	for _, ad := range ch.admit {
		for _, p := range ad.patterns {
			if p.matches(host, a) {
				c |= ad.classes
				break
			}
		}
	}
	return c
}

func containsAddr(as []netip.Addr, a netip.Addr) bool {
	for _, x := range as {
		if x == a {
			return true
		}
	}
	return false
}
