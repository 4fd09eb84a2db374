package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// blockingResolver returns a Go resolver whose DNS server never answers.
func blockingResolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
}

func TestControl(t *testing.T) {
	admitLoopback := Config{Admit: []Admit{{Hosts: []string{"127.0.0.0/8"}, Classes: []string{"loopback"}}}}
	tests := []struct {
		name    string
		cfg     Config
		network string
		address string
		want    Reason // Allowed for nil error
	}{
		{"public", Config{}, "tcp4", "93.184.215.14:443", Allowed},
		{"public v6", Config{}, "tcp6", "[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443", Allowed},
		{"loopback", Config{}, "tcp4", "127.0.0.1:80", BlockedAddress},
		{"loopback admitted", admitLoopback, "tcp4", "127.0.0.1:80", Allowed},
		{"loopback admitted but not v6", admitLoopback, "tcp6", "[::1]:80", BlockedAddress},
		{"mapped loopback", Config{}, "tcp6", "[::ffff:127.0.0.1]:80", BlockedAddress},
		{"nat64 metadata", Config{}, "tcp6", "[64:ff9b::a9fe:a9fe]:80", BlockedAddress},
		{"link-local with zone", Config{}, "tcp6", "[fe80::1%eth0]:80", BlockedAddress},
		{"unspecified", Config{}, "tcp4", "0.0.0.0:80", BlockedAddress},
		{"udp metadata", Config{}, "udp4", "169.254.169.254:53", BlockedAddress},
		{"unix socket", Config{}, "unix", "/run/docker.sock", BadNetwork},
		{"ip raw", Config{}, "ip4:icmp", "93.184.215.14", BadNetwork},
		{"name instead of address", Config{}, "tcp", "example.com:80", BadAddress},
		{"no port", Config{}, "tcp4", "93.184.215.14", BadAddress},
		{"empty", Config{}, "tcp4", "", BadAddress},
		// Names are not visible at connect time: the host allowlist is
		// Check's work, and Control applies address rules only.
		{"allowlist by name not applied", Config{AllowHosts: []string{"example.com"}}, "tcp4", "93.184.215.14:443", Allowed},
		{"allowlist by cidr not applied", Config{AllowHosts: []string{"10.0.0.0/8"}}, "tcp4", "93.184.215.14:443", Allowed},
		{"allowlisted cidr does not admit", Config{AllowHosts: []string{"10.0.0.0/8"}}, "tcp4", "10.0.0.1:443", BlockedAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := mustChecker(t, tt.cfg)
			err := ch.Control(tt.network, tt.address, nil)
			if tt.want == Allowed {
				if err != nil {
					t.Fatalf("Control(%s, %s) = %v, want nil", tt.network, tt.address, err)
				}
				return
			}
			var de *DenyError
			if !errors.As(err, &de) || !errors.Is(err, ErrDenied) {
				t.Fatalf("Control(%s, %s) = %v, want a DenyError", tt.network, tt.address, err)
			}
			if de.Verdict.Reason != tt.want {
				t.Errorf("reason = %v, want %v (%v)", de.Verdict.Reason, tt.want, err)
			}
		})
	}
}

// listener accepts loopback connections and reports, for each, the first
// byte the client wrote (0 when it wrote none).
type listener struct {
	net.Listener
	first chan byte
}

