package envelope

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// appendLine appends the JSON line of r (without its newline), with the
// given version and nonce, byte for byte as json.Marshal writes the Record
// {V: Version, Nonce: hex(nonce), …} with nil Redactions as [] and
// arguments (and input responses) that are not valid JSON as a JSON
// string of at most maxRaw bytes: field order, escaping (<, >, & and U+2028/U+2029 escaped,
// invalid UTF-8 as \ufffd), the time as time.Time.MarshalJSON writes it
// and the arguments compacted as json.Marshal compacts a RawMessage.
// FuzzRecordLine holds it to json.Marshal.
//
// It fails where json.Marshal fails: on a time that RFC 3339 cannot
// write (a year outside 0..9999, a zone offset of 24 hours or more).
func appendLine(dst []byte, r *Record, nonce *[16]byte) ([]byte, error) {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, Version, 10)
	dst = append(dst, `,"nonce":"`...)
	for _, b := range nonce {
		dst = append(dst, hexDigits[b>>4], hexDigits[b&0xF])
	}
	dst = append(dst, `","time":"`...)
	n := len(dst)
	out, err := r.Time.AppendText(dst)
	if err != nil {
		// Time.MarshalJSON fails alike, and so did json.Marshal.
		return dst[:n], fmt.Errorf("envelope: the record's time: %w", err)
	}
	dst = append(out, `","session":`...)
	dst = appendString(dst, r.Session)
	dst = append(dst, `,"principal":`...)
	dst = appendString(dst, r.Principal)
	dst = append(dst, `,"server":`...)
	dst = appendString(dst, r.Server)
	dst = append(dst, `,"tool":`...)
	dst = appendString(dst, r.Tool)
	if r.Forwarded {
		dst = append(dst, `,"forwarded":true,"arguments":`...)
	} else {
		dst = append(dst, `,"forwarded":false,"arguments":`...)
	}
	dst = appendArguments(dst, r.Arguments)
	dst = append(dst, `,"redactions":`...)
	dst = appendRedactions(dst, r.Redactions)
	if len(r.InputResponses) > 0 {
		dst = append(dst, `,"input_responses":`...)
		dst = appendArguments(dst, r.InputResponses)
	}
	if len(r.InputRedactions) > 0 {
		dst = append(dst, `,"input_redactions":`...)
		dst = appendRedactions(dst, r.InputRedactions)
	}
	return append(dst, '}'), nil
}

