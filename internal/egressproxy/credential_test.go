package egressproxy

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

const secret = "Bearer s3cret-token-value"

// TestCredentialsStayWithTheirHost: the proxy adds a host's credential to
// plain requests for that host and port only — not to a redirect's other
// host, not to another port, not because the client wrote the host in its
// Host header — and overrides whatever the client sent for that header.
func TestCredentialsStayWithTheirHost(t *testing.T) {
	other := newOrigin(t, "127.0.0.1:0", nil)
	api := newOrigin(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		fmt.Fprint(w, "api")
	})
	hosts := map[string][]string{"api.example.com": {"127.0.0.1"}, "other.example.com": {"127.0.0.1"}}
	rec := &recorder{}
	_, proxy := startProxy(t, &Config{
		Checker:     loopbackChecker(t, hosts),
		Decide:      rec.allowPorts(api.port(), other.port()),
		Credentials: []Credential{{Host: "API.example.com.", Scheme: "http", Port: api.port(), Value: secret}, {Host: "api.example.com", Scheme: "http", Port: api.port(), Header: "x-api-key", Value: "k3y"}},
	}, rec)
	A, O := strconv.Itoa(int(api.port())), strconv.Itoa(int(other.port()))

	// The client's own Authorization is replaced by the credential.
	req, _ := http.NewRequest("GET", "http://api.example.com:"+A+"/a", nil)
	req.Header.Set("Authorization", "Bearer from-the-server")
	resp, err := proxyClient(proxy).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	// A redirect to another host; to the same host on another port; to the
	// same address under another name.
	for _, to := range []string{
		"http://other.example.com:" + O + "/",
		"http://127.0.0.1:" + O + "/",
		"http://127.0.0.1:" + A + "/",
	} {
		resp, err := proxyClient(proxy).Get("http://api.example.com:" + A + "/r?to=" + to)
		if err != nil {
			t.Fatal(err)
		}
		body(t, resp)
	}
	// A Host header naming the credential's host, on a request for another.
	resp = rawRequest(t, proxy, "GET", "http://other.example.com:"+O+"/h", "api.example.com:"+A)
	body(t, resp)

	for _, r := range api.requests() {
		auth, key := r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")
		if r.Host == "api.example.com:"+A {
			if auth != secret || key != "k3y" {
				t.Errorf("api.example.com got Authorization %q, X-Api-Key %q; want the credentials", auth, key)
			}
			continue
		}
		if strings.Contains(auth, "s3cret") || key != "" {
			t.Errorf("%s %s (Host %s) got a credential", r.Method, r.URL, r.Host)
		}
	}
	if n := len(api.requests()); n != 5 {
		t.Errorf("api origin served %d requests, want 5", n)
	}
	for _, r := range other.requests() {
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			t.Errorf("%s %s (Host %s) got a credential: %v", r.Method, r.URL, r.Host, r.Header)
		}
		if r.Host != "other.example.com:"+O && r.Host != "127.0.0.1:"+O {
			t.Errorf("other origin saw Host %q", r.Host)
		}
	}
	if n := len(other.requests()); n != 3 {
		t.Errorf("other origin served %d requests, want 3", n)
	}
}