func listen(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{Listener: ln, first: make(chan byte, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(l.first)
				return
			}
			var b [1]byte
			if _, err := io.ReadFull(c, b[:]); err != nil {
				b[0] = 0
			}
			l.first <- b[0]
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return l
}

// assertNoConnectionBefore dials the listener with a plain dialer, writes a
// sentinel byte, and checks that the sentinel is the first connection the
// listener saw: a denied dial must not have connected first.
func (l *listener) assertNoConnectionBefore(t *testing.T) {
	t.Helper()
	c, err := net.Dial("tcp4", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte{'S'}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if b := <-l.first; b != 'S' {
		t.Fatalf("listener saw a connection (first byte %q) before the sentinel: a denied dial connected", b)
	}
}

func TestControlDialsLoopback(t *testing.T) {
	t.Run("blocked", func(t *testing.T) {
		l := listen(t)
		ch := mustChecker(t, Config{})
		d := net.Dialer{Control: ch.Control}
		c, err := d.DialContext(t.Context(), "tcp4", l.Addr().String())
		if err == nil {
			c.Close()
			t.Fatal("dial to loopback connected with loopback blocked")
		}
		if !errors.Is(err, ErrDenied) {
			t.Fatalf("dial error = %v, want ErrDenied", err)
		}
		l.assertNoConnectionBefore(t)
	})
	t.Run("admitted", func(t *testing.T) {
		l := listen(t)
		ch := mustChecker(t, Config{Admit: []Admit{{Hosts: []string{"127.0.0.1"}, Classes: []string{"loopback"}}}})
		d := net.Dialer{Control: ch.Control}
		c, err := d.DialContext(t.Context(), "tcp4", l.Addr().String())
		if err != nil {
			t.Fatalf("dial with loopback admitted: %v", err)
		}
		c.Write([]byte{'A'})
		c.Close()
		if b := <-l.first; b != 'A' {
			t.Fatalf("listener saw %q, want the admitted connection", b)
		}
	})
}

func TestDialContext(t *testing.T) {
	l := listen(t)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	hosts := map[string][]string{
		"svc.example.com":     {"127.0.0.1"},
		"rebind.example.com":  {"127.0.0.1", "10.0.0.1"},
		"public.example.com":  {"93.184.215.14"},
		"loopish.example.com": {"127.0.0.1"},
	}
	admit := []Admit{{Hosts: []string{"svc.example.com"}, Classes: []string{"loopback"}}}
	tests := []struct {
		name    string
		cfg     Config
		network string
		address string
		want    Reason // Allowed: connects
	}{
		{"admitted name", Config{Hosts: hosts, Admit: admit}, "tcp", "svc.example.com:" + port, Allowed},
		{"admitted name tcp4", Config{Hosts: hosts, Admit: admit}, "tcp4", "SVC.example.com.:" + port, Allowed},
		{"no admission", Config{Hosts: hosts}, "tcp", "loopish.example.com:" + port, BlockedAddress},
		{"literal loopback", Config{Hosts: hosts}, "tcp", "127.0.0.1:" + port, BlockedAddress},
		{"literal hex loopback", Config{Hosts: hosts}, "tcp", "0x7f.1:" + port, BlockedAddress},
		{"mixed answer", Config{Hosts: hosts, Admit: admit}, "tcp", "rebind.example.com:" + port, BlockedAddress},
		{"unresolvable", Config{Hosts: hosts}, "tcp", "nowhere.example.com:" + port, ResolveFailed},
		{"unresolvable allowed unchecked cannot dial", Config{Hosts: hosts, OnResolveError: "allow-unchecked"}, "tcp", "nowhere.example.com:" + port, ResolveFailed},
		{"no port", Config{Hosts: hosts, Admit: admit}, "tcp", "svc.example.com", BadAddress},
		{"unix", Config{Hosts: hosts, Admit: admit}, "unix", "/tmp/x.sock", BadNetwork},
		{"v6 only network for a v4 answer", Config{Hosts: hosts, Admit: admit}, "tcp6", "svc.example.com:" + port, NoAddresses},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := mustChecker(t, tt.cfg)
			c, err := ch.DialContext(t.Context(), tt.network, tt.address)
			if tt.want == Allowed {
				if err != nil {
					t.Fatalf("DialContext(%s) = %v", tt.address, err)
				}
				c.Write([]byte{'D'})
				c.Close()
				if b := <-l.first; b != 'D' {
					t.Fatalf("listener saw %q, want the dialled connection", b)
				}
				return
			}
			if err == nil {
				c.Close()
				t.Fatalf("DialContext(%s) connected, want %v", tt.address, tt.want)
			}
			var de *DenyError
			if !errors.As(err, &de) {
				t.Fatalf("DialContext(%s) = %v, want a DenyError", tt.address, err)
			}
			if de.Verdict.Reason != tt.want {
				t.Errorf("reason = %v, want %v (%v)", de.Verdict.Reason, tt.want, err)
			}
			l.assertNoConnectionBefore(t)
		})
	}
}

// TestDialContextOnlyChecked checks the connect-time hook of DialContext:
// the address the socket connects to must be one Check approved. A dialer
// that resolved again would connect elsewhere; simulate it by asking the
// hook about an address Check never saw.
func TestDialContextOnlyChecked(t *testing.T) {
	ch := mustChecker(t, Config{Hosts: map[string][]string{"svc.example.com": {"127.0.0.1"}},
		Admit: []Admit{{Hosts: []string{"svc.example.com"}, Classes: []string{"loopback"}}}})
	c, err := capability.FromHost("svc.example.com:80")
	if err != nil {
		t.Fatal(err)
	}
	v := ch.Check(t.Context(), c)
	if !v.Allow {
		t.Fatal(v)
	}
	hook := ch.checkedControl(v)
	if err := hook("tcp4", "127.0.0.1:80", nil); err != nil {
		t.Errorf("hook refused the checked address: %v", err)
	}
	for _, addr := range []string{"127.0.0.2:80", "93.184.215.14:80", "[::ffff:127.0.0.2]:80", "garbage"} {
		if err := hook("tcp4", addr, nil); !errors.Is(err, ErrDenied) {
			t.Errorf("hook(%s) = %v, want ErrDenied", addr, err)
		}
	}
	if err := hook("tcp4", "[::ffff:127.0.0.1]:80", nil); err != nil {
		t.Errorf("hook refused the mapped form of the checked address: %v", err)
	}
}

