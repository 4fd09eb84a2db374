package egressproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/egress"
)

// DecideFunc is the policy's word on one connection or request: whether the
// server may open the net.connect c, and, when not, why. The reason is
// sent to the server in the refusal and MUST NOT hold a secret. It is
// called concurrently and MUST be safe for that.
type DecideFunc func(ctx context.Context, c capability.Capability) (ok bool, reason string)

// Config configures a [Proxy]. Decide is required; every other field has a
// default for its zero value.
type Config struct {
	// Checker is the egress gate every connection passes after Decide:
	// the name resolved once, every address classified, the connection
	// made to a checked address. Nil means egress.New(nil): public
	// addresses only, over http and https, names resolved by the system.
	Checker *egress.Checker

	// Decide is the policy; see [DecideFunc]. New fails without it.
	Decide DecideFunc

	// OnRefuse, if set, is told of every request the proxy refuses, from
	// the handler's goroutine; it MUST NOT block for long.
	OnRefuse func(Refusal)

	// Credentials are added to the requests for their hosts, https ones
	// by intercepting the CONNECTs to them; see [Credential].
	Credentials []Credential

	// MaxConns bounds the client connections served at once, tunnels
	// included; a connection over the bound waits to be accepted. Zero
	// means 512.
	MaxConns int
	// MaxTunnels bounds the CONNECT tunnels open at once; a CONNECT over
	// the bound is answered 503. Zero means 256.
	MaxTunnels int
	// MaxHeaderBytes bounds a request's and an upstream response's
	// header. Zero means 32 KiB.
	MaxHeaderBytes int
	// IdleTimeout closes a keep-alive connection with no request, and a
	// tunnel with no byte either way, after about this long (a tunnel:
	// between two and three times it). Zero means 2 minutes.
	IdleTimeout time.Duration
	// ReadHeaderTimeout bounds reading a request's header. Zero means
	// 30 s.
	ReadHeaderTimeout time.Duration
	// DialTimeout bounds resolving and connecting to a target. Zero means
	// 30 s.
	DialTimeout time.Duration

	// Logger receives the proxy's diagnostics (network errors, not
	// refusals: those go to OnRefuse). Nil means none.
	Logger *slog.Logger
}

// The defaults of a zero Config.
const (
	defaultMaxConns          = 512
	defaultMaxTunnels        = 256
	defaultMaxHeaderBytes    = 32 << 10
	defaultIdleTimeout       = 2 * time.Minute
	defaultReadHeaderTimeout = 30 * time.Second
	defaultDialTimeout       = 30 * time.Second
)

// ErrClosed is returned by [Proxy.ServeConn] and [Proxy.Serve] once the
// proxy is closed or shutting down.
var ErrClosed = errors.New("egressproxy: closed")

// Proxy is an HTTP forward proxy that decides every connection at dial
// time. Build one with [New]; serve it with [Proxy.Serve] or
// [Proxy.ServeConn]; stop it with [Proxy.Shutdown] or [Proxy.Close]. It
// serves one wrapped server: its Decide and Credentials are that server's.
type Proxy struct {
	checker     *egress.Checker
	decide      DecideFunc
	onRefuse    func(Refusal)
	creds       credentials
	idle        time.Duration
	dialTimeout time.Duration
	log         *slog.Logger

	srv       *http.Server
	transport *http.Transport
	forwarder *httputil.ReverseProxy

	maxHeader         int
	readHeaderTimeout time.Duration

	// The interception of https credentials' CONNECTs: ca is nil when
	// there is none; inner serves the sessions' requests, handed to it
	// through innerLn, from the first session on.
	ca        *authority
	inner     *http.Server
	innerLn   *connListener
	innerOnce sync.Once

	conns   chan struct{} // a slot per client connection served
	tunnels chan struct{} // a slot per open tunnel

	connLnOnce sync.Once
	connLn     *connListener
	serveWG    sync.WaitGroup // the goroutine serving connLn

	mu       sync.Mutex
	stopping bool                  // no new tunnel
	closed   bool                  // every connection is being closed
	upstream map[net.Conn]struct{} // every upstream connection open
	clients  map[net.Conn]struct{} // the client side of every tunnel
	done     chan struct{}         // closed by Close and Shutdown
	work     sync.WaitGroup        // tunnels running; Add under mu, while !stopping

	closing atomic.Bool
}

