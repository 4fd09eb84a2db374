package egressproxy

import (
	"fmt"
	"net/http"
	"os"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// Credential is a header the proxy adds to the server's plain-HTTP
// requests for one host, so that the token lives in aegis and never in the
// server's process or environment (issue 16, point 5).
//
// Credentials apply to plain http:// requests only. aegis does not
// intercept TLS: an https:// request travels through a CONNECT tunnel
// whose bytes the proxy cannot read or change, so a credential for it
// could never be added. New refuses a credential for port 443 rather than
// hold a token it would never send.
//
// The yaml tags are the keys of the configuration file.
type Credential struct {
	// Host is the host the credential belongs to: an exact name
	// (canonicalised: lower case, A-labels, no trailing dot) or an IP
	// address. No wildcard: a credential belongs to one host.
	Host string `yaml:"host"`
	// Port is the host's port; zero means 80. The credential is added to
	// requests for that host and port only.
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
}

// credKey is the host and port a credential belongs to.
type credKey struct {
	host string
	port uint16
}

// credHeader is one header to set.
type credHeader struct {
	name, value string
}

// credentials maps a canonical host and port to the headers to set.
type credentials map[credKey][]credHeader

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
		port := c.Port
		switch port {
		case 0:
			port = 80
		case 443:
			return nil, fmt.Errorf("%s.port: 443 is https, whose requests travel in a TLS tunnel the proxy does not open; credentials at the edge apply to plain http:// only", where)
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
		k := credKey{host, port}
		for _, h := range out[k] {
			if h.name == name {
				return nil, fmt.Errorf("%s: a second %s credential for %s port %d", where, name, host, port)
			}
		}
		out[k] = append(out[k], credHeader{name, value})
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
