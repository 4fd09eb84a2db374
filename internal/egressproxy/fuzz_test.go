package egressproxy

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// FuzzTarget: whatever request net/http's parser accepts, deriving its
// target never panics, and a target the proxy accepts is canonical: a host
// CanonHost keeps as it is, a port, the scheme rule of CONNECT, and for a
// plain request an http URL on that host and port.
func FuzzTarget(f *testing.F) {
	for _, s := range []string{
		"CONNECT 0x7f.1:443 HTTP/1.1\r\n\r\n",
		"CONNECT [::ffff:127.0.0.1]:8443 HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT 2130706433:22 HTTP/1.1\r\n\r\n",
		"CONNECT user@host:443 HTTP/1.1\r\n\r\n",
		"CONNECT [fe80::1%25lo]:443 HTTP/1.1\r\n\r\n",
		"GET http://example.com/a/../b?q HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://EXAMPLE.com.:80/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://a\\@b/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://[::1]:8080/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://xn--bcher-kva.example/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST http://h/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\na",
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return
		}
		var c capability.Capability
		if r.Method == http.MethodConnect {
			if c, err = connectTarget(r); err != nil {
				return
			}
			if (c.Port == 443) != (c.Scheme == "https") || (c.Scheme != "" && c.Scheme != "https") || c.URL != "" {
				t.Fatalf("CONNECT %q: port %d, scheme %q, URL %q", r.RequestURI, c.Port, c.Scheme, c.URL)
			}
		} else {
			if c, _, err = forwardTarget(r); err != nil {
				return
			}
			u, err := capability.FromURL(c.URL)
			if err != nil || u.Host != c.Host || u.Port != c.Port || u.Scheme != "http" || u.URL != c.URL {
				t.Fatalf("%q: the decided URL %q re-derives %+v, %v", r.RequestURI, c.URL, u, err)
			}
		}
		if c.Kind != capability.NetConnect || c.Port == 0 || c.Host == "" {
			t.Fatalf("%q: accepted %+v", r.RequestURI, c)
		}
		if h, a, err := capability.CanonHost(c.Host); err != nil || h != c.Host || a != c.Addr {
			t.Fatalf("%q: host %q is not canonical (%q, %v, %v)", r.RequestURI, c.Host, h, a, err)
		}
		_ = askedTarget(r)
		_ = hostHeader(c, false)
		_ = hostHeader(c, true)
	})
}

// FuzzInterceptTarget: whatever request net/http's parser accepts inside an
// intercepted session, checking it never panics, and a request the proxy
// accepts is sent to the CONNECT's host and port and nowhere else: the
// upstream URL re-derives that host and port, over https, with no
// userinfo.
func FuzzInterceptTarget(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: api.example.com:8443\r\n\r\n",
		"GET /a?b HTTP/1.1\r\nHost: API.example.com.:8443\r\n\r\n",
		"GET //evil.example/x HTTP/1.1\r\nHost: api.example.com:8443\r\n\r\n",
		"GET https://api.example.com:8443/x HTTP/1.1\r\nHost: other\r\n\r\n",
		"GET https://evil@api.example.com:8443/x HTTP/1.1\r\nHost: api.example.com:8443\r\n\r\n",
		"GET http://api.example.com:8443/ HTTP/1.1\r\nHost: api.example.com:8443\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: api.example.com:8443@evil\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: [::1]:8443\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: api.example.com:8443\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
	} {
		f.Add(s)
	}
	c, err := capability.FromHost("api.example.com:8443")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return
		}
		u, err := interceptTarget(r, c)
		if err != nil {
			return
		}
		if u.Scheme != "https" || u.User != nil || u.Host != "api.example.com:8443" {
			t.Fatalf("%q: upstream URL %q", raw, u)
		}
		got, err := capability.FromURL(u.String())
		if err != nil {
			// A path net/url writes but the WHATWG reading refuses is
			// still sent to u.Host: the transport dials the session's host.
			return
		}
		if got.Host != c.Host || got.Port != c.Port {
			t.Fatalf("%q: upstream URL %q reads as %s:%d", raw, u, got.Host, got.Port)
		}
	})
}
