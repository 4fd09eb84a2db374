package args

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// This file is the validate-only reader, for a caller that must know a text is
// strict JSON but has no use for a document: the relay checks every message it
// passes on here, so that aegis and the peer that finally decodes it cannot read
// it differently. It reads what [Doc.Decode] reads, but builds nothing, unescapes
// only object keys, and takes any top-level value.

// A Member is one member of a validated object: its unescaped key and the byte span
// [Start, End) of its value in the input. Key aliases the input when the key has no
// escapes.
type Member struct {
	Key        []byte
	Start, End int
}

type validator struct {
	data     []byte
	s        string // data, viewed as a string for the helpers Decode shares
	i        int
	depth    int
	maxDepth int
	record   bool // collect the members of a top-level object in top
	top      []Member
	keys     [][]byte // the keys of the objects being read, innermost last
}

// scratch is the memory a validation reuses.
type scratch struct {
	keys [][]byte
}

var scratchPool = sync.Pool{New: func() any { return &scratch{keys: make([][]byte, 0, 64)} }}

// Validate is validate-only: it checks that data is strict JSON as [Doc.Decode] reads
// it, without building a document. data must be exactly one JSON value of any kind,
// optionally surrounded by whitespace, nested at most maxDepth deep ({} alone is depth
// 1). It returns the first byte of the value ('{' for an object, '[' for an array,
// '"' for a string, ...), also when the value turns out to be invalid.
//
// It refuses all that Decode refuses as malformed, also comparing keys as Decode does
// (a duplicate key, or two keys equal under Unicode simple case folding: [SameKey]),
// and one thing more: an object key holding NUL (a C-string peer would read a shorter
// key). It applies no other [Limits]: the caller bounds the input's size.
//
// The error is a *[SyntaxError], for nesting past maxDepth too. Unlike Decode's
// messages, its Msg may quote an offending key (up to 64 bytes). data MUST NOT change
// during the call.
func Validate(data []byte, maxDepth int) (first byte, err error) {
	sc := scratchPool.Get().(*scratch)
	v := validator{data: data, s: view(data), maxDepth: maxDepth, keys: sc.keys[:0]}
	first, err = v.run()
	sc.release(v.keys)
	return first, err
}

// ValidateTop is [Validate] that also appends the members of a top-level object to
// top, in input order, and returns it. The members read before an error are
// returned with it (a duplicate key with a zero span), so that a caller can still
// find, say, the id of a message it refuses.
func ValidateTop(data []byte, maxDepth int, top []Member) (first byte, members []Member, err error) {
	sc := scratchPool.Get().(*scratch)
	v := validator{data: data, s: view(data), maxDepth: maxDepth, record: true, top: top, keys: sc.keys[:0]}
	first, err = v.run()
	sc.release(v.keys)
	return first, v.top, err
}

// view returns b as a string without copying. The string MUST NOT outlive a change
// to b; the validator holds views only during a call, whose input does not change.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// release returns sc to the pool with keys, its references to messages
// dropped.
func (sc *scratch) release(keys [][]byte) {
	clear(keys[:cap(keys)])
	sc.keys = keys[:0]
	scratchPool.Put(sc)
}

func (v *validator) run() (byte, error) {
	v.space()
	if v.i >= len(v.data) {
		return 0, v.errEnd()
	}
	first := v.data[v.i]
	if err := v.value(); err != nil {
		return first, err
	}
	v.space()
	if v.i < len(v.data) {
		return first, v.errorf("invalid character %q after the JSON value", v.data[v.i])
	}
	return first, nil
}

func (v *validator) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: v.i, Msg: fmt.Sprintf(format, args...)}
}

func (v *validator) errEnd() error { return v.errorf("unexpected end of JSON input") }

func (v *validator) space() { v.i = skipSpace(v.s, v.i) }

func (v *validator) value() error {
	v.space()
	if v.i >= len(v.data) {
		return v.errEnd()
	}
	switch c := v.data[v.i]; {
	case c == '{':
		return v.object()
	case c == '[':
		return v.array()
	case c == '"':
		_, err := v.str(false)
		return err
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return v.number()
	default:
		return v.errorf("invalid character %q looking for a value", c)
	}
}