// New builds a proxy from cfg. It fails when cfg is nil, Decide is unset,
// a bound is negative, or a credential is invalid; the error names the
// field.
func New(cfg *Config) (*Proxy, error) {
	if cfg == nil || cfg.Decide == nil {
		return nil, errors.New("egressproxy: Config.Decide is required: the proxy decides every connection with the server's policy")
	}
	for _, b := range []struct {
		name string
		v    int64
	}{
		{"MaxConns", int64(cfg.MaxConns)},
		{"MaxTunnels", int64(cfg.MaxTunnels)},
		{"MaxHeaderBytes", int64(cfg.MaxHeaderBytes)},
		{"IdleTimeout", int64(cfg.IdleTimeout)},
		{"ReadHeaderTimeout", int64(cfg.ReadHeaderTimeout)},
		{"DialTimeout", int64(cfg.DialTimeout)},
	} {
		if b.v < 0 {
			return nil, fmt.Errorf("egressproxy: %s is negative", b.name)
		}
	}
	creds, err := compileCredentials(cfg.Credentials)
	if err != nil {
		return nil, fmt.Errorf("egressproxy: %w", err)
	}
	p := &Proxy{
		checker:     cfg.Checker,
		decide:      cfg.Decide,
		onRefuse:    cfg.OnRefuse,
		creds:       creds,
		idle:        or(cfg.IdleTimeout, defaultIdleTimeout),
		dialTimeout: or(cfg.DialTimeout, defaultDialTimeout),
		log:         cfg.Logger,
		conns:       make(chan struct{}, or(cfg.MaxConns, defaultMaxConns)),
		tunnels:     make(chan struct{}, or(cfg.MaxTunnels, defaultMaxTunnels)),
		upstream:    map[net.Conn]struct{}{},
		clients:     map[net.Conn]struct{}{},
		done:        make(chan struct{}),
	}
	if p.checker == nil {
		if p.checker, err = egress.New(nil); err != nil {
			return nil, fmt.Errorf("egressproxy: the default egress checker: %w", err)
		}
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	maxHeader := or(cfg.MaxHeaderBytes, defaultMaxHeaderBytes)
	p.maxHeader = maxHeader
	p.readHeaderTimeout = or(cfg.ReadHeaderTimeout, defaultReadHeaderTimeout)
	errLog := slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	p.srv = &http.Server{
		Handler:                      p,
		ReadHeaderTimeout:            p.readHeaderTimeout,
		IdleTimeout:                  p.idle,
		MaxHeaderBytes:               maxHeader,
		DisableGeneralOptionsHandler: true,
		Protocols:                    &protocols,
		ErrorLog:                     errLog,
	}
	if hosts := creds.tlsHosts(); len(hosts) > 0 {
		if p.ca, err = newAuthority(hosts, time.Now()); err != nil {
			return nil, fmt.Errorf("egressproxy: the CA of the https credentials: %w", err)
		}
		p.innerLn = &connListener{conns: make(chan net.Conn), done: make(chan struct{})}
		p.inner = &http.Server{
			Handler:                      http.HandlerFunc(p.serveIntercepted),
			ReadHeaderTimeout:            p.readHeaderTimeout,
			IdleTimeout:                  p.idle,
			MaxHeaderBytes:               maxHeader,
			DisableGeneralOptionsHandler: true,
			Protocols:                    &protocols,
			ErrorLog:                     errLog,
			ConnContext: func(ctx context.Context, c net.Conn) context.Context {
				if ic, ok := c.(*interceptConn); ok {
					return context.WithValue(ctx, sessionKey{}, ic.s)
				}
				return ctx
			},
		}
	}
	p.transport = &http.Transport{
		Proxy:                  nil, // never another proxy: connect where we checked
		DialContext:            p.dialHTTP,
		DisableCompression:     true, // pass the client's Accept-Encoding as it is
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        p.idle,
		MaxResponseHeaderBytes: int64(maxHeader),
		Protocols:              &protocols,
	}
	p.forwarder = &httputil.ReverseProxy{
		Rewrite:      p.rewrite,
		Transport:    roundTripper(p.roundTrip),
		ErrorHandler: p.forwardError,
		ErrorLog:     errLog,
	}
	return p, nil
}

// CACert returns the PEM certificate of the proxy's ephemeral CA, which
// issued the certificates it answers intercepted CONNECTs with; nil when
// no credential is https. The server's TLS clients MUST trust it for
// their credentials' hosts to work; its name constraints confine it to
// those hosts. Its key signed those certificates in New and is gone.
func (p *Proxy) CACert() []byte {
	if p.ca == nil {
		return nil
	}
	return slices.Clone(p.ca.certPEM)
}

// or returns v, or def when v is zero.
func or[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Serve accepts connections on ln and serves them until the proxy is closed;
// it closes ln then. It may be called for several listeners at once. It
// returns [ErrClosed] after Close or Shutdown, or the error that stopped
// ln.
func (p *Proxy) Serve(ln net.Listener) error {
	if p.closing.Load() {
		ln.Close()
		return ErrClosed
	}
	err := p.srv.Serve(&limitListener{Listener: ln, slots: p.conns, done: p.done})
	if errors.Is(err, http.ErrServerClosed) || p.closing.Load() {
		return ErrClosed
	}
	return err
}

// ServeConn hands the proxy one client connection, which it serves and
// closes. It returns once the proxy has taken c — at once, unless MaxConns
// connections are being served, when it waits for a slot — or, with
// [ErrClosed], once the proxy is closed; c is closed then. A sandbox bridge
// calls it for each connection it accepts.
func (p *Proxy) ServeConn(c net.Conn) error {
	p.connLnOnce.Do(func() {
		p.connLn = &connListener{conns: make(chan net.Conn), done: make(chan struct{})}
		if p.closing.Load() {
			p.connLn.Close()
			return
		}
		p.serveWG.Add(1)
		go func() {
			defer p.serveWG.Done()
			p.srv.Serve(&limitListener{Listener: p.connLn, slots: p.conns, done: p.done})
		}()
	})
	select {
	case p.connLn.conns <- c:
		return nil
	case <-p.connLn.done:
		c.Close()
		return ErrClosed
	}
}

// Shutdown stops the proxy gracefully: it stops accepting, closes idle
// connections, and waits for requests and tunnels in flight to end, until
// ctx is done; then it closes what is left, as [Proxy.Close] does, and
// returns ctx's error.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.beginClose()
	err := p.srv.Shutdown(ctx)
	if p.inner != nil {
		// Idle sessions end now; busy ones after their request.
		if ierr := p.inner.Shutdown(ctx); err == nil {
			err = ierr
		}
	}
	tunnelsDone := make(chan struct{})
	go func() {
		p.work.Wait()
		close(tunnelsDone)
	}()
	select {
	case <-tunnelsDone:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	p.Close()
	return err
}

// Close stops the proxy at once: listeners, client connections, tunnels
// and upstream connections are closed, and Close returns once every
// tunnel's goroutines have ended. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.beginClose()
	err := p.srv.Close()
	if p.inner != nil {
		p.inner.Close()
		p.innerLn.Close()
	}
	p.mu.Lock()
	p.closed = true
	open := make([]net.Conn, 0, len(p.upstream)+len(p.clients))
	for c := range p.upstream {
		open = append(open, c)
	}
	for c := range p.clients {
		open = append(open, c)
	}
	p.mu.Unlock()
	// Closed without p.mu: a trackedConn's Close takes it.
	for _, c := range open {
		c.Close()
	}
	p.transport.CloseIdleConnections()
	p.work.Wait()
	p.serveWG.Wait()
	return err
}

// beginClose makes new connections fail and stops ServeConn.
func (p *Proxy) beginClose() {
	if p.closing.Swap(true) {
		return
	}
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	close(p.done)
	p.connLnOnce.Do(func() {
		p.connLn = &connListener{conns: make(chan net.Conn), done: make(chan struct{})}
	})
	p.connLn.Close()
}

// begin counts a tunnel in p.work; it reports false once the proxy is
// stopping.
func (p *Proxy) begin() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return false
	}
	p.work.Add(1)
	return true
}

// track adds an upstream connection to the set Close closes; it reports
// false, and closes c, when the proxy is already closed.
func (p *Proxy) track(set map[net.Conn]struct{}, c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	set[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(set map[net.Conn]struct{}, c net.Conn) {
	p.mu.Lock()
	delete(set, c)
	p.mu.Unlock()
}

// ServeHTTP serves one request of a client connection: a CONNECT opens a
// tunnel, an absolute-form http request is forwarded, anything else is
// refused.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	p.forward(w, r)
}
