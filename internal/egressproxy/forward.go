package egressproxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// forwardKey carries a plain request's decided capability from forward to
// the rewrite and the error handler.
type forwardKey struct{}

// forward serves an absolute-form http request: derive the capability,
// decide it, and hand the request to the reverse proxy, whose transport
// dials through the egress checker. The request sent upstream is the
// decided URL, with the Host header it implies (a Host header the client
// sent is ignored, as RFC 9112 §3.2.2 says, and net/http drops it), the
// hop-by-hop headers removed, and the host's credentials set. Responses,
// redirects included, are passed back as they are: the proxy follows
// nothing, and a redirect the server follows is a new request, decided
// anew.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	c, status, err := forwardTarget(r)
	if err != nil {
		if status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", allowHeader)
		}
		p.refuse(w, status, Refusal{Target: askedTarget(r), Stage: Request, Reason: err.Error()}, false)
		return
	}
	rf := Refusal{Target: askedTarget(r), Capability: c}
	if ok, reason := p.decide(r.Context(), c); !ok {
		rf.Stage, rf.Reason = Policy, reasonOr(reason, "denied by policy")
		p.refuse(w, http.StatusForbidden, rf, false)
		return
	}
	u, err := url.Parse(c.URL)
	if err != nil || u.Scheme != "http" || u.User != nil {
		// FromURL checked that net/url reads the canonical URL alike.
		rf.Stage, rf.Reason = Request, "target URL does not re-parse"
		p.refuse(w, http.StatusBadRequest, rf, false)
		return
	}
	u.Host = hostPort(c.Host, c.Port)
	p.forwarder.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardKey{}, &forwardState{c: c, u: u, rf: rf})))
}

// forwardState is what forward decided, for rewrite and forwardError.
type forwardState struct {
	c    capability.Capability
	u    *url.URL
	rf   Refusal
	sess *session // the intercepted CONNECT the request came in, or nil
}

// hostPort writes a canonical host and a port as a URL authority.
func hostPort(host string, port uint16) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// rewrite builds the upstream request: the decided URL (canonical host and
// explicit port, which is where the transport dials), no Host override, and
// the credentials of that host, port and scheme, replacing any header of
// the same name the server sent. It serves plain requests and those of an
// intercepted CONNECT alike.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	st, _ := pr.In.Context().Value(forwardKey{}).(*forwardState)
	if st == nil {
		// Not reached: forward always sets it. Send nowhere.
		pr.Out.URL = &url.URL{Scheme: "http", Host: "invalid.", Path: "/"}
		return
	}
	u := *st.u
	pr.Out.URL = &u
	secure := st.sess != nil
	pr.Out.Host = hostHeader(st.c, secure)
	for _, h := range p.creds.headers(st.c.Host, st.c.Port, secure) {
		pr.Out.Header[h.name] = []string{h.value}
	}
}

// roundTrip sends an upstream request: a session's by the session's
// transport, a plain one by the proxy's.
func (p *Proxy) roundTrip(r *http.Request) (*http.Response, error) {
	if st, _ := r.Context().Value(forwardKey{}).(*forwardState); st != nil && st.sess != nil {
		return st.sess.transport.RoundTrip(r)
	}
	return p.transport.RoundTrip(r)
}

// roundTripper makes a function an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// hostHeader is the Host header of a request to c: the canonical host,
// bracketed if IPv6, with the port unless it is the scheme's (443 over
// TLS, else 80).
func hostHeader(c capability.Capability, secure bool) string {
	def := uint16(80)
	if secure {
		def = 443
	}
	if c.Port == def {
		if c.Addr.Is6() {
			return "[" + c.Host + "]"
		}
		return c.Host
	}
	return hostPort(c.Host, c.Port)
}

// dialHTTP is the transport's dialer: address is the canonical host and
// port of a decided URL; the egress checker resolves it once and connects
// to a checked address. Every upstream connection is tracked, so that
// Close ends it.
func (p *Proxy) dialHTTP(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := capability.FromHost(address)
	if err != nil {
		return nil, err
	}
	c.Scheme = "http"
	ctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
	defer cancel()
	conn, _, err := p.checker.DialCapability(ctx, network, &c)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: conn, p: p}
	if !p.track(p.upstream, tc) {
		return nil, ErrClosed
	}
	return tc, nil
}

// trackedConn leaves the proxy's set of upstream connections when closed.
type trackedConn struct {
	net.Conn
	p *Proxy
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.p.untrack(c.p.upstream, c)
	return err
}

// forwardError answers a request the transport could not complete.
func (p *Proxy) forwardError(w http.ResponseWriter, r *http.Request, err error) {
	st, _ := r.Context().Value(forwardKey{}).(*forwardState)
	if st == nil {
		http.Error(w, "aegis egress proxy: bad gateway", http.StatusBadGateway)
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the client went away
	}
	p.dialFailed(w, st.rf, st.rf.Verdict, err, false)
}
