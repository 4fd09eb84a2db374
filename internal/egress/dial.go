package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// ErrDenied is the root of the errors [Checker.Control] and
// [Checker.DialContext] return for a connection the policy refuses; a
// caller branches on it to tell a refusal from a network failure.
var ErrDenied = errors.New("egress denied")

// DenyError is a refused connection, with the verdict that refused it.
type DenyError struct {
	Verdict Verdict
}

func (e *DenyError) Error() string { return e.Verdict.String() }

// Unwrap returns ErrDenied.
func (e *DenyError) Unwrap() error { return ErrDenied }

// Control is a [net.Dialer] Control hook: it re-checks, just before the
// socket connects, the address the dialer actually chose. The network MUST
// be TCP or UDP over IP; the address is checked against the blocked classes
// and the address patterns of admit. Names are not visible here, so
// allow_hosts is not applied (an address outside its prefixes may belong to
// a listed name) and name patterns admit nothing: a dialer that must reach a
// name admitted by name uses [Checker.DialContext].
//
// With this hook, a dialer that resolved a name itself still cannot reach
// a blocked address, whatever DNS answered.
func (ch *Checker) Control(network, address string, _ syscall.RawConn) error {
	a, v := parseDial(network, address)
	if v.Reason != Allowed {
		return &DenyError{Verdict: v}
	}
	v = ch.checkAddr("", a.Addr(), false)
	if !v.Allow {
		return &DenyError{Verdict: v}
	}
	return nil
}

// parseDial parses the network and address a dialer hands its Control hook.
// The verdict is Allowed when they are usable.
func parseDial(network, address string) (netip.AddrPort, Verdict) {
	switch network {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
	default:
		return netip.AddrPort{}, Verdict{Reason: BadNetwork, Host: network}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return netip.AddrPort{}, Verdict{Reason: BadAddress, Host: address}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port()), Verdict{Reason: Allowed}
}

// checkedControl returns a Control hook that admits only the addresses v
// approved.
func (ch *Checker) checkedControl(v Verdict) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, pv := parseDial(network, address)
		if pv.Reason != Allowed {
			return &DenyError{Verdict: pv}
		}
		if !containsAddr(v.Addrs, ap.Addr()) {
			return &DenyError{Verdict: Verdict{Reason: NotChecked, Host: v.Host, Addr: ap.Addr()}}
		}
		return nil
	}
}

// DialContext connects to address ("host:port") on network (tcp, tcp4,
// tcp6, udp, udp4, udp6) if the policy allows it, with the signature of
// [net.Dialer.DialContext] so that it can serve an http.Transport. It checks
// the host with [Checker.Check], then dials the addresses the check
// approved, in the resolver's order, until one connects: the name is never
// resolved a second time, and a connect-time hook refuses any other
// address. A refusal is a *[DenyError].
func (ch *Checker) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := capability.FromHost(address)
	if err != nil || c.Port == 0 {
		if _, v := parseDial(network, "0.0.0.0:1"); v.Reason != Allowed {
			v.Host = network
			return nil, &DenyError{Verdict: v}
		}
		return nil, &DenyError{Verdict: Verdict{Reason: BadAddress, Host: address}}
	}
	conn, _, err := ch.DialCapability(ctx, network, &c)
	return conn, err
}

// DialCapability checks the net.connect c with [Checker.CheckCapability] —
// its scheme too, when it has one — and, if it is allowed, connects to
// c.Port at the addresses the check approved, in the resolver's order,
// until one connects: the name is resolved once, by the check, and a
// connect-time hook refuses any other address. c.Port MUST be set. It
// returns the verdict, for the record, with the connection or the error; a
// refusal is a *[DenyError] whose Verdict is the one returned. A name that
// did not resolve is refused even under on_resolve_error: allow-unchecked,
// since no address was checked to connect to.
func (ch *Checker) DialCapability(ctx context.Context, network string, c *capability.Capability) (net.Conn, Verdict, error) {
	if _, v := parseDial(network, "0.0.0.0:1"); v.Reason != Allowed {
		v.Host = network
		return nil, v, &DenyError{Verdict: v}
	}
	if c.Port == 0 {
		v := Verdict{Reason: BadAddress, Host: c.Host}
		return nil, v, &DenyError{Verdict: v}
	}
	v := ch.CheckCapability(ctx, c)
	switch {
	case v.Reason == AllowedUnchecked:
		// Nothing was checked, so there is nothing this dialer may
		// connect to.
		v.Allow, v.Reason = false, ResolveFailed
		return nil, v, &DenyError{Verdict: v}
	case !v.Allow:
		return nil, v, &DenyError{Verdict: v}
	}
	var targets []netip.Addr
	for _, a := range v.Addrs {
		switch network[len(network)-1] {
		case '4':
			if !a.Is4() {
				continue
			}
		case '6':
			if !a.Is6() {
				continue
			}
		}
		targets = append(targets, a)
	}
	if len(targets) == 0 {
		nv := Verdict{Reason: NoAddresses, Host: v.Host, Scheme: v.Scheme}
		return nil, nv, &DenyError{Verdict: nv}
	}
	d := net.Dialer{Control: ch.checkedControl(v)}
	var errs []error
	for _, a := range targets {
		conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, c.Port).String())
		if err == nil {
			return conn, v, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, v, errors.Join(errs...)
}
