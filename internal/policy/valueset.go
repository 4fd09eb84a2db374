package policy

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A ValueSet is a named set of trusted values (DESIGN.md R16): verified
// payees, recipients, channels, or a whole domain (`*@example.org`). A
// rule names sets with `id_in`; the gateway counts a member as a proven id
// of the set's kind. Values are compared exactly, after trimming
// surrounding white space, as ids are; a value holding `*` is a pattern
// whose `*` matches any run of characters. It is immutable.
type ValueSet struct {
	// IDKind is the kind of id the values are (bank.payee, mail.contact).
	IDKind string
	exact  map[string]bool
	globs  []string
	digest [32]byte // of the kind and the sorted values: the policy hash's
}

// NewValueSet returns the set of values of kind idKind. A value must be
// valid UTF-8 and not blank; a pattern must hold something beside its
// `*`s.
func NewValueSet(idKind string, values []string) (*ValueSet, error) {
	vs := &ValueSet{IDKind: idKind, exact: map[string]bool{}}
	var all []string
	for _, v := range values {
		v = strings.TrimSpace(v)
		switch {
		case v == "" || !utf8.ValidString(v):
			return nil, fmt.Errorf("value %q: want a non-blank UTF-8 value", v)
		case strings.Trim(v, "*") == "":
			return nil, fmt.Errorf("value %q: a pattern must hold more than *, or it trusts every value", v)
		case strings.Contains(v, "*"):
			vs.globs = append(vs.globs, v)
		default:
			vs.exact[v] = true
		}
		all = append(all, v)
	}
	slices.Sort(all)
	h := sha256.New()
	h.Write([]byte("aegis value set v1\x00" + idKind + "\x00"))
	for _, v := range all {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	h.Sum(vs.digest[:0])
	return vs, nil
}

// Has reports whether v, trimmed, is in the set.
func (s *ValueSet) Has(v string) bool {
	if s == nil {
		return false
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return false
	}
	if s.exact[v] {
		return true
	}
	for _, g := range s.globs {
		if globMatch(g, v) {
			return true
		}
	}
	return false
}

// globMatch matches v against g, whose `*` matches any run of characters
// (none included) but a separator: a mail server or a payments API reads
// "mallory@evil.com, bob@example.org" as two recipients, so `*@example.org`
// must not trust it. Nothing else is special.
func globMatch(g, v string) bool {
	parts := strings.Split(g, "*")
	if !strings.HasPrefix(v, parts[0]) {
		return false
	}
	v = v[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(v, p)
		if i < 0 || strings.ContainsFunc(v[:i], globStop) {
			return false
		}
		v = v[i+len(p):]
	}
	if len(parts) == 1 {
		return v == ""
	}
	return strings.HasSuffix(v, last) && len(v) >= len(last) && !strings.ContainsFunc(v[:len(v)-len(last)], globStop)
}

// globStop reports whether r is a character a `*` does not match: white
// space, a control, format or separator character, or one that separates or routes addresses
// and lists (, ; : @ % ! < > ( ) [ ] " ' \).
func globStop(r rune) bool {
	return unicode.IsSpace(r) || unicode.In(r, unicode.C, unicode.Z) || strings.ContainsRune(",;:@%!<>()[]\"'\\", r)
}

var errNoSet = errors.New("no such set")

func sortedSetNames(sets map[string]*ValueSet) []string {
	out := make([]string, 0, len(sets))
	for n := range sets {
		out = append(out, n)
	}
	slices.Sort(out)
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}
