package egressproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// tlsOrigin is a loopback HTTPS server (httptest's certificate: example.com,
// 127.0.0.1 and ::1) that records the requests it serves.
type tlsOrigin struct {
	srv   *httptest.Server
	roots *x509.CertPool // its certificate, to verify it by

	mu   sync.Mutex
	reqs []*http.Request
}

func newTLSOrigin(t testing.TB, h http.HandlerFunc) *tlsOrigin {
	t.Helper()
	o := &tlsOrigin{}
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "tls origin") }
	}
	o.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.reqs = append(o.reqs, r.Clone(r.Context()))
		o.mu.Unlock()
		h(w, r)
	}))
	o.srv.StartTLS()
	t.Cleanup(o.srv.Close)
	o.roots = x509.NewCertPool()
	o.roots.AddCert(o.srv.Certificate())
	return o
}

func (o *tlsOrigin) port() uint16 {
	return netip.MustParseAddrPort(o.srv.Listener.Addr().String()).Port()
}

func (o *tlsOrigin) requests() []*http.Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*http.Request(nil), o.reqs...)
}

// exampleHosts resolves the test names to loopback.
var exampleHosts = map[string][]string{"example.com": {"127.0.0.1"}, "api.example.com": {"127.0.0.1"}, "other.example.com": {"127.0.0.1"}, "api.example.net": {"127.0.0.1"}}

// httpsClient is an HTTP client through the proxy at addr that trusts
// roots only.
func httpsClient(addr string, roots *x509.CertPool) *http.Client {
	u := &url.URL{Scheme: "http", Host: addr}
	return &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(u),
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}}
}

// caPool is a pool holding the proxy's CA only.
func caPool(t testing.TB, p *Proxy) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.CACert()) {
		t.Fatal("the proxy's CACert holds no certificate")
	}
	return pool
}

// TestInterceptAddsCredential: an https request through the proxy to a
// credential's host reaches the host with the credential, whatever the
// server sent in its place, on every request of a keep-alive connection,
// bodies streamed both ways; the server's client saw a certificate for the
// host chained to the proxy's CA, not the host's own.
func TestInterceptAddsCredential(t *testing.T) {
	api := newTLSOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			// Echo the body back, streamed: each line flushed as read.
			http.NewResponseController(w).EnableFullDuplex()
			br := bufio.NewReader(r.Body)
			for {
				line, err := br.ReadString('\n')
				io.WriteString(w, strings.ToUpper(line))
				w.(http.Flusher).Flush()
				if err != nil {
					return
				}
			}
		}
		fmt.Fprintf(w, "api %s", r.URL.RequestURI())
	})
	rec := &recorder{}
	p, proxy := startProxy(t, &Config{
		Checker: loopbackChecker(t, exampleHosts),
		Decide:  rec.allowPorts(api.port()),
		Credentials: []Credential{
			{Host: "Example.COM", Port: api.port(), Value: secret, RootCAs: api.roots},
			{Host: "example.com", Port: api.port(), Header: "X-Api-Key", Value: "k3y"},
		},
	}, rec)
	client := httpsClient(proxy, caPool(t, p))
	base := "https://example.com:" + strconv.Itoa(int(api.port()))

	for i := range 2 {
		req, _ := http.NewRequest("GET", base+"/get?n="+strconv.Itoa(i), nil)
		req.Header.Set("Authorization", "Bearer from-the-server")
		req.Header.Set("X-Api-Key", "from-the-server")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := body(t, resp), "api /get?n="+strconv.Itoa(i); got != want {
			t.Errorf("body %q, want %q", got, want)
		}
		chain := resp.TLS.VerifiedChains[0]
		if leaf := chain[0]; len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "example.com" || leaf.Equal(api.srv.Certificate()) {
			t.Errorf("the client saw the certificate of %v (the host's own: %v)", leaf.DNSNames, leaf.Equal(api.srv.Certificate()))
		}
		if ca := chain[len(chain)-1]; !bytes.Equal(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), p.CACert()) {
			t.Errorf("the chain ends at %s, not the proxy's CA", ca.Subject)
		}
	}

	// A streamed upload, answered as it arrives: the proxy buffers
	// neither body.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", base+"/stream", pr)
	respc := make(chan *http.Response, 1)
	errc := make(chan error, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			errc <- err
			return
		}
		respc <- resp
	}()
	io.WriteString(pw, "first\n")
	var resp *http.Response
	select {
	case resp = <-respc:
	case err := <-errc:
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); line != "FIRST\n" {
		t.Fatalf("the first streamed line: %q, %v", line, err)
	}
	io.WriteString(pw, "second\n")
	if line, err := br.ReadString('\n'); line != "SECOND\n" {
		t.Fatalf("the second streamed line: %q, %v", line, err)
	}
	pw.Close()
	resp.Body.Close()

	reqs := api.requests()
	if len(reqs) != 3 {
		t.Fatalf("the host served %d requests, want 3", len(reqs))
	}
	for _, r := range reqs {
		if got := r.Header.Values("Authorization"); len(got) != 1 || got[0] != secret {
			t.Errorf("%s %s: Authorization %q, want the credential", r.Method, r.URL, got)
		}
		if got := r.Header.Values("X-Api-Key"); len(got) != 1 || got[0] != "k3y" {
			t.Errorf("%s %s: X-Api-Key %q, want the credential", r.Method, r.URL, got)
		}
		if want := "example.com:" + strconv.Itoa(int(api.port())); r.Host != want {
			t.Errorf("%s %s: Host %q, want %q", r.Method, r.URL, r.Host, want)
		}
	}
	for _, c := range rec.seen() {
		if c.Host != "example.com" || c.Scheme != "https" || c.URL != "" {
			t.Errorf("decided %+v, want the CONNECT's host with scheme https", c)
		}
	}
}

