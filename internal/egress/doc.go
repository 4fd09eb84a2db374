// Package egress owns the network side of a net.connect: whether aegis lets
// a call reach a host. It decides from a [capability.Capability] (whose host
// package capability has already canonicalised and classed) and from what
// the host's name resolves to; it leaves argument parsing to package
// capability and the allow/deny of the call as a whole to the gateway.
//
// # The gate
//
// A [Checker], built by [New] from a [Config], denies by default: a URL
// scheme not in the list, a name whose spelling is internal (localhost,
// *.internal, single labels, metadata names), and any address — literal or
// resolved — in a blocked class (every class but public unless configured:
// loopback, private, link-local, CGNAT, multicast, metadata, IPv6 forms
// embedding an IPv4 address, ...). An allowlist restricts the hosts a server
// may reach; an admission opens a blocked class for named hosts or prefixes
// only, and only the classes it names.
//
// # Resolution
//
// A name is resolved and every address of the answer, A and AAAA, must
// pass: one private address among public ones denies the call, which is
// what DNS rebinding and split answers look like. A [Resolver] is a static
// hosts table ([Static]), the system resolver ([System], which may be
// pointed at one nameserver of the configuration's), a [Chain] of them, or
// a [Cache] around one. A failed lookup or an empty answer denies, unless
// the configuration says on_resolve_error: allow-unchecked.
//
// # Connecting
//
// The [Verdict] of an allowed call lists the addresses that were checked.
// [Checker.DialContext] connects only to those, without resolving again,
// and [Checker.Control] is a [net.Dialer] Control hook that re-checks the
// address at connect time, for aegis's own outbound connections:
//
//	ch, err := egress.New(&egress.Config{Schemes: []string{"https"}})
//	if err != nil { ... }
//	client := &http.Client{Transport: &http.Transport{DialContext: ch.DialContext}}
//
// Every refusal is a [Verdict] with a [Reason] that names the host, the
// address and the classes, for the audit record; errors wrap [ErrDenied].
package egress
