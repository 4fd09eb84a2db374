package session

import (
	"regexp"
	"strings"

	"github.com/aegis-mcp/aegis/internal/args"
)

// This file keeps value-level taint (DESIGN.md R36): the distinctive
// values of a session's untrusted results (its URLs, e-mail addresses,
// long words and short whole strings), so that a call whose arguments
// carry one of them is tainted, and a call that carries none is not, while
// the session itself stays clean.

// MaxTaintedValues bounds the values one session keeps; past it the oldest
// are forgotten.
const MaxTaintedValues = 8192

var (
	tokURL   = regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]{0,31}://[^\s<>"'` + "`" + `]+`)
	tokEmail = regexp.MustCompile(`(?i)[a-z0-9._%+-]+@[a-z0-9-]+(\.[a-z0-9-]+)+`)
	tokWord  = regexp.MustCompile(`[A-Za-z0-9._~:/?#@%+=&-]{12,}`)
)

// Tokens appends to dst the distinctive values of the strings of v: each
// whole string of 8 to 256 bytes, and in every string its URLs, e-mail
// addresses and words of 12 characters or more. What the model copies
// from a result into an argument carries one of them.
func Tokens(dst []string, v args.Value) []string {
	var walk func(v args.Value)
	walk = func(v args.Value) {
		switch v.Kind() {
		case args.String:
			dst = tokensOf(dst, v.Str())
		case args.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case args.Object:
			for _, m := range v.Members() {
				walk(m)
			}
		}
	}
	walk(v)
	return dst
}

func tokensOf(dst []string, s string) []string {
	if t := strings.TrimSpace(s); len(t) >= 8 && len(t) <= 256 {
		dst = append(dst, strings.ToLower(t))
	}
	for _, m := range tokURL.FindAllString(s, 64) {
		u := strings.ToLower(strings.TrimRight(m, ".,;:!?)]"))
		dst = append(dst, u)
		// The host alone: a link to the page's host, however its path,
		// query or case was rewritten, carries it.
		if h := urlHost(u); h != "" {
			dst = append(dst, "host:"+h)
		}
	}
	for _, m := range tokEmail.FindAllString(s, 64) {
		e := strings.ToLower(strings.TrimRight(m, ".,;:!?)]"))
		dst = append(dst, e)
		// The domain alone: mail to the page's domain, under any name
		// or +tag, carries it.
		if _, d, ok := strings.Cut(e, "@"); ok {
			dst = append(dst, "maildomain:"+strings.TrimRight(d, "."))
		}
	}
	for _, m := range tokWord.FindAllString(s, 64) {
		dst = append(dst, strings.ToLower(strings.TrimRight(m, ".,;:!?)]")))
	}
	return dst
}

// urlHost returns the host of a lower-cased URL token: after "://", before
// the path, the userinfo and the port, with no trailing dot.
func urlHost(u string) string {
	_, rest, ok := strings.Cut(u, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#\\"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	if strings.HasPrefix(rest, "[") {
		if i := strings.IndexByte(rest, ']'); i > 0 {
			return rest[:i+1]
		}
		return ""
	}
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		rest = rest[:i]
	}
	return strings.TrimRight(rest, ".")
}

// TaintValues records tokens as values of an untrusted result of session
// id, from by (server/tool).
func (s *Store) TaintValues(id, by string, tokens []string) {
	if len(tokens) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.ensure(id, s.clock())
	if st.values == nil {
		st.values = map[string]string{}
	}
	for _, t := range tokens {
		if _, ok := st.values[t]; ok {
			continue
		}
		if len(st.valueOrder) >= MaxTaintedValues {
			delete(st.values, st.valueOrder[0])
			st.valueOrder = st.valueOrder[1:]
		}
		t = strings.Clone(t)
		st.values[t] = strings.Clone(by)
		st.valueOrder = append(st.valueOrder, t)
	}
}

// CarriesTaint reports whether one of tokens is a value an untrusted
// result of session id held, and whose result it was.
func (s *Store) CarriesTaint(id string, tokens []string) (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.lookup(id, s.clock())
	if st == nil || len(st.values) == 0 {
		return false, ""
	}
	for _, t := range tokens {
		if by, ok := st.values[t]; ok {
			return true, by
		}
	}
	return false, ""
}