// tlsSession opens an intercepted session to target through proxy, and
// returns the server's side of it: a TLS connection trusting roots.
func tlsSession(t testing.TB, proxy, target string, roots *x509.CertPool, serverName string) (*tls.Conn, error) {
	t.Helper()
	c, br, resp := dialConnect(t, proxy, target)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("CONNECT %s: %s", target, resp.Status)
	}
	if br.Buffered() > 0 {
		t.Fatal("bytes after the 200")
	}
	tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: serverName, NextProtos: []string{"h2", "http/1.1"}})
	if err := tc.Handshake(); err != nil {
		return nil, err
	}
	return tc, nil
}

// TestInterceptRefusesOtherHosts: inside a session, a request for another
// host than the CONNECT's — by its Host header, an absolute target, a
// port, an address, or a method the proxy does not forward — is refused
// and never reaches the host, with or without the credential; a TLS
// server name for another host is refused at the handshake; the session
// speaks HTTP/1.1 only.
func TestInterceptRefusesOtherHosts(t *testing.T) {
	api := newTLSOrigin(t, nil)
	rec := &recorder{}
	p, proxy := startProxy(t, &Config{
		Checker:     loopbackChecker(t, exampleHosts),
		Decide:      rec.allowPorts(api.port()),
		Credentials: []Credential{{Host: "example.com", Port: api.port(), Value: secret, RootCAs: api.roots}},
	}, rec)
	roots := caPool(t, p)
	P := strconv.Itoa(int(api.port()))
	target := "example.com:" + P

	tests := []struct {
		name, request string
		want          int
	}{
		{"another host", "GET / HTTP/1.1\r\nHost: other.example.com:" + P + "\r\n\r\n", http.StatusMisdirectedRequest},
		{"another port", "GET / HTTP/1.1\r\nHost: example.com:1\r\n\r\n", http.StatusMisdirectedRequest},
		{"no port, so 443", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", http.StatusMisdirectedRequest},
		{"the address", "GET / HTTP/1.1\r\nHost: 127.0.0.1:" + P + "\r\n\r\n", http.StatusMisdirectedRequest},
		{"absolute, another host", "GET https://other.example.com:" + P + "/ HTTP/1.1\r\nHost: " + target + "\r\n\r\n", http.StatusMisdirectedRequest},
		{"absolute http", "GET http://" + target + "/ HTTP/1.1\r\nHost: " + target + "\r\n\r\n", http.StatusMisdirectedRequest},
		{"absolute with userinfo", "GET https://u@" + target + "/ HTTP/1.1\r\nHost: " + target + "\r\n\r\n", http.StatusMisdirectedRequest},
		{"asterisk", "OPTIONS * HTTP/1.1\r\nHost: " + target + "\r\n\r\n", http.StatusMisdirectedRequest},
		{"HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n", http.StatusMisdirectedRequest},
		{"TRACE", "TRACE / HTTP/1.1\r\nHost: " + target + "\r\n\r\n", http.StatusMethodNotAllowed},
		{"CONNECT inside", "CONNECT other.example.com:443 HTTP/1.1\r\nHost: other.example.com:443\r\n\r\n", http.StatusMethodNotAllowed},
		{"two Hosts", "GET / HTTP/1.1\r\nHost: " + target + "\r\nHost: other.example.com\r\n\r\n", http.StatusBadRequest},
		{"the host, with a trailing dot and upper case", "GET / HTTP/1.1\r\nHost: EXAMPLE.com.:" + P + "\r\n\r\n", http.StatusOK},
		{"the host, absolute", "GET https://example.com:" + P + "/x HTTP/1.1\r\nHost: other.example.com\r\n\r\n", http.StatusOK},
	}
	served := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc, err := tlsSession(t, proxy, target, roots, "example.com")
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.ConnectionState().NegotiatedProtocol; got != "http/1.1" {
				t.Errorf("ALPN %q, want http/1.1", got)
			}
			io.WriteString(tc, tt.request)
			resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
			if err != nil {
				t.Fatal(err)
			}
			b := body(t, resp)
			if resp.StatusCode != tt.want {
				t.Errorf("status %d (%s), want %d", resp.StatusCode, b, tt.want)
			}
			if tt.want == http.StatusOK {
				served++
			}
		})
	}
	if n := len(api.requests()); n != served {
		t.Errorf("the host served %d requests, want %d", n, served)
	}
	for _, r := range api.requests() {
		if r.Host != target || r.Header.Get("Authorization") != secret {
			t.Errorf("the host saw Host %q, Authorization %q", r.Host, r.Header.Get("Authorization"))
		}
	}
	if _, err := tlsSession(t, proxy, target, roots, "other.example.com"); err == nil {
		t.Error("a TLS server name for another host was answered")
	}
}

