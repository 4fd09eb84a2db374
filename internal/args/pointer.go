package args

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Pointer is an RFC 6901 JSON Pointer with one extension: a reference token that is
// exactly "*" selects every element of an array, or every member value of an object, so
// one binding can name a list of paths ("/paths/*") or a field of each of a list of
// objects ("/edits/*/path"). A consequence is that an object member whose key is
// exactly "*" cannot be named on its own; "/*" selects it along with its siblings.
//
// As in RFC 6901, "" is the whole document, "/" is the member with the empty key, "~1"
// stands for '/' and "~0" for '~' within a token, and a token names an array element
// only if it is "0" or a decimal integer without leading zeros; "-" (the element after
// the last) never selects anything. The zero Pointer is "".
type Pointer struct {
	s    string
	toks []token
	wild bool // some token is "*"
}

type token struct {
	name  string // unescaped
	index int    // the array index the token names, or -1
	wild  bool
}

// ParsePointer parses s as a [Pointer]. It fails on a pointer that does not start with
// '/', on '~' not followed by '0' or '1', and on invalid UTF-8 (which no key can hold).
func ParsePointer(s string) (Pointer, error) {
	if s == "" {
		return Pointer{}, nil
	}
	if s[0] != '/' {
		return Pointer{}, fmt.Errorf("args: JSON pointer %q must be empty or start with '/'", s)
	}
	if !utf8.ValidString(s) {
		return Pointer{}, fmt.Errorf("args: JSON pointer %q is not valid UTF-8", s)
	}
	p := Pointer{s: s, toks: make([]token, 0, strings.Count(s, "/"))}
	off := 1
	for raw := range strings.SplitSeq(s[1:], "/") {
		name := raw
		if strings.IndexByte(raw, '~') >= 0 {
			var b strings.Builder
			for k := 0; k < len(raw); k++ {
				c := raw[k]
				if c != '~' {
					b.WriteByte(c)
					continue
				}
				if k+1 >= len(raw) || (raw[k+1] != '0' && raw[k+1] != '1') {
					return Pointer{}, fmt.Errorf("args: JSON pointer %q: '~' at byte %d must be followed by 0 or 1", s, off+k)
				}
				k++
				b.WriteByte("~/"[raw[k]-'0'])
			}
			name = b.String()
		}
		wild := raw == "*"
		p.wild = p.wild || wild
		p.toks = append(p.toks, token{name: name, index: arrayIndex(name), wild: wild})
		off += len(raw) + 1
	}
	return p, nil
}

// arrayIndex returns the array index that an RFC 6901 token names, or -1.
func arrayIndex(tok string) int {
	if tok == "" || len(tok) > 10 || (tok[0] == '0' && len(tok) > 1) {
		return -1 // an array in a document under 2 GiB has fewer than 2^31 elements
	}
	var n int64
	for k := 0; k < len(tok); k++ {
		if !isDigit(tok[k]) {
			return -1
		}
		n = n*10 + int64(tok[k]-'0')
	}
	if n > math.MaxInt32 {
		return -1
	}
	return int(n)
}

// String returns the pointer as ParsePointer read it.
func (p Pointer) String() string { return p.s }

// Wild reports whether some token of p is "*": it may select many values.
func (p Pointer) Wild() bool { return p.wild }

// Select calls fn for every value that p selects under root, in document order. A value
// that is not there (a missing key, an index out of range, a step into a scalar) is
// simply not selected. at is the concrete location of v, relative to root: building its
// text allocates when p has a wildcard, so it is built only if fn calls at.String.
func (p Pointer) Select(root Value, fn func(v Value, at Loc)) {
	if root.Kind() == Invalid {
		return
	}
	p.walk(root, root, 0, fn)
}

// walk recurses once per token; a pointer longer than the document is deep stops at the
// first scalar, so recursion is bounded by MaxDepth.
func (p Pointer) walk(root, v Value, k int, fn func(Value, Loc)) {
	if k == len(p.toks) {
		fn(v, Loc{p: p, root: root, v: v})
		return
	}
	t := &p.toks[k]
	switch v.Kind() {
	case Object:
		if t.wild {
			for m := range v.Len() {
				_, e := v.Member(m)
				p.walk(root, e, k+1, fn)
			}
		} else if e, ok := v.Lookup(t.name); ok {
			p.walk(root, e, k+1, fn)
		}
	case Array:
		if t.wild {
			for m := range v.Len() {
				p.walk(root, v.Index(m), k+1, fn)
			}
		} else if t.index >= 0 && t.index < v.Len() {
			p.walk(root, v.Index(t.index), k+1, fn)
		}
	}
}

// CaseVariant reports a member key on p's path that differs from p's token
// only in case ("PATH" where p says "path") while the exact key is absent.
// A server that matches keys case-insensitively (Go's encoding/json does)
// would read that member as the bound argument, and Select would not see
// it: a binding must refuse such a call.
func (p Pointer) CaseVariant(root Value) (key string, found bool) {
	if root.Kind() == Invalid {
		return "", false
	}
	p.variant(root, 0, &key, &found)
	return key, found
}