func TestCredentialConfig(t *testing.T) {
	t.Setenv("AEGIS_TEST_TOKEN", secret)
	t.Setenv("AEGIS_TEST_EMPTY", "")
	tests := []struct {
		name string
		cred Credential
		want string // a substring of the error; "" for none
	}{
		{"value", Credential{Host: "api.example.com", Value: secret}, ""},
		{"env", Credential{Host: "api.example.com", ValueEnv: "AEGIS_TEST_TOKEN"}, ""},
		{"address", Credential{Host: "10.0.0.1", Port: 8080, Header: "X-Key", Value: "v"}, ""},
		{"https", Credential{Host: "api.example.com", Port: 443, Value: secret}, ""},
		{"https on another port", Credential{Host: "api.example.com", Scheme: "https", Port: 8443, Value: secret}, ""},
		{"https address", Credential{Host: "::1", Value: secret}, ""},
		{"http", Credential{Host: "api.example.com", Scheme: "http", Value: secret}, ""},
		{"bad scheme", Credential{Host: "api.example.com", Scheme: "ftp", Value: secret}, "want https or http"},
		{"ca_file for http", Credential{Host: "api.example.com", Scheme: "http", CAFile: "/etc/hostname", Value: secret}, "has no certificate"},
		{"ca_file missing", Credential{Host: "api.example.com", CAFile: "/nonexistent/ca.pem", Value: secret}, "ca_file"},
		{"ca_file not PEM", Credential{Host: "api.example.com", CAFile: "credential_test.go", Value: secret}, "no PEM certificate"},
		{"ca_file and RootCAs", Credential{Host: "api.example.com", CAFile: "x.pem", RootCAs: x509.NewCertPool(), Value: secret}, "both ca_file and RootCAs"},
		{"no host", Credential{Value: secret}, "host: empty"},
		{"wildcard", Credential{Host: "*.example.com", Value: secret}, "not one host"},
		{"bad host", Credential{Host: "a..b", Value: secret}, "credentials[0].host"},
		{"no value", Credential{Host: "api.example.com"}, "no value"},
		{"both", Credential{Host: "api.example.com", Value: secret, ValueEnv: "AEGIS_TEST_TOKEN"}, "both"},
		{"env unset", Credential{Host: "api.example.com", ValueEnv: "AEGIS_TEST_NOT_SET"}, "not set"},
		{"env empty", Credential{Host: "api.example.com", ValueEnv: "AEGIS_TEST_EMPTY"}, "not set"},
		{"newline in value", Credential{Host: "api.example.com", Value: secret + "\r\nX-Evil: 1"}, "not a valid header value"},
		{"space around value", Credential{Host: "api.example.com", Value: " " + secret}, "not a valid header value"},
		{"bad header name", Credential{Host: "api.example.com", Header: "X Key", Value: secret}, "not a header name"},
		{"host header", Credential{Host: "api.example.com", Header: "host", Value: secret}, "frames or routes"},
		{"content-length", Credential{Host: "api.example.com", Header: "Content-Length", Value: "1"}, "frames or routes"},
		{"proxy header", Credential{Host: "api.example.com", Header: "Proxy-Foo", Value: secret}, "frames or routes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(&Config{Decide: (&recorder{}).allowPorts(), Credentials: []Credential{tt.cred}})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New: %v, want an error with %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), "s3cret"):
				t.Fatalf("the error repeats the secret: %v", err)
			}
		})
	}
	for _, tt := range []struct {
		name  string
		creds []Credential
		want  string
	}{
		{"duplicate", []Credential{{Host: "api.example.com", Value: "a"}, {Host: "API.example.com", Port: 443, Header: "authorization", Value: "b"}}, "second Authorization"},
		{"duplicate http", []Credential{{Host: "api.example.com", Scheme: "http", Value: "a"}, {Host: "API.example.com", Scheme: "http", Port: 80, Value: "b"}}, "second Authorization"},
		{"one host over http and https", []Credential{{Host: "api.example.com", Scheme: "http", Port: 8080, Value: "a"}, {Host: "api.example.com", Port: 8080, Value: "b"}}, ""},
		{"two roots", []Credential{{Host: "api.example.com", RootCAs: x509.NewCertPool(), Value: "a"}, {Host: "api.example.com", Header: "X-Key", RootCAs: x509.NewCertPool(), Value: "b"}}, "roots from another credential"},
		{"roots once", []Credential{{Host: "api.example.com", RootCAs: x509.NewCertPool(), Value: "a"}, {Host: "api.example.com", Header: "X-Key", Value: "b"}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(&Config{Decide: (&recorder{}).allowPorts(), Credentials: tt.creds})
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("New: %v, want %q", err, tt.want)
			}
		})
	}
}
