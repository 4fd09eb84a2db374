package auth

import (
	"net/http"
	"net/url"
	"strings"
)

// credential reads the bearer credential of r (RFC 6750 §2.1): exactly
// one Authorization header, the scheme Bearer in any case, one or more
// spaces, and a b64token. A token in the query (§2.3) is refused, not
// ignored, so that a client leaking tokens into URLs and logs hears
// about it; so is one in a form body, which aegis never reads.
func credential(r *http.Request) (string, error) {
	if r.URL != nil && hasQueryToken(r.URL.RawQuery) {
		return "", fail(TokenInQuery, "the MCP authorization spec forbids tokens in URLs; send an Authorization header")
	}
	vals := r.Header.Values("Authorization")
	switch len(vals) {
	case 0:
		return "", fail(NoCredentials, "no Authorization header")
	case 1:
	default:
		return "", fail(MultipleHeaders, "%d Authorization headers, want one", len(vals))
	}
	scheme, rest, _ := strings.Cut(vals[0], " ")
	if !isToken(scheme) {
		return "", fail(MalformedHeader, "the scheme is not an RFC 9110 token")
	}
	if !strings.EqualFold(scheme, "Bearer") {
		return "", fail(UnsupportedScheme, "scheme %s, want Bearer", quote(scheme))
	}
	cred := strings.TrimLeft(rest, " ")
	switch {
	case cred == "":
		return "", fail(MalformedHeader, "empty bearer token")
	case len(cred) > MaxCredentialBytes:
		return "", fail(MalformedToken, "the token is %d bytes, over the limit of %d", len(cred), MaxCredentialBytes)
	case !isB64Token(cred):
		return "", fail(MalformedHeader, "the bearer token has characters outside RFC 6750's b64token")
	}
	return cred, nil
}

// hasQueryToken says whether a query has an access_token key, however it
// is spelled: percent-encoded, or after a ';', which url.ParseQuery drops
// but a proxy in front of aegis may not.
func hasQueryToken(raw string) bool {
	for _, pair := range strings.FieldsFunc(raw, func(r rune) bool { return r == '&' || r == ';' }) {
		k, _, _ := strings.Cut(pair, "=")
		if k == "access_token" {
			return true
		}
		if u, err := url.QueryUnescape(k); err == nil && u == "access_token" {
			return true
		}
	}
	return false
}

// isToken: RFC 9110's token, 1*tchar.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// isB64Token: RFC 6750's b64token, 1*( ALPHA / DIGIT / "-" / "." / "_" /
// "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	end := len(strings.TrimRight(s, "="))
	if end == 0 {
		return false
	}
	for i := 0; i < end; i++ {
		c := s[i]
		if !isAlnum(c) && !strings.ContainsRune("-._~+/", rune(c)) {
			return false
		}
	}
	return true
}

// isScopeToken: RFC 6749's scope-token, 1*( %x21 / %x23-5B / %x5D-7E ).
func isScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
