// Package egressproxy is the egress proxy of a sandboxed server (issue 16,
// DESIGN.md R15 and R29): an HTTP forward proxy that the server reaches
// through HTTP_PROXY, HTTPS_PROXY and ALL_PROXY, and that decides every
// connection the server opens at the moment it is dialled. It owns the
// proxy protocol, the decision of each connection, credentials at the edge
// and the proxy's bounds; it leaves the policy to the caller's Decide,
// the address checks and the dialling to package egress, the sandbox and
// its listener to package sandbox, and the record to the caller's
// OnRefuse.
//
// # What it serves
//
// CONNECT host:port opens a tunnel (HTTPS, and anything else a client
// tunnels), or, for an https credential's host and port, an intercepted
// session (below); an absolute-form request for an http:// URL (GET
// http://host/x) is forwarded, with HTTP/1.1 keep-alive. Anything else is
// refused with 400: origin-form requests, https:// in absolute form,
// userinfo in the target, an IPv6 zone, a CONNECT with a body, a target
// that the WHATWG URL parser and Go's net/url read differently. Methods
// other than GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS are refused
// with 405 (TRACE would echo the request, credentials included). The
// proxy parses no HTTP itself: net/http's server reads every request and
// refuses duplicate Host headers, obsolete line folding and malformed or
// oversized headers; a Host header is ignored in favour of the target.
//
// # Every connection decided
//
// The target becomes a net.connect [capability.Capability] with a
// canonical host (every IPv4 spelling, 0x7f.1 or 2130706433, reduced to
// its address; IPv4-mapped IPv6 unmapped), a port, and a scheme: "http"
// and the URL for a plain request; for CONNECT, "https" when the port is
// 443 or an https credential's, and no scheme (no URL) for any other port,
// since the proxy cannot see what a tunnel carries — so a policy rule that
// names a scheme never allows a tunnel to another port. Inside an
// intercepted session, the connection is decided, not each request: the
// policy still sees no URL. The connection is made only if
//
//  1. Config.Decide, the server's policy, allows the capability, and
//  2. the [egress.Checker] allows it: the name is resolved once, every
//     address classified, and the connection made to a checked address
//     ([egress.Checker.DialCapability]), never resolved again.
//
// A plain request is decided per request, and its connection checked when
// it is dialled (connections are kept alive per host and port, as
// checked). The proxy follows no redirect: a redirect the server follows is
// a new request or tunnel, decided anew. A refusal is answered 403 with a
// one-line reason (the policy's reason or the egress verdict: hosts,
// addresses and classes, never a path, query or credential) and reported
// to Config.OnRefuse as a [Refusal].
//
// # Credentials at the edge
//
// A [Credential] is a header the proxy sets on the server's requests for
// one host, port and scheme, replacing whatever the server sent, so that
// the token never enters the server's process. An http credential is set
// on plain requests. An https one (the default) is set inside TLS: a
// CONNECT to its host and port — and only such a CONNECT; every other
// stays an opaque tunnel — is intercepted. The proxy dials the host as it
// dials a tunnel (decided, checked, recorded) and opens its own TLS to it,
// verified against the system's roots or the credential's CAFile (a
// certificate that does not verify refuses the CONNECT with 502 and a
// [Refusal] at stage [Upstream]; there is no unverified fallback). Only
// then does it answer 200 and take the server's TLS with a certificate
// for the host from its ephemeral CA ([Proxy.CACert]: ECDSA P-256, made by
// New, name-constrained to the credentials' hosts, its key dropped once
// it has signed their certificates), HTTP/1.1 only, refusing a TLS
// server name for another host. Each request inside is read by net/http
// (bounded header), refused with 421 unless its Host is the CONNECT's
// host and port, given the credential by the same rewrite as a plain
// request, and sent upstream; bodies stream both ways. When the host
// closes the connection, the next request's new connection is decided
// again. The server must trust the CA (package sandbox writes it where the
// server's TLS clients look); a server that does not gets a certificate
// error and nothing is sent.
//
// A credential is never sent to another host: a redirect elsewhere is
// another request with that host's credentials only; a request for
// another host inside an intercepted session is refused; an http://
// request to an https credential's port gets none, so the token never
// crosses the network in clear. A credential is keyed by the host the
// server names, not by address: a server that connects to the host's
// address by IP gets a tunnel without it. An origin that echoes request
// headers back (a debugging endpoint) would show the server its
// credential: configure credentials only for hosts that do not.
//
// # Bounds
//
// Config bounds the client connections (MaxConns), the tunnels open at
// once (MaxTunnels, 503 beyond), header sizes, the time to read a header
// and to dial, and idle keep-alive connections and tunnels. Close ends
// everything, tunnels included, and returns once their goroutines have.
//
// # Example
//
//	p, err := egressproxy.New(&egressproxy.Config{
//		Checker: checker, // the server's *egress.Checker
//		Decide: func(ctx context.Context, c capability.Capability) (bool, string) {
//			return policyAllows(c) // the server's own connection
//		},
//		OnRefuse: func(r egressproxy.Refusal) { log.Info("refused", "target", r.Target, "reason", r.Reason) },
//	})
//	if err != nil { ... }
//	go p.Serve(ln) // or p.ServeConn(c) for each connection a bridge accepts
//	defer p.Close()
package egressproxy