// appendRedactions appends reds as a JSON array.
func appendRedactions(dst []byte, reds []Redaction) []byte {
	dst = append(dst, '[')
	for i, red := range reds {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"pointer":`...)
		dst = appendString(dst, red.Pointer)
		dst = append(dst, `,"kind":`...)
		dst = appendString(dst, red.Kind)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendArguments appends the arguments as the record keeps them: valid
// JSON compacted, as json.Marshal compacts a RawMessage; anything else
// (nil included) as a JSON string of its first maxRaw bytes, each run of
// invalid UTF-8 replaced by U+FFFD.
func appendArguments(dst, raw []byte) []byte {
	if out, ok := appendCompact(dst, raw); ok {
		return out
	}
	// Not JSON the fast path reads: deeper than it goes, or not JSON at
	// all. Both are rare; encoding/json decides.
	if json.Valid(raw) {
		b, err := json.Marshal(json.RawMessage(raw))
		if err == nil {
			return append(dst, b...)
		}
	}
	if len(raw) > maxRaw {
		raw = raw[:maxRaw]
	}
	return appendString(dst, strings.ToValidUTF8(string(raw), "\uFFFD"))
}

// maxFastDepth is how deeply appendCompact nests; deeper arguments take
// encoding/json's path.
const maxFastDepth = 64

// appendCompact appends src compacted, as json.Marshal compacts a
// RawMessage: whitespace outside strings dropped, <, > and & escaped as
// \u003c, \u003e, \u0026 and U+2028, U+2029 as \u2028, \u2029, every other
// byte kept (invalid UTF-8 included, which encoding/json lets through a
// RawMessage). ok is false, with dst as it was, when src is not one valid
// JSON value or nests deeper than maxFastDepth.
func appendCompact(dst, src []byte) (out []byte, ok bool) {
	n := len(dst)
	i := skipSpace(src, 0)
	dst, i, ok = appendValue(dst, src, i, 0)
	if !ok || skipSpace(src, i) != len(src) {
		return dst[:n], false
	}
	return dst, true
}

func skipSpace(src []byte, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// appendValue appends the JSON value at src[i:], compacted, and returns
// the index after it.
func appendValue(dst, src []byte, i, depth int) ([]byte, int, bool) {
	if i >= len(src) {
		return dst, i, false
	}
	switch c := src[i]; {
	case c == '{':
		if depth >= maxFastDepth {
			return dst, i, false
		}
		dst = append(dst, '{')
		i = skipSpace(src, i+1)
		if i < len(src) && src[i] == '}' {
			return append(dst, '}'), i + 1, true
		}
		for {
			if i >= len(src) || src[i] != '"' {
				return dst, i, false
			}
			var ok bool
			if dst, i, ok = appendStringToken(dst, src, i); !ok {
				return dst, i, false
			}
			i = skipSpace(src, i)
			if i >= len(src) || src[i] != ':' {
				return dst, i, false
			}
			dst = append(dst, ':')
			i = skipSpace(src, i+1)
			if dst, i, ok = appendValue(dst, src, i, depth+1); !ok {
				return dst, i, false
			}
			i = skipSpace(src, i)
			if i >= len(src) {
				return dst, i, false
			}
			switch src[i] {
			case ',':
				dst = append(dst, ',')
				i = skipSpace(src, i+1)
			case '}':
				return append(dst, '}'), i + 1, true
			default:
				return dst, i, false
			}
		}
	case c == '[':
		if depth >= maxFastDepth {
			return dst, i, false
		}
		dst = append(dst, '[')
		i = skipSpace(src, i+1)
		if i < len(src) && src[i] == ']' {
			return append(dst, ']'), i + 1, true
		}
		for {
			var ok bool
			if dst, i, ok = appendValue(dst, src, i, depth+1); !ok {
				return dst, i, false
			}
			i = skipSpace(src, i)
			if i >= len(src) {
				return dst, i, false
			}
			switch src[i] {
			case ',':
				dst = append(dst, ',')
				i = skipSpace(src, i+1)
			case ']':
				return append(dst, ']'), i + 1, true
			default:
				return dst, i, false
			}
		}
	case c == '"':
		return appendStringToken(dst, src, i)
	case c == '-' || '0' <= c && c <= '9':
		end, ok := numberEnd(src, i)
		return append(dst, src[i:end]...), end, ok
	case c == 't':
		return appendLiteral(dst, src, i, "true")
	case c == 'f':
		return appendLiteral(dst, src, i, "false")
	case c == 'n':
		return appendLiteral(dst, src, i, "null")
	}
	return dst, i, false
}

func appendLiteral(dst, src []byte, i int, lit string) ([]byte, int, bool) {
	if len(src)-i < len(lit) || string(src[i:i+len(lit)]) != lit {
		return dst, i, false
	}
	return append(dst, lit...), i + len(lit), true
}

// numberEnd returns the index after the JSON number at src[i:]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(src []byte, i int) (int, bool) {
	if src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && '1' <= src[i] && src[i] <= '9':
		i = digitsEnd(src, i+1)
	default:
		return i, false
	}
	if i < len(src) && src[i] == '.' {
		j := digitsEnd(src, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		j := digitsEnd(src, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digitsEnd(src []byte, i int) int {
	for i < len(src) && '0' <= src[i] && src[i] <= '9' {
		i++
	}
	return i
}

// appendStringToken appends the JSON string at src[i:] (src[i] is its
// quote) as it is, but for <, >, & and U+2028, U+2029, which it escapes.
func appendStringToken(dst, src []byte, i int) ([]byte, int, bool) {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	i++
	start := i
	for i < len(src) {
		c := src[i]
		switch {
		case c == '"':
			return append(append(dst, src[start:i]...), '"'), i + 1, true
		case c == '\\':
			if i+1 >= len(src) {
				return dst, i, false
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(src)-i < 6 || !isHex(src[i+2]) || !isHex(src[i+3]) || !isHex(src[i+4]) || !isHex(src[i+5]) {
					return dst, i, false
				}
				i += 6
			default:
				return dst, i, false
			}
		case c < 0x20:
			return dst, i, false
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			i++
			start = i
		case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xF])
			i += 3
			start = i
		default:
			i++
		}
	}
	return dst, i, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// htmlSafe says which ASCII bytes encoding/json writes as they are in a
// string when it escapes HTML: all but the controls, ", \, <, > and &.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// appendString appends s as a JSON string exactly as json.Marshal writes
// a string: <, >, & and the controls escaped (\b, \f, \n, \r, \t by name,
// the others as \u00XX), U+2028 and U+2029 escaped, and each byte of
// invalid UTF-8 written as \ufffd.
func appendString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if htmlSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