// TestInterceptOnlyCredentialHosts: a CONNECT to any other host and port
// is an opaque tunnel — the server's client sees the host's own
// certificate and the host no credential — and a plain http:// request
// to the https credential's own host and port gets no credential either,
// so the token never crosses the network in clear.
func TestInterceptOnlyCredentialHosts(t *testing.T) {
	api := newTLSOrigin(t, nil)
	plain := newOrigin(t, "127.0.0.1:0", nil)
	rec := &recorder{}
	_, proxy := startProxy(t, &Config{
		Checker: loopbackChecker(t, exampleHosts),
		Decide:  rec.allowPorts(api.port(), plain.port()),
		Credentials: []Credential{
			{Host: "api.example.com", Port: api.port(), Value: secret, RootCAs: api.roots},
			{Host: "example.com", Port: plain.port(), Value: secret},
		},
	}, rec)
	P := strconv.Itoa(int(api.port()))
	for _, target := range []string{"example.com:" + P, "127.0.0.1:" + P, "other.example.com:" + P} {
		t.Run(target, func(t *testing.T) {
			tc, err := tlsSession(t, proxy, target, api.roots, "example.com")
			if err != nil {
				t.Fatal(err)
			}
			if peer := tc.ConnectionState().PeerCertificates[0]; !peer.Equal(api.srv.Certificate()) {
				t.Errorf("the tunnel to %s showed %v, not the host's own certificate", target, peer.Subject)
			}
			fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target)
			resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
			if err != nil {
				t.Fatal(err)
			}
			body(t, resp)
		})
	}
	resp, err := proxyClient(proxy).Get("http://example.com:" + strconv.Itoa(int(plain.port())) + "/")
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	for _, r := range append(api.requests(), plain.requests()...) {
		if a := r.Header.Get("Authorization"); a != "" {
			t.Errorf("%s (Host %s) got Authorization %q", r.URL, r.Host, a)
		}
	}
	if n := len(api.requests()) + len(plain.requests()); n != 4 {
		t.Errorf("the hosts served %d requests, want 4", n)
	}
}

