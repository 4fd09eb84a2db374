package egressproxy

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// Credential is a header the proxy adds to the server's requests for one
// host, so that the token lives in aegis and never in the server's process
// or environment (issue 16, point 5).
//
// An https credential (the default) is added inside TLS: a CONNECT to its
// host and port is not tunnelled but intercepted. The proxy answers the
// server's TLS with a certificate for that host issued by the proxy's own
// ephemeral CA (see [Proxy.CACert]), which the sandboxed server is made to
// trust; reads the server's HTTP/1.1 requests; sets the header; and sends
// each to the host over a TLS connection of its own, verified against the
// system's roots (or CAFile's). Every other CONNECT stays an opaque
// tunnel. An http credential is added to plain http:// requests. Either
// is added only to requests for its own host, port and scheme: an http://
// request to an https credential's port gets nothing, so the token never
// crosses the network in clear.
//
// The yaml tags are the keys of the configuration file.
type Credential struct {
	// Host is the host the credential belongs to: an exact name
	// (canonicalised: lower case, A-labels, no trailing dot) or an IP
	// address. No wildcard: a credential belongs to one host. It is
	// matched against the host the server asked for (the CONNECT target
	// or the URL's), never against an address it resolves to: a server
	// that connects to the host's address by IP gets no credential.
	Host string `yaml:"host"`
	// Scheme is "https" or "http"; empty means https.
	Scheme string `yaml:"scheme"`
	// Port is the host's port; zero means the scheme's, 443 or 80. The
	// credential is added to requests for that host and port only.
	Port uint16 `yaml:"port"`
	// Header is the header's name; empty means Authorization. A header
	// that frames or routes the message (Host, Content-Length,
	// Transfer-Encoding, Connection and the other hop-by-hop headers) is
	// refused.
	Header string `yaml:"header"`
	// Value is the header's value, e.g. "Bearer …". Set it, or ValueEnv.
	Value string `yaml:"-"`
	// ValueEnv names an environment variable of aegis's own that holds the
	// value; it is read once, by New. The server's environment does not
	// inherit it.
	ValueEnv string `yaml:"value_env"`
	// CAFile names a PEM file of the root certificates the host's TLS
	// certificate must chain to, instead of the system's roots: a host
	// with a private CA, or a test's server. It is read once, by New. Only
	// for https; empty means the system's roots.
	CAFile string `yaml:"ca_file"`
	// RootCAs is what CAFile gives, for a caller that holds a pool
	// already; set at most one of the two.
	RootCAs *x509.CertPool `yaml:"-"`
}

// credKey is the host, port and scheme a credential belongs to.
type credKey struct {
	host string
	port uint16
	tls  bool
}

// credHeader is one header to set.
type credHeader struct {
	name, value string
}

// credTarget is what the proxy holds for one host, port and scheme: the
// headers to set and, for https, the roots its certificate must chain
// to (nil: the system's).
type credTarget struct {
	headers   []credHeader
	roots     *x509.CertPool
	rootsFrom string // CAFile, or the RootCAs pool, for the conflict check
}

// credentials maps a canonical host, port and scheme to what to set.
type credentials map[credKey]*credTarget

// headers returns the headers to set on a request to host and port over
// TLS or not.
func (cs credentials) headers(host string, port uint16, tls bool) []credHeader {
	if t := cs[credKey{host, port, tls}]; t != nil {
		return t.headers
	}
	return nil
}

// tlsHosts returns the hosts of the https credentials, sorted, once each.
func (cs credentials) tlsHosts() []string {
	var hosts []string
	for k := range cs {
		if k.tls && !slices.Contains(hosts, k.host) {
			hosts = append(hosts, k.host)
		}
	}
	slices.Sort(hosts)
	return hosts
}

// maxCAFileBytes bounds a CAFile.
const maxCAFileBytes = 1 << 20

// refusedHeaders may not carry a credential: they frame, route or
// hop.
var refusedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authorization": true,
	"Proxy-Authenticate": true, "Te": true, "Trailer": true, "Upgrade": true,
	"Expect": true, "Forwarded": true, "Via": true,
}