func (v *validator) literal(lit string) error {
	if !bytes.HasPrefix(v.data[v.i:], []byte(lit)) {
		return v.errorf("invalid literal (want %s)", lit)
	}
	v.i += len(lit)
	return nil
}

// number accepts what scanNumber accepts, and says it in the validator's words: a
// leading zero ends the number, and what follows it is refused by the caller.
func (v *validator) number() error {
	d := v.data
	if d[v.i] == '-' {
		v.i++
	}
	switch {
	case v.i < len(d) && d[v.i] == '0':
		v.i++
	case v.i < len(d) && d[v.i] >= '1' && d[v.i] <= '9':
		v.digits()
	default:
		return v.errorf("invalid number")
	}
	if v.i < len(d) && d[v.i] == '.' {
		v.i++
		if v.digits() == 0 {
			return v.errorf("invalid number: no digits after '.'")
		}
	}
	if v.i < len(d) && (d[v.i] == 'e' || d[v.i] == 'E') {
		v.i++
		if v.i < len(d) && (d[v.i] == '+' || d[v.i] == '-') {
			v.i++
		}
		if v.digits() == 0 {
			return v.errorf("invalid number: no digits in exponent")
		}
	}
	return nil
}

func (v *validator) digits() int {
	n := 0
	for v.i < len(v.data) && v.data[v.i] >= '0' && v.data[v.i] <= '9' {
		v.i++
		n++
	}
	return n
}

func (v *validator) array() error {
	v.depth++
	if v.depth > v.maxDepth {
		return v.errorf("value nested deeper than %d", v.maxDepth)
	}
	v.i++ // '['
	v.space()
	if v.i < len(v.data) && v.data[v.i] == ']' {
		v.i++
		v.depth--
		return nil
	}
	for {
		if err := v.value(); err != nil {
			return err
		}
		v.space()
		if v.i >= len(v.data) {
			return v.errEnd()
		}
		switch v.data[v.i] {
		case ',':
			v.i++
		case ']':
			v.i++
			v.depth--
			return nil
		default:
			return v.errorf("invalid character %q after array element (want ',' or ']')", v.data[v.i])
		}
	}
}

func (v *validator) object() error {
	v.depth++
	if v.depth > v.maxDepth {
		return v.errorf("value nested deeper than %d", v.maxDepth)
	}
	record := v.depth == 1 && v.record
	v.i++ // '{'
	v.space()
	if v.i < len(v.data) && v.data[v.i] == '}' {
		v.i++
		v.depth--
		return nil
	}
	// The keys read so far are v.keys[base:], compared pairwise as Decode's
	// checkKeys does, until there are too many and a map of folded keys takes
	// over. The map's keys may view the input: it is dropped on return.
	base := len(v.keys)
	var big map[string][]byte // folded key -> key
	for {
		v.space()
		if v.i >= len(v.data) {
			return v.errEnd()
		}
		if v.data[v.i] != '"' {
			return v.errorf("invalid character %q: want a string (object key)", v.data[v.i])
		}
		keyOff := v.i
		key, err := v.str(true)
		if err != nil {
			return err
		}
		if bytes.IndexByte(key, 0) >= 0 {
			return &SyntaxError{Offset: keyOff, Msg: fmt.Sprintf("object key %.64q contains NUL", key)}
		}
		// Duplicate and case-folded duplicate keys. A top-level duplicate
		// is recorded before failing, so the caller sees both.
		if big == nil {
			for _, k := range v.keys[base:] {
				if sameKey(view(k), view(key)) {
					if record {
						v.top = append(v.top, Member{Key: key})
					}
					return dupKeyError(keyOff, k, key)
				}
			}
			v.keys = append(v.keys, key)
			if len(v.keys)-base > smallObject {
				big = make(map[string][]byte, 4*smallObject)
				for _, k := range v.keys[base:] {
					big[foldKey(view(k))] = k
				}
			}
		} else {
			f := foldKey(view(key))
			if k, ok := big[f]; ok {
				if record {
					v.top = append(v.top, Member{Key: key})
				}
				return dupKeyError(keyOff, k, key)
			}
			big[f] = key
		}

		v.space()
		if v.i >= len(v.data) {
			return v.errEnd()
		}
		if v.data[v.i] != ':' {
			return v.errorf("invalid character %q after object key (want ':')", v.data[v.i])
		}
		v.i++
		v.space()
		start := v.i
		if err := v.value(); err != nil {
			return err
		}
		if record {
			v.top = append(v.top, Member{Key: key, Start: start, End: v.i})
		}
		v.space()
		if v.i >= len(v.data) {
			return v.errEnd()
		}
		switch v.data[v.i] {
		case ',':
			v.i++
		case '}':
			v.i++
			v.depth--
			v.keys = v.keys[:base]
			return nil
		default:
			return v.errorf("invalid character %q after object member (want ',' or '}')", v.data[v.i])
		}
	}
}

