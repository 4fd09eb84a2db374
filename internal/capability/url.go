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
//
// A plain http or https URL (see plainURL) takes a fast path that reads it
// once: both parsers are known to read such a URL alike, and to serialise
// it as written.
func FromURL(raw string) (c Capability, err error) {
	if plainURLTo(&c, raw) {
		return c, nil
	}
	return fromURL(raw)
}

// FromURLTo is [FromURL] writing the capability to *c, which is zeroed
// first; on error *c holds nothing of use.
func FromURLTo(c *Capability, raw string) error {
	*c = Capability{}
	if plainURLTo(c, raw) {
		return nil
	}
	var err error
	*c, err = fromURL(raw)
	return err
}

// ErrDataURL is FromURL's error for a data: URL, which carries its content
// and names no connection: a binding derives nothing from it.
var ErrDataURL = errors.New("parsing URL: a data: URL carries its content and names no connection")

// fromURL is FromURL for any input: the WHATWG parser, then net/url's.
func fromURL(raw string) (Capability, error) {
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
	if u.scheme == "data" {
		return Capability{}, ErrDataURL
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
	// The serialisation is what policy matches and the chain records: Go's
	// net/url must read it too. UTS-46 can map a character net/url accepts
	// (a fullwidth "｛") to one the WHATWG host parser keeps and net/url
	// refuses ("{"): the parsers then disagree about the canonical URL.
	if _, err := url.Parse(c.URL); err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Capability{}, fmt.Errorf("parsing URL: Go's net/url cannot parse its canonical form %q (%v): %w", c.URL, err, ErrAmbiguous)
	}
	c.Classes = hostClasses(c.Host, c.Addr)
	return c, nil
}

// plainURL is FromURL for a plain URL, which both parsers read alike and
// the WHATWG serialiser writes back as it came (up to an empty path and a
// default port), so that it needs neither parser. It reports false for any
// other input, which takes the full path. A plain URL is, byte for byte:
//
//   - "http://" or "https://", in lower case: no stripped or removed
//     bytes (spaces, controls, tabs, newlines), no backslash, no other
//     scheme, no userinfo (the authority is only a host and a port);
//   - a plain host (plainHost): a name that the host parser keeps as it
//     is, and net/url reads the same;
//   - optionally ":" and a port of 1 to 5 digits without a leading zero,
//     from 1 to 65535;
//   - optionally a path starting with "/": printable ASCII that the WHATWG
//     parser keeps as it is (none of the path percent-encode set, no "?",
//     "#" or "\"), "%" only before two hex digits and never as "%2e" (a
//     dot), and no "." or ".." segment, so that nothing is percent-encoded
//     or removed, and net/url unescapes it without error;
//   - optionally "?" and a query of printable ASCII outside the special
//     query percent-encode set, without "#" or "\".
//
// FuzzPlainURL checks that the full path derives the same capability from
// every URL this accepts.
func plainURL(raw string) (Capability, bool) {
	var c Capability
	ok := plainURLTo(&c, raw)
	return c, ok
}

// plainURLTo is plainURL writing the capability to *c, which must be
// zero; when it reports false, *c holds nothing of use.
func plainURLTo(c *Capability, raw string) bool {
	var rest string
	switch {
	case len(raw) > maxURLLen:
		return false
	case strings.HasPrefix(raw, "https://"):
		c.Scheme, c.Port, rest = "https", 443, raw[len("https://"):]
	case strings.HasPrefix(raw, "http://"):
		c.Scheme, c.Port, rest = "http", 80, raw[len("http://"):]
	default:
		return false
	}
	i, ok := plainHostPrefix(rest)
	if !ok {
		return false
	}
	c.Host, rest = rest[:i], rest[i:]
	// The serialisation is prefix, the path ("/" if empty) and the query:
	// prefix is raw up to the host, and a port that is not the default.
	prefix := raw[:len(raw)-len(rest)]
	if rest != "" && rest[0] == ':' {
		j, port := 1, 0
		for ; j < len(rest) && j <= 5 && '0' <= rest[j] && rest[j] <= '9'; j++ {
			port = port*10 + int(rest[j]-'0')
		}
		if j == 1 || rest[1] == '0' || port > 65535 || j < len(rest) && rest[j] != '/' && rest[j] != '?' {
			return false
		}
		if uint16(port) != c.Port {
			c.Port, prefix = uint16(port), raw[:len(raw)-len(rest)+j]
		}
		rest = rest[j:]
	}
	path, query := "", rest
	if rest != "" && rest[0] != '?' {
		if rest[0] != '/' {
			return false
		}
		q := 1
		// Eight bytes at a time while all are plain path bytes; the loop
		// below reads the rest, and any byte that is not, one by one.
		for ; q+8 <= len(rest); q += 8 {
			if plainAnd8(rest[q:q+8])&bytePath == 0 {
				break
			}
		}
	path:
		for ; q < len(rest); q++ {
			switch b := rest[q]; {
			case plainBytes[b]&bytePath != 0:
			case b == '?':
				break path
			case b == '.':
				if rest[q-1] == '/' && dotSegment(rest[q:]) {
					return false
				}
			case b == '%':
				if q+2 >= len(rest) || hexVal(rest[q+1]) > 15 || hexVal(rest[q+2]) > 15 || rest[q+1] == '2' && rest[q+2]|0x20 == 'e' {
					return false
				}
				q += 2
			default:
				return false
			}
		}
		path, query = rest[:q], rest[q:]
	}
	j := 1
	for ; j+8 <= len(query); j += 8 {
		if plainAnd8(query[j:j+8])&byteQuery == 0 {
			return false
		}
	}
	for ; j < len(query); j++ {
		if plainBytes[query[j]]&byteQuery == 0 {
			return false
		}
	}
	switch {
	case path == "":
		c.URL = prefix + "/" + query
	case len(prefix)+len(rest) == len(raw):
		c.URL = raw
	default:
		c.URL = prefix + rest
	}
	c.Kind, c.Classes = NetConnect, nameClass(c.Host)
	return true
}

// dotSegment reports whether s, the rest of a path from the start of a
// segment on, starts with a "." or ".." segment.
func dotSegment(s string) bool {
	if len(s) > 1 && s[1] == '.' {
		s = s[1:]
	}
	return len(s) == 1 || s[1] == '/' || s[1] == '?'
}

// plainAnd8 returns the classes of plainBytes that all eight bytes of w
// hold.
func plainAnd8(w string) uint8 {
	_ = w[7]
	t := &plainBytes
	return t[w[0]] & t[w[1]] & t[w[2]] & t[w[3]] & t[w[4]] & t[w[5]] & t[w[6]] & t[w[7]]
}

// plainBytes classifies bytes for plainHost and plainURL: those a plain
// host, path and query may hold as they are (a host's dots and a path's
// dots, "%" and "?" are handled apart).
var plainBytes = func() (t [256]uint8) {
	for c := '!'; c <= '~'; c++ {
		b := byte(c)
		if 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' {
			t[b] |= byteHost
		}
		if !pathSet.has(b) && b != '\\' && b != '%' && b != '.' {
			t[b] |= bytePath
		}
		if !specialQuerySet.has(b) && b != '\\' {
			t[b] |= byteQuery
		}
	}
	return t
}()

const (
	byteHost uint8 = 1 << iota
	bytePath
	byteQuery
)

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
