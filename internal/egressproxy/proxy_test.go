package egressproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aegis-mcp/aegis/internal/egress"
)

// rawRequest sends one request line (and a Host header naming host) over
// a new connection to the proxy and returns the response.
func rawRequest(t testing.TB, proxy, method, target, host string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", method, target, host)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	return resp
}

// TestDeniedTargetReceivesNothing: whatever the spelling of the target, a
// connection the policy or the egress checker refuses is never made: the
// denied origins accept no connection.
func TestDeniedTargetReceivesNothing(t *testing.T) {
	allowed := newOrigin(t, "127.0.0.1:0", nil)
	denied := newOrigin(t, "127.0.0.1:0", nil)
	A, D := strconv.Itoa(int(allowed.port())), strconv.Itoa(int(denied.port()))
	// The same port as allowed, on an address egress does not admit.
	other := newOrigin(t, "127.0.0.2:"+A, nil)

	rec := &recorder{}
	hosts := map[string][]string{
		"good.example.com":  {"127.0.0.1"},
		"evil.example.com":  {"127.0.0.2"},
		"mixed.example.com": {"127.0.0.1", "127.0.0.2"},
		"v6.example.com":    {"::1"},
	}
	_, proxy := startProxy(t, &Config{Checker: loopbackChecker(t, hosts), Decide: rec.allowPorts(allowed.port())}, rec)

	tests := []struct {
		name     string
		method   string // CONNECT, or a method for an absolute URL
		target   string
		want     int
		stage    Stage         // of the refusal, for 403
		reason   egress.Reason // of the egress verdict, for Stage Egress
		wantHost string        // the host Decide saw, when set
	}{
		{"connect allowed", "CONNECT", "127.0.0.1:" + A, 200, 0, 0, "127.0.0.1"},
		{"connect allowed by name", "CONNECT", "good.example.com:" + A, 200, 0, 0, "good.example.com"},
		{"connect name in upper case with a dot", "CONNECT", "GOOD.example.com.:" + A, 200, 0, 0, "good.example.com"},
		{"connect hex short to allowed port", "CONNECT", "0x7f.1:" + A, 200, 0, 0, "127.0.0.1"},
		{"connect denied port", "CONNECT", "127.0.0.1:" + D, 403, Policy, 0, "127.0.0.1"},
		{"connect hex short", "CONNECT", "0x7f.1:" + D, 403, Policy, 0, "127.0.0.1"},
		{"connect mapped v6", "CONNECT", "[::ffff:127.0.0.1]:" + D, 403, Policy, 0, "127.0.0.1"},
		{"connect mapped v6 hex", "CONNECT", "[::ffff:7f00:1]:" + D, 403, Policy, 0, "127.0.0.1"},
		{"connect decimal", "CONNECT", "2130706433:" + D, 403, Policy, 0, "127.0.0.1"},
		{"connect octal", "CONNECT", "0177.0.0.1:" + D, 403, Policy, 0, "127.0.0.1"},
		{"connect short", "CONNECT", "127.1:" + D, 403, Policy, 0, "127.0.0.1"},
		{"connect hex whole", "CONNECT", "0x7f000001:" + D, 403, Policy, 0, "127.0.0.1"},
		{"connect leading zero port", "CONNECT", "127.0.0.1:0" + D, 403, Policy, 0, "127.0.0.1"},
		{"connect other loopback address", "CONNECT", "127.0.0.2:" + A, 403, Egress, egress.BlockedAddress, "127.0.0.2"},
		{"connect other loopback hex", "CONNECT", "0x7f.0.0.2:" + A, 403, Egress, egress.BlockedAddress, "127.0.0.2"},
		{"connect other loopback mapped", "CONNECT", "[::ffff:127.0.0.2]:" + A, 403, Egress, egress.BlockedAddress, "127.0.0.2"},
		{"connect v6 loopback", "CONNECT", "[::1]:" + A, 403, Egress, egress.BlockedAddress, "::1"},
		{"connect name to a blocked address", "CONNECT", "evil.example.com:" + A, 403, Egress, egress.BlockedAddress, "evil.example.com"},
		{"connect name with one blocked address", "CONNECT", "mixed.example.com:" + A, 403, Egress, egress.BlockedAddress, "mixed.example.com"},
		{"connect name to v6 loopback", "CONNECT", "v6.example.com:" + A, 403, Egress, egress.BlockedAddress, "v6.example.com"},
		{"connect localhost", "CONNECT", "localhost:" + A, 403, Egress, egress.BlockedName, "localhost"},
		{"connect unknown name", "CONNECT", "nowhere.example.com:" + A, 403, Egress, egress.ResolveFailed, "nowhere.example.com"},
		{"get allowed", "GET", "http://127.0.0.1:" + A + "/x?q=1", 200, 0, 0, "127.0.0.1"},
		{"get allowed by name", "GET", "http://good.example.com:" + A + "/", 200, 0, 0, "good.example.com"},
		{"get denied port", "GET", "http://127.0.0.1:" + D + "/", 403, Policy, 0, "127.0.0.1"},
		{"get hex short", "GET", "http://0x7f.1:" + D + "/", 403, Policy, 0, "127.0.0.1"},
		{"get decimal", "POST", "http://2130706433:" + D + "/", 403, Policy, 0, "127.0.0.1"},
		{"get mapped v6", "GET", "http://[::ffff:127.0.0.1]:" + D + "/", 403, Policy, 0, "127.0.0.1"},
		{"get other loopback", "GET", "http://127.0.0.2:" + A + "/", 403, Egress, egress.BlockedAddress, "127.0.0.2"},
		{"get name to a blocked address", "GET", "http://evil.example.com:" + A + "/", 403, Egress, egress.BlockedAddress, "evil.example.com"},
		{"get name with one blocked address", "GET", "http://mixed.example.com:" + A + "/", 403, Egress, egress.BlockedAddress, "mixed.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(rec.refused())
			var resp *http.Response
			if tt.method == "CONNECT" {
				_, _, resp = dialConnect(t, proxy, tt.target)
			} else {
				resp = rawRequest(t, proxy, tt.method, tt.target, "ignored.test")
			}
			if resp.StatusCode != tt.want {
				t.Fatalf("%s %s: status %d, want %d", tt.method, tt.target, resp.StatusCode, tt.want)
			}
			if tt.wantHost != "" {
				if seen := rec.seen(); len(seen) == 0 || seen[len(seen)-1].Host != tt.wantHost {
					t.Errorf("Decide saw %+v, want host %s", seen, tt.wantHost)
				}
			}
			refused := rec.refused()[before:]
			if tt.want != 403 {
				if len(refused) != 0 {
					t.Errorf("refusals reported for an allowed request: %+v", refused)
				}
				return
			}
			if len(refused) != 1 {
				t.Fatalf("%d refusals reported, want 1: %+v", len(refused), refused)
			}
			rf := refused[0]
			if rf.Stage != tt.stage || rf.Capability.Host != tt.wantHost {
				t.Errorf("refusal %+v, want stage %v, host %s", rf, tt.stage, tt.wantHost)
			}
			if tt.stage == Egress && rf.Verdict.Reason != tt.reason {
				t.Errorf("egress reason %v, want %v (%s)", rf.Verdict.Reason, tt.reason, rf.Reason)
			}
			if b := body(t, resp); !strings.Contains(b, rf.Reason) || strings.Contains(b, "?q=") {
				t.Errorf("403 body %q does not give the reason %q", b, rf.Reason)
			}
		})
	}
	if n := denied.accepted.Load(); n != 0 {
		t.Errorf("the denied port accepted %d connections", n)
	}
	if n := other.accepted.Load(); n != 0 {
		t.Errorf("127.0.0.2 accepted %d connections", n)
	}
}