func dupKeyError(off int, a, b []byte) error {
	if bytes.Equal(a, b) {
		return &SyntaxError{Offset: off, Msg: fmt.Sprintf("duplicate key %.64q", b)}
	}
	return &SyntaxError{Offset: off, Msg: fmt.Sprintf("keys %.64q and %.64q differ only in case", a, b)}
}

// str validates the string starting at v.i. For a key it returns the
// unescaped key, aliasing v.data when the key has no escapes.
func (v *validator) str(isKey bool) ([]byte, error) {
	d := v.data
	v.i++ // opening quote
	start := v.i
	escaped := false
	for v.i < len(d) {
		// Skip plain text: a word at a time, then a byte at a time.
		for v.i+8 <= len(d) && !special(binary.LittleEndian.Uint64(d[v.i:])) {
			v.i += 8
		}
		for v.i < len(d) && plain[d[v.i]] {
			v.i++
		}
		if v.i >= len(d) {
			break
		}
		c := d[v.i]
		switch {
		case c == '"':
			raw := d[start:v.i]
			v.i++
			if !isKey {
				return nil, nil
			}
			if !escaped {
				return raw, nil
			}
			return unescapeText(raw), nil
		case c == '\\':
			escaped = true
			if err := v.escape(); err != nil {
				return nil, err
			}
		case c < 0x20:
			return nil, v.errorf("control character %#02x in string", c)
		case c < utf8.RuneSelf:
			v.i++
		default:
			r, size := utf8.DecodeRune(d[v.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, v.errorf("invalid UTF-8 in string")
			}
			v.i += size
		}
	}
	return nil, v.errEnd()
}

// escape validates the escape sequence at v.i (a backslash) and moves past it.
func (v *validator) escape() error {
	d := v.data
	if v.i+1 >= len(d) {
		return v.errEnd()
	}
	switch d[v.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		v.i += 2
		return nil
	case 'u':
		r := hex4(v.s, v.i+2)
		if r < 0 {
			return v.errorf("invalid \\u escape")
		}
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00:
			// A high surrogate must be followed by an escaped low surrogate.
			rest := d[v.i+6:]
			if len(rest) < 2 || rest[0] != '\\' || rest[1] != 'u' {
				return v.errorf("lone surrogate \\u%04x in string", r)
			}
			r2 := hex4(v.s, v.i+8)
			if r2 < 0 {
				return v.errorf("invalid \\u escape")
			}
			if r2 < 0xdc00 || r2 > 0xdfff {
				return v.errorf("lone surrogate \\u%04x in string", r)
			}
			v.i += 12
		case utf16.IsSurrogate(r):
			return v.errorf("lone surrogate \\u%04x in string", r)
		default:
			v.i += 6
		}
		return nil
	default:
		return v.errorf("invalid escape '\\%c' in string", d[v.i+1])
	}
}

// Unquote returns the value of a JSON string literal, quotes included, that
// [Validate] accepted, aliasing s when it has no escapes. It does not check s again:
// on anything else its result is unspecified.
func Unquote(s []byte) []byte {
	if len(s) < 2 {
		return nil
	}
	return unescapeText(s[1 : len(s)-1])
}

// unescapeText decodes the escapes of the validated inside of a JSON string.
func unescapeText(raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw
	}
	s := view(raw)
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch raw[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(s, i+2)
			if utf16.IsSurrogate(r) {
				r2 := hex4(s, i+8)
				r = utf16.DecodeRune(r, r2)
				i += 6
			}
			out = utf8.AppendRune(out, r)
			i += 6
			continue
		default: // '"', '\\', '/'
			out = append(out, raw[i+1])
		}
		i += 2
	}
	return out
}