// compileCredentials checks and indexes cs. Errors name the credential by
// index and field, never its value.
func compileCredentials(cs []Credential) (credentials, error) {
	out := credentials{}
	for i, c := range cs {
		where := fmt.Sprintf("credentials[%d]", i)
		switch {
		case c.Host == "":
			return nil, fmt.Errorf("%s.host: empty", where)
		case strings.ContainsAny(c.Host, "*/%"):
			return nil, fmt.Errorf("%s.host: %q is not one host (no wildcards, prefixes or percent-encoding)", where, c.Host)
		}
		host, _, err := capability.CanonHost(c.Host)
		if err != nil {
			return nil, fmt.Errorf("%s.host: %w", where, err)
		}
		var secure bool
		port := c.Port
		switch c.Scheme {
		case "", "https":
			secure = true
			if port == 0 {
				port = 443
			}
		case "http":
			if port == 0 {
				port = 80
			}
			if c.CAFile != "" || c.RootCAs != nil {
				return nil, fmt.Errorf("%s.ca_file: set for an http credential, which has no certificate to check", where)
			}
		default:
			return nil, fmt.Errorf("%s.scheme: %q: want https or http", where, c.Scheme)
		}
		name := c.Header
		if name == "" {
			name = "Authorization"
		}
		if !httpguts.ValidHeaderFieldName(name) {
			return nil, fmt.Errorf("%s.header: %q is not a header name", where, name)
		}
		name = http.CanonicalHeaderKey(name)
		if refusedHeaders[name] || strings.HasPrefix(name, "Proxy-") {
			return nil, fmt.Errorf("%s.header: %s frames or routes the request and cannot carry a credential", where, name)
		}
		value := c.Value
		switch {
		case value != "" && c.ValueEnv != "":
			return nil, fmt.Errorf("%s: both value and value_env are set; set one", where)
		case c.ValueEnv != "":
			v, ok := os.LookupEnv(c.ValueEnv)
			if !ok || v == "" {
				return nil, fmt.Errorf("%s.value_env: $%s is not set or empty", where, c.ValueEnv)
			}
			value = v
		}
		switch {
		case value == "":
			return nil, fmt.Errorf("%s: no value (set value_env)", where)
		case !httpguts.ValidHeaderFieldValue(value) || strings.TrimSpace(value) != value:
			// The value is not repeated: it is a secret.
			return nil, fmt.Errorf("%s: the value is not a valid header value (control characters, or leading or trailing space)", where)
		}
		roots, rootsFrom, err := credRoots(c)
		if err != nil {
			return nil, fmt.Errorf("%s.ca_file: %w", where, err)
		}
		k := credKey{host, port, secure}
		t := out[k]
		if t == nil {
			t = &credTarget{}
			out[k] = t
		}
		for _, h := range t.headers {
			if h.name == name {
				return nil, fmt.Errorf("%s: a second %s credential for %s port %d", where, name, host, port)
			}
		}
		t.headers = append(t.headers, credHeader{name, value})
		switch {
		case roots == nil:
		case t.roots == nil:
			t.roots, t.rootsFrom = roots, rootsFrom
		case t.rootsFrom != rootsFrom:
			return nil, fmt.Errorf("%s.ca_file: %s port %d has roots from another credential already; name them once", where, host, port)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// credRoots returns the roots c names, and where from: nil for the
// system's.
func credRoots(c Credential) (*x509.CertPool, string, error) {
	switch {
	case c.CAFile != "" && c.RootCAs != nil:
		return nil, "", errors.New("both ca_file and RootCAs are set; set one")
	case c.RootCAs != nil:
		return c.RootCAs, fmt.Sprintf("RootCAs %p", c.RootCAs), nil
	case c.CAFile == "":
		return nil, "", nil
	}
	f, err := os.Open(c.CAFile)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCAFileBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", c.CAFile, err)
	}
	if len(data) > maxCAFileBytes {
		return nil, "", fmt.Errorf("%s: larger than %d bytes", c.CAFile, maxCAFileBytes)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, "", fmt.Errorf("%s: no PEM certificate", c.CAFile)
	}
	return pool, c.CAFile, nil
}
