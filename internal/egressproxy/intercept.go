package egressproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/egress"
)

// An intercepted CONNECT is one to the host and port of an https
// credential. The proxy dials the host as it dials a tunnel's (decided,
// checked, recorded), makes its own TLS connection to it, verified, and
// only then answers 200; it then answers the server's TLS with the host's
// certificate from the proxy's CA and hands the connection to p.inner, an
// HTTP/1.1 server whose handler is serveIntercepted: each request is
// checked to be for the CONNECT's host, given the credential by the same
// rewrite as a plain request, and sent upstream by the session's
// transport, response streamed back. net/http reads every request, as it
// does the outer ones: the proxy still parses no HTTP itself.

// session is one intercepted CONNECT.
type session struct {
	p      *Proxy
	c      capability.Capability // as decided
	rf     Refusal
	target *credTarget
	leaf   *tls.Certificate

	// transport sends the session's requests upstream, over connections
	// dialled by dialTLS: at most one at a time, as the client sends one
	// request at a time.
	transport *http.Transport

	mu    sync.Mutex
	first net.Conn // the connection dialled before the 200, until the transport takes it
}

// sessionKey carries a session from p.inner's ConnContext to its handler.
type sessionKey struct{}

// interceptConn is the client's side of a session as p.inner serves it: the
// TLS connection, the session, and done, closed once the server closes it.
type interceptConn struct {
	net.Conn
	s    *session
	once sync.Once
	done chan struct{}
}

func (c *interceptConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.done) })
	return err
}

// bufferedConn reads what the outer server had buffered first.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// intercept serves a CONNECT to c, whose credentials are t, once decided.
// The caller holds a tunnel slot and p.work.
func (p *Proxy) intercept(w http.ResponseWriter, r *http.Request, c capability.Capability, rf Refusal, t *credTarget) {
	s := &session{p: p, c: c, rf: rf, target: t, leaf: p.ca.leaves[c.Host]}
	if s.leaf == nil {
		// Not reached: New issues a certificate for every https host.
		p.refuse(w, http.StatusBadGateway, Refusal{Target: rf.Target, Capability: c, Stage: Request, Reason: "no certificate for the host"}, true)
		return
	}
	up, v, err := s.dialUpstream(r.Context())
	if err != nil {
		p.dialFailed(w, rf, v, err, true)
		return
	}
	s.first = up
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	s.transport = &http.Transport{
		Proxy:                  nil,
		DialTLSContext:         s.dialTLS,
		DialContext:            refuseDial,
		DisableCompression:     true,
		MaxIdleConnsPerHost:    1,
		IdleConnTimeout:        p.idle,
		MaxResponseHeaderBytes: int64(p.maxHeader),
		Protocols:              &protocols,
	}
	defer func() {
		s.transport.CloseIdleConnections()
		s.mu.Lock()
		first := s.first
		s.first = nil
		s.mu.Unlock()
		if first != nil {
			first.Close()
		}
	}()

	client, buf, ok := p.establish(w)
	if !ok {
		return
	}
	defer func() {
		client.Close()
		p.untrack(p.clients, client)
	}()
	var raw net.Conn = client
	if buf.Reader.Buffered() > 0 {
		raw = &bufferedConn{Conn: client, r: buf.Reader}
	}
	tc := tls.Server(raw, s.serverConfig())
	tc.SetDeadline(time.Now().Add(p.readHeaderTimeout))
	if err := tc.HandshakeContext(r.Context()); err != nil {
		p.log.Debug("egress proxy: TLS handshake with the server", "target", rf.Target, "err", err)
		return
	}
	tc.SetDeadline(time.Time{})
	ic := &interceptConn{Conn: tc, s: s, done: make(chan struct{})}
	p.innerOnce.Do(func() {
		p.serveWG.Add(1)
		go func() {
			defer p.serveWG.Done()
			p.inner.Serve(p.innerLn)
		}()
	})
	select {
	case p.innerLn.conns <- ic:
	case <-p.innerLn.done:
		return
	case <-p.done:
		return
	}
	select {
	case <-ic.done:
	case <-p.done:
		// Close and Shutdown end the session through p.inner.
		<-ic.done
	}
}

// refuseDial is the session transport's plain dialer: never used, since
// every request it sends is https.
func refuseDial(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("egress proxy: a plain connection from an intercepted session")
}

// serverConfig answers the server's TLS: the host's certificate, HTTP/1.1
// only, and a server name, if the client sends one, that is the host.
func (s *session) serverConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName != "" {
				if h, _, err := capability.CanonHost(hello.ServerName); err != nil || h != s.c.Host {
					return nil, errors.New("the server name is not the CONNECT's host")
				}
			}
			return s.leaf, nil
		},
	}
}