// TestRedirectIsDecidedAgain: an allowed origin redirects to a denied one;
// the client follows the redirect through the proxy and is refused, and
// the denied origin receives nothing.
func TestRedirectIsDecidedAgain(t *testing.T) {
	denied := newOrigin(t, "127.0.0.1:0", nil)
	other := newOrigin(t, "127.0.0.2:0", nil)
	allowed := newOrigin(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	rec := &recorder{}
	hosts := map[string][]string{"evil.example.com": {"127.0.0.2"}}
	_, proxy := startProxy(t, &Config{Checker: loopbackChecker(t, hosts), Decide: rec.allowPorts(allowed.port(), other.port())}, rec)
	client := proxyClient(proxy)

	D, O := strconv.Itoa(int(denied.port())), strconv.Itoa(int(other.port()))
	for _, to := range []string{
		"http://127.0.0.1:" + D + "/secret",
		"http://0x7f.1:" + D + "/secret",
		"http://[::ffff:127.0.0.1]:" + D + "/",
		"http://evil.example.com:" + O + "/",
		"http://127.0.0.2:" + O + "/",
	} {
		t.Run(to, func(t *testing.T) {
			resp, err := client.Get(fmt.Sprintf("http://%s/go?to=%s", allowed.addr(), to))
			if err != nil {
				t.Fatal(err)
			}
			b := body(t, resp)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("following the redirect to %s: status %d (%q), want 403", to, resp.StatusCode, b)
			}
		})
	}
	if n := len(allowed.requests()); n != 5 {
		t.Errorf("allowed origin served %d requests, want 5", n)
	}
	if n := denied.accepted.Load() + other.accepted.Load(); n != 0 {
		t.Errorf("the redirect targets accepted %d connections", n)
	}
	// The proxy itself never follows a redirect: a GET of the allowed URL
	// returns the 302 as it is.
	resp := rawRequest(t, proxy, "GET", fmt.Sprintf("http://%s/go?to=http://127.0.0.1:%s/", allowed.addr(), D), "x")
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "http://127.0.0.1:"+D+"/" {
		t.Errorf("the redirect was not passed back as it was: %d %v", resp.StatusCode, resp.Header)
	}
}