// flipResolver answers its first lookup with first and every later one
// with then: a name that rebinds between a check and a second lookup.
type flipResolver struct {
	mu          sync.Mutex
	n           int
	first, then []netip.Addr
}

func (f *flipResolver) Resolve(_ context.Context, _ string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.n == 1 {
		return f.first, nil
	}
	return f.then, nil
}

func TestDialCapability(t *testing.T) {
	l := listen(t)
	_, p, _ := net.SplitHostPort(l.Addr().String())
	port, _ := strconv.Atoi(p)
	admit := []Admit{{Hosts: []string{"svc.example.com"}, Classes: []string{"loopback"}}}
	hosts := map[string][]string{"svc.example.com": {"127.0.0.1"}}
	tests := []struct {
		name   string
		cfg    Config
		scheme string
		port   uint16
		want   Reason
	}{
		{"https allowed", Config{Hosts: hosts, Admit: admit}, "https", uint16(port), Allowed},
		{"no scheme is not checked against schemes", Config{Hosts: hosts, Admit: admit, Schemes: []string{"https"}}, "", uint16(port), Allowed},
		{"scheme refused", Config{Hosts: hosts, Admit: admit, Schemes: []string{"https"}}, "http", uint16(port), SchemeNotAllowed},
		{"no port", Config{Hosts: hosts, Admit: admit}, "https", 0, BadAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := mustChecker(t, tt.cfg)
			c := capability.Capability{Kind: capability.NetConnect, Scheme: tt.scheme, Host: "svc.example.com", Port: tt.port}
			conn, v, err := ch.DialCapability(t.Context(), "tcp", &c)
			if v.Reason != tt.want {
				t.Errorf("verdict %v, want %v", v, tt.want)
			}
			if tt.want == Allowed {
				if err != nil {
					t.Fatal(err)
				}
				conn.Write([]byte{'C'})
				conn.Close()
				if b := <-l.first; b != 'C' {
					t.Fatalf("listener saw %q", b)
				}
				return
			}
			var de *DenyError
			if !errors.As(err, &de) || de.Verdict.Reason != v.Reason {
				t.Fatalf("err = %v, want a DenyError with the verdict returned", err)
			}
			l.assertNoConnectionBefore(t)
		})
	}
}

// TestDialCapabilityResolvesOnce: a name whose second lookup answers a
// blocked address is dialled at the first answer, the one checked.
func TestDialCapabilityResolvesOnce(t *testing.T) {
	good := listen(t)
	_, p, _ := net.SplitHostPort(good.Addr().String())
	bad, err := net.Listen("tcp4", "127.0.0.2:"+p)
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2:%s: %v", p, err)
	}
	defer bad.Close()
	r := &flipResolver{first: []netip.Addr{netip.MustParseAddr("127.0.0.1")}, then: []netip.Addr{netip.MustParseAddr("127.0.0.2")}}
	ch, err := NewWithResolver(&Config{Admit: []Admit{{Hosts: []string{"127.0.0.1"}, Classes: []string{"loopback"}}}}, r)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(p)
	c := capability.Capability{Kind: capability.NetConnect, Host: "rebind.example.com", Port: uint16(port)}
	conn, _, err := ch.DialCapability(t.Context(), "tcp", &c)
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte{'1'})
	conn.Close()
	if b := <-good.first; b != '1' {
		t.Fatalf("checked address saw %q", b)
	}
	if _, _, err := ch.DialCapability(t.Context(), "tcp", &c); !errors.Is(err, ErrDenied) {
		t.Fatalf("second dial, rebound to 127.0.0.2: %v, want ErrDenied", err)
	}
	if r.n != 2 {
		t.Errorf("%d lookups for two dials, want 2", r.n)
	}
}

func TestNewWithResolver(t *testing.T) {
	if _, err := NewWithResolver(nil, nil); err == nil {
		t.Error("NewWithResolver(nil, nil) succeeded")
	}
	if _, err := NewWithResolver(&Config{Resolver: "bogus"}, Static{}); err == nil {
		t.Error("a bad config was accepted")
	}
}