// dialUpstream dials the session's host through the egress checker, as a
// tunnel is dialled, and makes a TLS connection over it, verified against
// the credential's roots (nil: the system's) for the host's name.
func (s *session) dialUpstream(ctx context.Context) (net.Conn, egress.Verdict, error) {
	p := s.p
	ctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
	defer cancel()
	c := s.c
	conn, v, err := p.checker.DialCapability(ctx, "tcp", &c)
	if err != nil {
		return nil, v, err
	}
	tr := &trackedConn{Conn: conn, p: p}
	if !p.track(p.upstream, tr) {
		return nil, v, ErrClosed
	}
	tc := tls.Client(tr, &tls.Config{
		ServerName: s.c.Host,
		RootCAs:    s.target.roots,
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	if err := tc.HandshakeContext(ctx); err != nil {
		tc.Close()
		return nil, v, err
	}
	return tc, v, nil
}

// dialTLS is the session transport's dialer: the connection dialled before
// the 200 first, then, when the host closed it, a new one, decided again
// as every connection is. addr is ignored: the session dials its host.
func (s *session) dialTLS(ctx context.Context, _, _ string) (net.Conn, error) {
	s.mu.Lock()
	first := s.first
	s.first = nil
	s.mu.Unlock()
	if first != nil {
		return first, nil
	}
	if ok, reason := s.p.decide(ctx, s.c); !ok {
		return nil, &deniedError{reason: reasonOr(reason, "denied by policy")}
	}
	conn, _, err := s.dialUpstream(ctx)
	return conn, err
}

// deniedError is the policy's refusal of a session's new connection.
type deniedError struct{ reason string }

func (e *deniedError) Error() string { return "denied by policy: " + e.reason }

// innerMethods lists forwardMethods for a 405 inside a session.
const innerMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"

// serveIntercepted serves one request of a session: one of forwardMethods,
// for the CONNECT's host and port, forwarded as a plain request is, with
// the https credential.
func (p *Proxy) serveIntercepted(w http.ResponseWriter, r *http.Request) {
	s, _ := r.Context().Value(sessionKey{}).(*session)
	if s == nil {
		// Not reached: ConnContext sets it for every connection.
		http.Error(w, "aegis egress proxy: no session", http.StatusInternalServerError)
		return
	}
	if !forwardMethods[r.Method] {
		w.Header().Set("Allow", innerMethods)
		rf := s.rf
		rf.Stage, rf.Reason = Request, "method "+r.Method+" is not forwarded"
		p.refuse(w, http.StatusMethodNotAllowed, rf, false)
		return
	}
	u, err := interceptTarget(r, s.c)
	if err != nil {
		rf := s.rf
		rf.Stage, rf.Reason = Request, err.Error()
		p.refuse(w, http.StatusMisdirectedRequest, rf, true)
		return
	}
	// A host may answer while the server is still sending (a streamed
	// exchange): net/http's HTTP/1 server would otherwise read the whole
	// request body before the first byte of the answer.
	http.NewResponseController(w).EnableFullDuplex()
	st := &forwardState{c: s.c, u: u, rf: s.rf, sess: s}
	p.forwarder.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardKey{}, st)))
}

// interceptTarget returns the upstream URL of a request inside a session
// to c: its target MUST be origin-form (or absolute-form https:// without
// userinfo), and its host (the Host header, or the absolute URL's) MUST
// be c's host and port, the port omitted only for 443. A request for any
// other host would otherwise be sent to c with c's credential.
func interceptTarget(r *http.Request, c capability.Capability) (*url.URL, error) {
	switch {
	case r.URL == nil:
		return nil, errTarget("no target")
	case strings.HasPrefix(r.RequestURI, "/"):
		if r.URL.IsAbs() || r.URL.Host != "" {
			return nil, errTarget("the target is not a path")
		}
	case r.URL.IsAbs():
		if r.URL.Scheme != "https" || r.URL.User != nil || r.URL.Opaque != "" {
			return nil, errTarget("the target is not an https:// URL without userinfo")
		}
	default:
		return nil, errTarget("the target is not a path")
	}
	h, err := capability.FromHost(r.Host)
	if err != nil {
		return nil, errTarget("Host: " + err.Error())
	}
	if h.Port == 0 {
		h.Port = 443
	}
	if h.Host != c.Host || h.Port != c.Port {
		return nil, errTarget("Host " + clip(r.Host) + " is not the CONNECT's host")
	}
	return &url.URL{Scheme: "https", Host: hostPort(c.Host, c.Port), Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}, nil
}