// flipResolver answers its first lookup with first and every later one
// with then: a name that rebinds between two lookups.
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

func (f *flipResolver) lookups() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// TestRebinding: a name that resolves to an admitted address, then to a
// blocked one, reaches the blocked address through no path: each
// connection is resolved once and dialled at the address checked.
func TestRebinding(t *testing.T) {
	// The origin closes every connection, so that each request dials anew
	// (a kept-alive upstream connection stays with the address it was
	// checked at).
	var port string
	good := newOrigin(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "ok from "+port)
	})
	port = strconv.Itoa(int(good.port()))
	bad := newOrigin(t, "127.0.0.2:"+port, nil)
	for _, method := range []string{"CONNECT", "GET"} {
		t.Run(method, func(t *testing.T) {
			r := &flipResolver{first: []netip.Addr{netip.MustParseAddr("127.0.0.1")}, then: []netip.Addr{netip.MustParseAddr("127.0.0.2")}}
			ch, err := egress.NewWithResolver(&egress.Config{Admit: []egress.Admit{{Hosts: []string{"127.0.0.1"}, Classes: []string{"loopback"}}}}, r)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			_, proxy := startProxy(t, &Config{Checker: ch, Decide: rec.allowPorts(good.port())}, rec)
			target := "rebind.example.com:" + port
			status := func() int {
				if method == "CONNECT" {
					c, br, resp := dialConnect(t, proxy, target)
					if resp.StatusCode == 200 {
						fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: rebind.example.com\r\nConnection: close\r\n\r\n")
						inner, err := http.ReadResponse(br, nil)
						if err != nil {
							t.Fatal(err)
						}
						if b := body(t, inner); b != "ok from "+port {
							t.Fatalf("through the tunnel: %q", b)
						}
					}
					c.Close()
					return resp.StatusCode
				}
				resp := rawRequest(t, proxy, "GET", "http://"+target+"/", "x")
				body(t, resp)
				return resp.StatusCode
			}
			if s := status(); s != 200 {
				t.Fatalf("first connection: %d, want 200", s)
			}
			for i := 0; i < 3; i++ {
				if s := status(); s != 403 {
					t.Fatalf("connection %d after the name rebound: %d, want 403", i+2, s)
				}
			}
			if n := r.lookups(); n != 4 {
				t.Errorf("%d lookups for 4 connections, want one each", n)
			}
		})
	}
	if n := bad.accepted.Load(); n != 0 {
		t.Errorf("the rebound address accepted %d connections", n)
	}
}
