package egressproxy

import (
	"errors"
	"net/http"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// The proxy parses no HTTP itself: net/http's server reads the request
// line and the header (and refuses duplicate Host headers, obsolete line
// folding, bad field names and values, and oversized headers), and
// package capability reads the target. What is here decides which of the
// requests net/http accepts the proxy serves.

// forwardMethods are the methods forwarded as plain HTTP. TRACE is not one:
// the origin would echo the request, credentials the proxy added included,
// back to the server.
var forwardMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// allowHeader lists forwardMethods for a 405's Allow header.
const allowHeader = "CONNECT, GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"

// errTarget is a request the proxy does not serve; its text is the reason
// the server is told.
type errTarget string

func (e errTarget) Error() string { return string(e) }

// connectTarget derives the net.connect of a CONNECT request. The target
// MUST be authority-form, host:port with an explicit port, exactly as
// net/http read it (no userinfo, path, query or fragment); IPv6 zones and
// percent-encoding are refused; the host is canonicalised, every IPv4
// spelling reduced to its address. The capability's scheme is "https" for
// port 443 and empty for any other port: aegis cannot see what a tunnel
// carries, so only a rule that names no scheme allows a tunnel to another
// port. Its URL is empty.
func connectTarget(r *http.Request) (capability.Capability, error) {
	switch {
	case r.ContentLength != 0 || len(r.TransferEncoding) > 0:
		return capability.Capability{}, errTarget("CONNECT with a body")
	case r.URL == nil || r.URL.Host == "" || r.RequestURI != r.URL.Host || r.Host != r.URL.Host:
		return capability.Capability{}, errTarget("CONNECT target is not host:port")
	}
	c, err := capability.FromHost(r.RequestURI)
	if err != nil {
		return capability.Capability{}, errTarget("CONNECT target: " + err.Error())
	}
	if c.Port == 0 {
		return capability.Capability{}, errTarget("CONNECT target has no port")
	}
	if c.Port == 443 {
		c.Scheme = "https"
	}
	return c, nil
}

// forwardTarget derives the net.connect of a plain-HTTP proxy request: the
// request-target MUST be an absolute http: URL without userinfo, read alike
// by the WHATWG parser and Go's net/url ([capability.FromURL]); the method
// one of forwardMethods. The status is the one to refuse with.
func forwardTarget(r *http.Request) (capability.Capability, int, error) {
	switch {
	case r.URL == nil || !r.URL.IsAbs():
		return capability.Capability{}, http.StatusBadRequest, errTarget("not a proxy request: the target must be an absolute http:// URL (or CONNECT host:port)")
	case r.URL.Scheme != "http":
		return capability.Capability{}, http.StatusBadRequest, errTarget("only http:// is forwarded; tunnel other schemes with CONNECT")
	case r.URL.User != nil:
		return capability.Capability{}, http.StatusBadRequest, errTarget("userinfo in the target")
	case !forwardMethods[r.Method]:
		return capability.Capability{}, http.StatusMethodNotAllowed, errTarget("method " + r.Method + " is not forwarded")
	}
	c, err := capability.FromURL(r.RequestURI)
	switch {
	case errors.Is(err, capability.ErrAmbiguous):
		return capability.Capability{}, http.StatusBadRequest, errTarget("ambiguous target URL: " + err.Error())
	case err != nil:
		return capability.Capability{}, http.StatusBadRequest, errTarget("target URL: " + err.Error())
	case c.Kind != capability.NetConnect || c.Scheme != "http" || c.Port == 0:
		return capability.Capability{}, http.StatusBadRequest, errTarget("target is not an http:// URL with a host")
	}
	return c, 0, nil
}

// askedTarget is what Refusal.Target says the server asked for: the
// authority of a CONNECT, the scheme and authority of an absolute URL,
// empty otherwise (an origin-form path may carry secrets).
func askedTarget(r *http.Request) string {
	switch {
	case r.URL == nil:
		return ""
	case r.Method == http.MethodConnect:
		return clip(r.RequestURI)
	case r.URL.IsAbs():
		return clip(r.URL.Scheme + "://" + r.URL.Host)
	}
	return ""
}
