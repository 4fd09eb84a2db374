package capability

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxRelativeURLLen bounds a path argument, as maxURLLen bounds a URL.
const maxRelativeURLLen = 1 << 16

// BaseURL is a server's own base URL, against which a URL argument
// constrained to a relative path is resolved (DESIGN.md R14). The server
// attaches its credentials to requests under this base, so an argument must
// not be able to name another origin: see [BaseURL.Resolve].
type BaseURL struct {
	origin string   // "https://api.example.com:8443", canonical
	dir    string   // the base path, ending in "/": "/v1/"
	goURL  *url.URL // origin + dir for net/url, the second opinion
}

// ParseBaseURL parses a base URL from the configuration: an http or https
// URL with a host, without userinfo, query or fragment, that Go's net/url
// reads as the URL Standard does (see [FromURL]). The base is a directory:
// a path without a trailing slash gets one, so "https://api.example.com/v1"
// and "https://api.example.com/v1/" are the same base, as servers that join
// a base and a path by hand treat them.
func ParseBaseURL(raw string) (*BaseURL, error) {
	if raw == "" {
		return nil, errors.New("base URL: empty")
	}
	if r, _ := utf8.DecodeRuneInString(raw); unicode.IsSpace(r) || r < 0x20 {
		return nil, errors.New("base URL: leading whitespace or control character")
	}
	if r, _ := utf8.DecodeLastRuneInString(raw); unicode.IsSpace(r) || r < 0x20 {
		return nil, errors.New("base URL: trailing whitespace or control character")
	}
	c, err := FromURL(raw)
	if err != nil {
		return nil, fmt.Errorf("base URL: %w", err)
	}
	if c.Kind != NetConnect || (c.Scheme != "http" && c.Scheme != "https") {
		return nil, errors.New("base URL: not an http or https URL")
	}
	u, err := parseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("base URL: %w", err)
	}
	switch {
	case u.username != "" || u.password != "":
		return nil, errors.New("base URL: has userinfo; credentials belong in the server's configuration")
	case u.queryAt >= 0:
		return nil, errors.New("base URL: has a query")
	case u.hasFragment:
		return nil, errors.New("base URL: has a fragment")
	case u.opaque:
		return nil, errors.New("base URL: has an opaque path")
	}
	// The origin is written from the canonical host ([CanonHost]: no
	// trailing dot, IPv4-mapped addresses unmapped) and must read back the
	// same, since Resolve compares origins as text.
	host := c.Host
	if c.Addr.Is6() {
		host = "[" + host + "]"
	}
	b := &BaseURL{origin: c.Scheme + "://" + host, dir: u.pathname()}
	if c.Port != defaultPort(c.Scheme) {
		b.origin += fmt.Sprintf(":%d", c.Port)
	}
	if !strings.HasSuffix(b.dir, "/") {
		b.dir += "/"
	}
	if v, err := parseURL(b.String()); err != nil || v.serial != b.String() {
		return nil, fmt.Errorf("base URL: its canonical form does not read back the same: %w", ErrAmbiguous)
	}
	if b.goURL, err = url.Parse(b.origin + b.dir); err != nil {
		return nil, fmt.Errorf("base URL: Go's net/url cannot parse its canonical form: %w", ErrAmbiguous)
	}
	return b, nil
}

// String returns the canonical base URL, ending in "/".
func (b *BaseURL) String() string { return b.origin + b.dir }

// RelativeURL resolves ref against base with [ParseBaseURL] and
// [BaseURL.Resolve]. A caller that resolves many arguments against one base
// parses it once instead.
func RelativeURL(ref, base string) (string, error) {
	b, err := ParseBaseURL(base)
	if err != nil {
		return "", err
	}
	return b.Resolve(ref)
}

