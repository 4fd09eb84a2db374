package capability

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// FromURL derives the capability of a URL argument, parsed the way a WHATWG
// URL runtime (Node, Deno, browsers, Python's urllib for most inputs) would:
// leading and trailing C0 controls and spaces stripped, tabs and newlines
// removed anywhere, a backslash read as a slash in special schemes, the
// host canonicalised as by [CanonHost].
//
// A URL with a host returns a NetConnect: Scheme; Host; Port, explicit or
// the scheme's default (http and ws 80, https and wss 443, ftp 21, else 0);
// Addr; Classes ([ClassOf] or [NameClass]); and URL, the canonical
// serialisation without userinfo and without fragment — the chain is
// publishable, so passwords must not reach it, and a fragment never leaves
// the client. The query stays, and may carry secrets of its own. The host
// of a non-special scheme (redis://, git://) is canonicalised as a special
// one: its client hands it to a resolver that reads IPv4 number forms.
//
// A file: URL returns an FSRead of its percent-decoded absolute path, for
// the binding layer to canonicalise further. Its host must be empty or
// localhost; an encoded "/", "\" or NUL is refused, and so is a path that
// starts with a Windows drive letter (C:), whose meaning depends on the
// server's system. URLs without a host (data:, mailto:, javascript:, opaque
// paths) are errors.
//
// Go's net/url parses the same text as a second opinion, as a Go server
// would: where it fails, or reads another scheme, host (compared after
// [CanonHost]), port or file path, the error wraps [ErrAmbiguous]. Errors
// never repeat the userinfo, path or query.
func FromURL(raw string) (Capability, error) {
	u, err := parseURL(raw)
	if err != nil {
		return Capability{}, fmt.Errorf("parsing URL: %w", err)
	}
	nu, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the whole URL
		}
		return Capability{}, fmt.Errorf("parsing URL: Go's net/url cannot parse it (%v): %w", err, ErrAmbiguous)
	}
	if nu.Scheme != u.scheme {
		return Capability{}, fmt.Errorf("parsing URL: scheme %q, but %q for Go's net/url: %w", u.scheme, nu.Scheme, ErrAmbiguous)
	}
	if u.scheme == "file" {
		return fileCapability(&u, nu)
	}
	if !u.hasHost {
		return Capability{}, fmt.Errorf("parsing URL: a %s: URL without a host names no connection", u.scheme)
	}
	c := Capability{Kind: NetConnect, Scheme: u.scheme, URL: u.serial}
	if c.Host, c.Addr, err = canonURLHost(u.rawHost, u.host); err != nil {
		return Capability{}, fmt.Errorf("parsing URL: %w", err)
	}
	if nh := nu.Hostname(); nh != strings.TrimSuffix(strings.TrimPrefix(u.rawHost, "["), "]") {
		if h, _, err := CanonHost(nh); err != nil || h != c.Host {
			return Capability{}, fmt.Errorf("parsing URL: host %q, but %q for Go's net/url: %w", c.Host, nh, ErrAmbiguous)
		}
	}
	switch {
	case u.port == 0:
		return Capability{}, errors.New("parsing URL: port 0 cannot be connected to")
	case u.port > 0:
		c.Port = uint16(u.port)
	default:
		c.Port = defaultPort(u.scheme)
	}
	np := defaultPort(u.scheme)
	if s := nu.Port(); s != "" {
		if np, err = parsePort(s); err != nil {
			return Capability{}, fmt.Errorf("parsing URL: Go's net/url reads a bad port (%v): %w", err, ErrAmbiguous)
		}
	}
	if np != c.Port {
		return Capability{}, fmt.Errorf("parsing URL: port %d, but %d for Go's net/url: %w", c.Port, np, ErrAmbiguous)
	}
	c.Classes = hostClasses(c.Host, c.Addr)
	return c, nil
}

// fileCapability derives the FSRead of a file: URL.
func fileCapability(u *urlRecord, nu *url.URL) (Capability, error) {
	if u.host.kind != hostEmpty {
		return Capability{}, fmt.Errorf("file URL names host %q; only an empty host or localhost is local", u.host.text)
	}
	if nu.Host != "" && !strings.EqualFold(nu.Host, "localhost") {
		return Capability{}, fmt.Errorf("file URL: Go's net/url reads host %q: %w", nu.Host, ErrAmbiguous)
	}
	if u.driveLetter {
		// Windows reads C:\x, POSIX /C:/x, and runtimes disagree on
		// whether ".." may remove a segment such as "C::0".
		return Capability{}, errors.New("file URL path starts with a Windows drive letter")
	}
	p := u.pathname()
	for i := 0; i+2 < len(p); i++ {
		if p[i] == '%' {
			switch strings.ToLower(p[i+1 : i+3]) {
			case "2f", "5c", "00":
				return Capability{}, errors.New("file URL path has an encoded slash, backslash or NUL")
			}
		}
	}
	p = percentDecode(p)
	if !strings.HasPrefix(p, "/") {
		return Capability{}, errors.New("file URL path is not absolute")
	}
	if path.Clean(p) != path.Clean(nu.Path) {
		return Capability{}, fmt.Errorf("file URL: Go's net/url reads another path: %w", ErrAmbiguous)
	}
	return Capability{Kind: FSRead, Path: p}, nil
}

// defaultPort returns the default port of a special scheme, 0 for others.
func defaultPort(scheme string) uint16 {
	switch scheme {
	case "http", "ws":
		return 80
	case "https", "wss":
		return 443
	case "ftp":
		return 21
	}
	return 0
}

func isSpecial(scheme string) bool {
	return defaultPort(scheme) != 0 || scheme == "file"
}
