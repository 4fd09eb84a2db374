package egressproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/egress"
)

// origin is a loopback HTTP server that counts the connections it accepts
// and records the requests it serves.
type origin struct {
	ln       net.Listener
	accepted atomic.Int64
	srv      *http.Server

	mu   sync.Mutex
	reqs []*http.Request
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// newOrigin starts an origin on addr ("127.0.0.1:0") serving h, or a
// handler that answers "ok from PORT" when h is nil.
func newOrigin(t testing.TB, addr string, h http.HandlerFunc) *origin {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	o := &origin{ln: ln}
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "ok from %d", o.port()) }
	}
	o.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.reqs = append(o.reqs, r.Clone(context.Background()))
		o.mu.Unlock()
		h(w, r)
	})}
	go o.srv.Serve(countingListener{ln, &o.accepted})
	t.Cleanup(func() { o.srv.Close() })
	return o
}

func (o *origin) addr() string { return o.ln.Addr().String() }

func (o *origin) port() uint16 {
	return netip.MustParseAddrPort(o.addr()).Port()
}

func (o *origin) requests() []*http.Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*http.Request(nil), o.reqs...)
}

// rawOrigin is a loopback TCP server that counts connections and writes
// greeting to each, then echoes what it reads.
func rawOrigin(t testing.TB, addr string, greeting string) *origin {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	o := &origin{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.accepted.Add(1)
			go func() {
				defer c.Close()
				io.WriteString(c, greeting)
				io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return o
}

// recorder records what the proxy asks Decide and reports to OnRefuse.
type recorder struct {
	mu       sync.Mutex
	decided  []capability.Capability
	refusals []Refusal
}

func (r *recorder) refused() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal(nil), r.refusals...)
}

func (r *recorder) seen() []capability.Capability {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]capability.Capability(nil), r.decided...)
}

// allowPorts is a policy that allows the listed ports and denies the rest.
func (r *recorder) allowPorts(ports ...uint16) DecideFunc {
	return func(_ context.Context, c capability.Capability) (bool, string) {
		r.mu.Lock()
		r.decided = append(r.decided, c)
		r.mu.Unlock()
		for _, p := range ports {
			if c.Port == p {
				return true, ""
			}
		}
		return false, "rule test-deny: port " + strconv.Itoa(int(c.Port)) + " is not allowed"
	}
}

func (r *recorder) onRefuse(rf Refusal) {
	r.mu.Lock()
	r.refusals = append(r.refusals, rf)
	r.mu.Unlock()
}

// loopbackChecker admits loopback for 127.0.0.1 only, and resolves names
// from hosts.
func loopbackChecker(t testing.TB, hosts map[string][]string) *egress.Checker {
	t.Helper()
	ch, err := egress.New(&egress.Config{
		Resolver: "static",
		Hosts:    hosts,
		Admit:    []egress.Admit{{Hosts: []string{"127.0.0.1"}, Classes: []string{"loopback"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// startProxy starts a proxy on a loopback listener; cfg's OnRefuse, if
// unset, records into rec.
func startProxy(t testing.TB, cfg *Config, rec *recorder) (*Proxy, string) {
	t.Helper()
	if cfg.OnRefuse == nil && rec != nil {
		cfg.OnRefuse = rec.onRefuse
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })
	return p, ln.Addr().String()
}

// proxyClient is an HTTP client whose every request goes through the
// proxy at addr, following redirects.
func proxyClient(addr string) *http.Client {
	u := &url.URL{Scheme: "http", Host: addr}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}}
}

// dialConnect opens a connection to the proxy, sends CONNECT target, and
// returns the connection, a reader positioned after the response header,
// and the response.
func dialConnect(t testing.TB, proxy, target string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: reading the response: %v", target, err)
	}
	return c, br, resp
}

// body reads and closes a response body.
func body(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return string(b)
}