// Resolve resolves ref, a URL argument constrained to a path relative to
// the base, and returns the absolute URL, as the URL Standard resolves a
// relative reference against the base. The result has the base's origin and
// a path under the base's path; the argument itself is safe to forward to a
// server that resolves it or joins it to the base by hand.
//
// ref is a relative path ("users/42", "./users", "/v1/users" when the base
// path is /v1/), optionally with a query and fragment, or a query or
// fragment alone. Refused, because some parser or server reads them as
// another origin or another directory:
//   - absolute URLs of any scheme, and anything with ":" or "@" before the
//     first "/", "?" or "#" ("http:host", "javascript:", "user@host",
//     ":8080"): a server that concatenates base and path reads them as a
//     host, a port or userinfo;
//   - a path starting with "//" (scheme-relative), an empty segment
//     anywhere ("./" + "/host" resolves to "//host"), and any backslash in
//     the path ("/\host", "\\host", "\/host");
//   - leading or trailing whitespace (ASCII or Unicode), and anywhere: C0
//     and C1 controls (tab and newline included: WHATWG removes them, so
//     "/\t/host" is "//host"), Unicode format characters (bidi overrides,
//     zero-width spaces, BOM) and line separators;
//   - in the path: percent-encoded "/", "\", "%" (double encoding) and
//     controls, which a server that decodes reads as structure; malformed
//     percent-encoding; slash lookalikes that NFKC folds to "/" or "\";
//   - a ".." segment in any spelling ("%2e%2e", ".%2e", "..;" as Tomcat
//     reads it, fullwidth and leader dots, "..."), even one that would stay
//     under the base: servers normalise dot segments differently, and no
//     API path needs one;
//   - a path-absolute ref outside the base path ("/admin" for base /v1/);
//   - the empty string, invalid UTF-8, and arguments over 64 KiB.
//
// The query and fragment may hold ":", "@", "/", "%2F" and URLs: they cannot
// change the origin or the path. Errors never repeat the argument.
func (b *BaseURL) Resolve(ref string) (string, error) {
	if err := checkRelativeRef(ref); err != nil {
		return "", fmt.Errorf("relative URL: %w", err)
	}
	abs := b.origin + ref
	if ref[0] != '/' {
		abs = b.origin + b.dir + ref
	}
	u, err := parseURL(abs)
	if err != nil {
		return "", fmt.Errorf("relative URL: %w", err)
	}
	// A path-absolute ref stays under the base path only if it says so;
	// for the others, the checks above already keep the result under the
	// base, and this says so with the parser that produced it.
	switch {
	case u.opaque || u.username != "" || u.password != "" || u.serial[:u.pathAt] != b.origin:
		return "", errors.New("relative URL: resolves to another origin")
	case !strings.HasPrefix(u.pathname(), b.dir):
		return "", fmt.Errorf("relative URL: path is outside the base path %s", b.dir)
	}
	resolved := u.href()
	// Second opinion: Go's net/url, as a Go server would resolve the
	// argument and read the result.
	gref, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("relative URL: Go's net/url cannot parse it: %w", ErrAmbiguous)
	}
	if gref.IsAbs() || gref.Host != "" || gref.User != nil {
		return "", fmt.Errorf("relative URL: Go's net/url reads an absolute URL: %w", ErrAmbiguous)
	}
	for _, g := range []string{b.goURL.ResolveReference(gref).String(), resolved} {
		gu, err := url.Parse(g)
		if err != nil || gu.Host != b.goURL.Host || gu.Scheme != b.goURL.Scheme || gu.User != nil ||
			!strings.HasPrefix(gu.Path+"/", b.goURL.Path) {
			return "", fmt.Errorf("relative URL: Go's net/url resolves it elsewhere: %w", ErrAmbiguous)
		}
	}
	return resolved, nil
}