func (p Pointer) variant(v Value, k int, key *string, found *bool) {
	if k == len(p.toks) || *found {
		return
	}
	t := &p.toks[k]
	switch v.Kind() {
	case Object:
		if t.wild {
			for m := range v.Len() {
				_, e := v.Member(m)
				p.variant(e, k+1, key, found)
			}
			return
		}
		// One pass finds both the member named exactly and the first named so but
		// for case. (Decode refuses an object holding two keys that sameKey calls
		// the same, so there is at most one of either.)
		variant, folded := "", false
		for name, e := range v.Members() {
			if differAtFirst(name, t.name) || !sameKeyFolded(name, t.name) {
				continue
			}
			if name == t.name {
				p.variant(e, k+1, key, found)
				return
			}
			if !folded {
				variant, folded = name, true
			}
		}
		if folded {
			*key, *found = variant, true
		}
	case Array:
		if t.wild {
			for m := range v.Len() {
				p.variant(v.Index(m), k+1, key, found)
			}
		} else if t.index >= 0 && t.index < v.Len() {
			p.variant(v.Index(t.index), k+1, key, found)
		}
	}
}

// SelectExact is [Pointer.Select] for a caller that must refuse a case variant: when
// p.CaseVariant(root) finds a key, it calls fn for nothing and returns that key;
// otherwise it selects as Select does. A pointer without a wildcard is walked once,
// each object's members read once for both questions.
func (p Pointer) SelectExact(root Value, fn func(v Value, at Loc)) (key string, found bool) {
	if p.wild || root.Kind() == Invalid {
		if key, found = p.CaseVariant(root); found {
			return key, true
		}
		p.Select(root, fn)
		return "", false
	}
	v := root
	for k := range p.toks {
		t := &p.toks[k]
		switch v.Kind() {
		case Object:
			next, exact, variant, folded := Value{}, false, "", false
			for name, e := range v.Members() {
				if differAtFirst(name, t.name) || !sameKeyFolded(name, t.name) {
					continue
				}
				if name == t.name {
					next, exact = e, true
					break
				}
				if !folded {
					variant, folded = name, true
				}
			}
			switch {
			case exact:
				v = next
			case folded:
				return variant, true
			default:
				return "", false // absent: nothing selected
			}
		case Array:
			if t.index < 0 || t.index >= v.Len() {
				return "", false
			}
			v = v.Index(t.index)
		default:
			return "", false // a scalar has nothing below it
		}
	}
	fn(v, Loc{p: p, root: root, v: v})
	return "", false
}

// Loc is the concrete location of a value that [Pointer.Select] selected: the pointer with
// each "*" replaced by the index or (escaped) key it matched.
type Loc struct {
	p       Pointer
	root, v Value
}

// String returns the location as a JSON Pointer relative to Select's root, such as
// "/paths/3". A member whose key is exactly "*" appears as "/*", which ParsePointer
// reads back as a wildcard.
func (l Loc) String() string {
	if !l.p.wild {
		return l.p.s
	}
	b := make([]byte, 0, len(l.p.s)+8)
	cur := l.root
	for _, t := range l.p.toks {
		b = append(b, '/')
		switch {
		case t.wild:
			var key string
			var idx int
			cur, key, idx = cur.childHolding(l.v)
			if key != "" || idx < 0 {
				b = appendToken(b, key)
			} else {
				b = strconv.AppendInt(b, int64(idx), 10)
			}
		case cur.Kind() == Object:
			b = appendToken(b, t.name)
			cur, _ = cur.Lookup(t.name)
		default:
			b = appendToken(b, t.name)
			cur = cur.Index(t.index)
		}
	}
	return string(b)
}

// childHolding returns the child of v whose source text contains target's: target itself
// or its ancestor. For an object it returns the member's key and idx -1; for an array, ""
// and the element's index.
func (v Value) childHolding(target Value) (child Value, key string, idx int) {
	n, tn := v.node(), target.node()
	if n == nil || tn == nil {
		return Value{}, "", -1
	}
	stride := 1
	if n.kind == Object {
		stride = 2
	}
	kids := v.d.kids[n.a : n.a+int32(stride)*n.b]
	// Children are in source order; find the last one starting at or before target.
	m := sort.Search(int(n.b), func(m int) bool {
		return v.d.nodes[kids[m*stride+stride-1]].start > tn.start
	}) - 1
	if m < 0 {
		return Value{}, "", -1
	}
	if n.kind == Object {
		return v.at(kids[2*m+1]), v.d.text(kids[2*m]), -1
	}
	return v.at(kids[m]), "", m
}

// AppendToken appends name escaped as an RFC 6901 reference token ('~' as
// "~0", '/' as "~1").
func AppendToken(b []byte, name string) []byte { return appendToken(b, name) }

func appendToken(b []byte, name string) []byte {
	for k := 0; k < len(name); k++ {
		switch c := name[k]; c {
		case '~':
			b = append(b, "~0"...)
		case '/':
			b = append(b, "~1"...)
		default:
			b = append(b, c)
		}
	}
	return b
}