// TestInterceptVerifiesUpstream: a host whose certificate does not verify
// — signed by no root the credential trusts, or for another name — is
// refused at the CONNECT, 502 with an upstream refusal, and is sent no
// request: the proxy never falls back to an unverified connection.
func TestInterceptVerifiesUpstream(t *testing.T) {
	api := newTLSOrigin(t, nil)
	// A root that is not the host's: another CA for the same name.
	other, err := newAuthority([]string{"example.com"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	stranger := x509.NewCertPool()
	stranger.AppendCertsFromPEM(other.certPEM)
	P := strconv.Itoa(int(api.port()))
	tests := []struct {
		name string
		cred Credential
	}{
		{"the system's roots", Credential{Host: "example.com", Port: api.port(), Value: secret}},
		{"another root", Credential{Host: "example.com", Port: api.port(), Value: secret, RootCAs: stranger}},
		// httptest's certificate is for example.com and *.example.com.
		{"another name", Credential{Host: "api.example.net", Port: api.port(), Value: secret, RootCAs: api.roots}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			_, proxy := startProxy(t, &Config{
				Checker:     loopbackChecker(t, exampleHosts),
				Decide:      rec.allowPorts(api.port()),
				Credentials: []Credential{tt.cred},
			}, rec)
			before := len(api.requests())
			_, _, resp := dialConnect(t, proxy, tt.cred.Host+":"+P)
			b := body(t, resp)
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(b, "certificate") {
				t.Errorf("CONNECT: %d %q, want 502 naming the certificate", resp.StatusCode, b)
			}
			rf := rec.refused()
			if len(rf) != 1 || rf[0].Stage != Upstream {
				t.Errorf("refusals %+v, want one at the upstream stage", rf)
			}
			if n := len(api.requests()) - before; n != 0 {
				t.Errorf("the host served %d requests", n)
			}
		})
	}
}

// TestInterceptDecidesEveryConnection: a session's CONNECT is decided, and
// so is each new connection to the host when the host closed the last
// one; a policy that refuses the CONNECT gets no connection at all.
func TestInterceptDecidesEveryConnection(t *testing.T) {
	api := newTLSOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		fmt.Fprint(w, "bye")
	})
	rec := &recorder{}
	p, proxy := startProxy(t, &Config{
		Checker:     loopbackChecker(t, exampleHosts),
		Decide:      rec.allowPorts(api.port()),
		Credentials: []Credential{{Host: "example.com", Port: api.port(), Value: secret, RootCAs: api.roots}},
	}, rec)
	P := strconv.Itoa(int(api.port()))
	tc, err := tlsSession(t, proxy, "example.com:"+P, caPool(t, p), "example.com")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(tc)
	for i := range 3 {
		fmt.Fprintf(tc, "GET /%d HTTP/1.1\r\nHost: example.com:%s\r\n\r\n", i, P)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b := body(t, resp); b != "bye" {
			t.Errorf("request %d: %d %q", i, resp.StatusCode, b)
		}
	}
	if n := len(rec.seen()); n != 3 {
		t.Errorf("%d decisions for 3 connections", n)
	}
	if n := len(api.requests()); n != 3 {
		t.Errorf("the host served %d requests, want 3", n)
	}

	// Refused: no connection.
	rec2 := &recorder{}
	_, proxy2 := startProxy(t, &Config{
		Checker:     loopbackChecker(t, exampleHosts),
		Decide:      rec2.allowPorts(),
		Credentials: []Credential{{Host: "example.com", Port: api.port(), Value: secret, RootCAs: api.roots}},
	}, rec2)
	_, _, resp := dialConnect(t, proxy2, "example.com:"+P)
	body(t, resp)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a refused CONNECT: %d", resp.StatusCode)
	}
	if n := len(api.requests()); n != 3 {
		t.Errorf("the host served %d requests after a refused CONNECT", n)
	}
}