// checkRelativeRef applies the refusals listed at [BaseURL.Resolve].
func checkRelativeRef(ref string) error {
	switch {
	case ref == "":
		return errors.New("empty")
	case len(ref) > maxRelativeURLLen:
		return fmt.Errorf("longer than %d bytes", maxRelativeURLLen)
	case !utf8.ValidString(ref):
		return errors.New("not UTF-8")
	}
	if r, _ := utf8.DecodeRuneInString(ref); isTrimmed(r) {
		return fmt.Errorf("starts with %U, which some parsers strip", r)
	}
	if r, _ := utf8.DecodeLastRuneInString(ref); isTrimmed(r) {
		return fmt.Errorf("ends with %U, which some parsers strip", r)
	}
	pathEnd := len(ref)
	for i, r := range ref {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return fmt.Errorf("control character %U at byte %d", r, i)
		case r != ' ' && unicode.IsSpace(r), unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp):
			return fmt.Errorf("invisible or space character %U at byte %d", r, i)
		case (r == '?' || r == '#') && pathEnd == len(ref):
			pathEnd = i
		}
	}
	path := ref[:pathEnd]
	first, _, _ := strings.Cut(path, "/")
	if i := strings.IndexAny(first, ":@"); i >= 0 {
		if isURLScheme(first[:i]) && first[i] == ':' {
			return fmt.Errorf("an absolute URL (scheme %q)", strings.ToLower(first[:i]))
		}
		return fmt.Errorf("%q before the first slash (a scheme, port or userinfo to a server that joins by hand)", first[i])
	}
	if strings.HasPrefix(path, "//") {
		return errors.New(`starts with "//" (scheme-relative: another host)`)
	}
	if strings.Contains(path, "//") {
		// "./" + "/host" resolves to a path starting with "//", which
		// reads as another host wherever the path is reused as a URL.
		return errors.New(`an empty path segment ("//")`)
	}
	for i, r := range path {
		switch r {
		case '\\':
			return fmt.Errorf("backslash at byte %d (a slash to WHATWG parsers)", i)
		case '\uff0f', '\uff3c', '\ufe68', '\u2215', '\u2216', '\u29f5', '\u29f8', '\u29f9', '\u2044':
			return fmt.Errorf("slash lookalike %U at byte %d", r, i)
		case '%':
			if i+2 >= len(path) || hexVal(path[i+1]) > 15 || hexVal(path[i+2]) > 15 {
				return fmt.Errorf("malformed percent-encoding at byte %d", i)
			}
			switch c := byte(hexVal(path[i+1])<<4 | hexVal(path[i+2])); {
			case c == '/' || c == '\\':
				return fmt.Errorf("percent-encoded slash or backslash at byte %d", i)
			case c == '%':
				return fmt.Errorf("percent-encoded %% at byte %d (double encoding)", i)
			case c < 0x20 || c == 0x7f:
				return fmt.Errorf("percent-encoded control character at byte %d", i)
			}
		}
	}
	if !utf8.ValidString(percentDecode(path)) {
		// Overlong forms such as %c0%ae, which old servers decode to ".".
		return errors.New("percent-encoding that decodes to invalid UTF-8")
	}
	for seg := range strings.SplitSeq(path, "/") {
		if isDotDot(seg) {
			return errors.New(`a ".." segment`)
		}
	}
	return nil
}

// isTrimmed reports whether some URL parser strips r from the ends of a
// URL: WHATWG strips C0 controls and space, JavaScript's trim() and
// Python's strip() Unicode white space, and some the BOM and zero-width
// characters.
func isTrimmed(r rune) bool {
	return r <= ' ' || unicode.IsSpace(r) || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// isURLScheme reports whether s is a URL scheme: a letter, then letters,
// digits, "+", "-" and ".".
func isURLScheme(s string) bool {
	if s == "" || !isAlpha(int(s[0])) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlpha(int(c)) && (c < '0' || c > '9') && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// isDotDot reports whether a path segment is "..", or reads as one to some
// server: percent-decoded, cut at ";" (path parameters, which Tomcat drops
// before normalising), with fullwidth and leader dots counted, any segment
// of two or more dots and nothing else.
func isDotDot(seg string) bool {
	if i := strings.IndexByte(seg, ';'); i >= 0 {
		seg = seg[:i]
	}
	seg = percentDecode(seg)
	dots := 0
	for _, r := range seg {
		switch r {
		case '.', '\uff0e', '\u2024', '\ufe52', '\u3002', '\uff61':
			dots++
		case '\u2025':
			dots += 2
		case '\u2026':
			dots += 3
		default:
			return false
		}
	}
	return dots >= 2
}