// TestCAStaysInMemory: the proxy's CA is a name-constrained ECDSA P-256
// certificate of short validity, handed out as a certificate only; the
// proxy holds no key for it (the hosts' key is another), and nothing is
// written to the temp or home directory.
func TestCAStaysInMemory(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	t.Setenv("HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", dir)
	api := newTLSOrigin(t, nil)
	rec := &recorder{}
	p, proxy := startProxy(t, &Config{
		Checker: loopbackChecker(t, exampleHosts),
		Decide:  rec.allowPorts(api.port()),
		Credentials: []Credential{
			{Host: "example.com", Port: api.port(), Value: secret, RootCAs: api.roots},
			{Host: "10.1.2.3", Value: secret},
		},
	}, rec)
	resp, err := httpsClient(proxy, caPool(t, p)).Get("https://example.com:" + strconv.Itoa(int(api.port())))
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)

	block, rest := pem.Decode(p.CACert())
	if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("CACert is not one PEM certificate: %q", p.CACert())
	}
	if bytes.Contains(p.CACert(), []byte("PRIVATE")) {
		t.Fatal("CACert holds a key")
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := ca.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve.Params().Name != "P-256" || !ca.IsCA || !ca.MaxPathLenZero {
		t.Errorf("the CA: key %T, CA %v, path length zero %v", ca.PublicKey, ca.IsCA, ca.MaxPathLenZero)
	}
	if d := ca.NotAfter.Sub(ca.NotBefore); d > caValidity+2*60e9 {
		t.Errorf("the CA is valid for %v", d)
	}
	if !ca.PermittedDNSDomainsCritical || fmt.Sprint(ca.PermittedDNSDomains) != "[example.com]" || fmt.Sprint(ca.PermittedIPRanges) != "[10.1.2.3/32]" {
		t.Errorf("the CA's constraints: names %v, addresses %v", ca.PermittedDNSDomains, ca.PermittedIPRanges)
	}
	for h, leaf := range p.ca.leaves {
		k, ok := leaf.PrivateKey.(*ecdsa.PrivateKey)
		if !ok || k.PublicKey.Equal(ca.PublicKey) {
			t.Errorf("the proxy holds the CA's key (as %s's)", h)
		}
		if err := leaf.Leaf.CheckSignatureFrom(ca); err != nil {
			t.Errorf("%s's certificate: %v", h, err)
		}
	}
	if len(p.ca.leaves) != 2 {
		t.Errorf("%d certificates, want 2", len(p.ca.leaves))
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("the proxy wrote %v (%v)", entries, err)
	}

	// Without an https credential there is no CA.
	q, err := New(&Config{Decide: rec.allowPorts(), Credentials: []Credential{{Host: "example.com", Scheme: "http", Value: secret}}})
	if err != nil || q.CACert() != nil {
		t.Errorf("an http credential made a CA: %v", err)
	}
}

// TestCANameConstraints: the CA's constraints hold for the server's
// clients: a CA made from the same template, whose key the test keeps,
// issues certificates that verify for the hosts and for none other (a
// name constraint also admits subdomains, which the proxy never issues).
func TestCANameConstraints(t *testing.T) {
	tests := []struct {
		name      string
		hosts     []string
		good, bad []string
	}{
		{"names", []string{"api.example.com", "b.example.org"}, []string{"api.example.com", "b.example.org", "x.api.example.com"}, []string{"example.com", "evil.example.net", "127.0.0.1", "::1"}},
		{"an address", []string{"10.0.0.1"}, []string{"10.0.0.1"}, []string{"10.0.0.2", "example.com", "::1"}},
		{"an IPv6 address and a name", []string{"2001:db8::1", "api.example.com"}, []string{"2001:db8::1", "api.example.com"}, []string{"2001:db8::2", "127.0.0.1", "example.com"}},
	}
	now := time.Now()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := newAuthority(tt.hosts, now); err != nil {
				t.Fatal(err)
			}
			key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			tmpl := caTemplate(tt.hosts, now)
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
			if err != nil {
				t.Fatal(err)
			}
			ca, _ := x509.ParseCertificate(der)
			pool := x509.NewCertPool()
			pool.AddCert(ca)
			verify := func(h string) error {
				leaf := &x509.Certificate{SerialNumber: serial(), NotBefore: ca.NotBefore, NotAfter: ca.NotAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
				if a, err := netip.ParseAddr(h); err == nil {
					leaf.IPAddresses = []net.IP{a.AsSlice()}
				} else {
					leaf.DNSNames = []string{h}
				}
				der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, key)
				if err != nil {
					return err
				}
				c, _ := x509.ParseCertificate(der)
				_, err = c.Verify(x509.VerifyOptions{DNSName: h, Roots: pool, CurrentTime: now})
				return err
			}
			for _, h := range tt.good {
				if err := verify(h); err != nil {
					t.Errorf("%s: %v", h, err)
				}
			}
			for _, h := range tt.bad {
				if err := verify(h); err == nil {
					t.Errorf("a certificate for %s verifies", h)
				}
			}
		})
	}
}

// TestInterceptLifecycle: Shutdown ends idle sessions and returns; Close
// ends sessions with a response in flight, and every goroutine the proxy
// started for them ends.
func TestInterceptLifecycle(t *testing.T) {
	// start starts a host that answers /slow with a header and then
	// waits for slow, and a proxy with a credential for it.
	start := func(t *testing.T, slow chan struct{}) (*tlsOrigin, *Config) {
		api := newTLSOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				<-slow
				return
			}
			io.WriteString(w, "ok")
		})
		return api, &Config{
			Checker:     loopbackChecker(t, exampleHosts),
			Decide:      (&recorder{}).allowPorts(api.port()),
			Credentials: []Credential{{Host: "example.com", Port: api.port(), Value: secret, RootCAs: api.roots}},
		}
	}
	// session opens a session through the proxy at addr and sends path.
	session := func(t *testing.T, p *Proxy, addr string, port uint16, path string) net.Conn {
		target := "example.com:" + strconv.Itoa(int(port))
		tc, err := tlsSession(t, addr, target, caPool(t, p), "example.com")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(tc, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, target)
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %v, %v", path, resp, err)
		}
		if path != "/slow" {
			body(t, resp)
		}
		return tc
	}

	t.Run("shutdown", func(t *testing.T) {
		slow := make(chan struct{})
		defer close(slow)
		api, cfg := start(t, slow)
		p, addr := startProxy(t, cfg, nil)
		tc := session(t, p, addr, api.port(), "/")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown with an idle session: %v", err)
		}
		if _, err := tc.Read(make([]byte, 1)); err == nil {
			t.Error("the session is open after Shutdown")
		}
	})

	t.Run("close", func(t *testing.T) {
		before := runtime.NumGoroutine()
		func() {
			slow := make(chan struct{})
			api, cfg := start(t, slow)
			defer api.srv.Close()
			defer close(slow)
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go p.Serve(ln)
			idle := session(t, p, ln.Addr().String(), api.port(), "/")
			busy := session(t, p, ln.Addr().String(), api.port(), "/slow")
			p.Close()
			idle.Close()
			busy.Close()
		}()
		for i := 0; ; i++ {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if i == 2000 {
				buf := make([]byte, 1<<20)
				t.Fatalf("%d goroutines before, %d after Close:\n%s", before, n, buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
