package args

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends v encoded per RFC 8785 (the JSON Canonicalization Scheme) to dst:
// no whitespace, object members sorted by the UTF-16 code units of their keys, strings
// escaped as JCS prescribes, and numbers serialised as ECMAScript serialises the IEEE 754
// double they denote.
//
// JCS models every number as a double, so a number a double cannot hold is encoded from
// the nearest double: 12345678901234567890 becomes 12345678901234567000, and two
// different numbers can share an encoding. One beyond the double range (1e400) becomes
// null, as ECMAScript's JSON.stringify writes Infinity. Where a distinct value must
// never share an encoding (hashes that bind an approval), use [Value.AppendCanonical].
//
// The zero or a stale Value appends nothing.
func (v Value) AppendJSON(dst []byte) []byte {
	dst, _ = v.appendJCS(dst, false)
	return dst
}

// AppendCanonical is [Value.AppendJSON] that fails closed on numbers: it returns an
// error, naming the number's byte offset, for any number that does not round-trip
// through a double exactly (whose value differs from the value of its canonical text),
// so that the encoding is injective on the values it accepts. 0.1, 4.50, 1E30 and -0
// round-trip; 9007199254740993, 0.10000000000000001 and 1e400 do not.
func (v Value) AppendCanonical(dst []byte) ([]byte, error) {
	if v.Kind() == Invalid {
		return dst, errors.New("args: canonical encoding of an invalid value")
	}
	return v.appendJCS(dst, true)
}

// appendJCS recurses once per level of nesting, which Decode capped at MaxDepth.
func (v Value) appendJCS(dst []byte, strict bool) ([]byte, error) {
	n := v.node()
	if n == nil {
		return dst, nil
	}
	var err error
	switch n.kind {
	case Null, Bool:
		return append(dst, v.Raw()...), nil
	case Number:
		return appendNumberText(dst, v.Raw(), int(n.start), strict)
	case String:
		return appendString(dst, v.Str()), nil
	case Array:
		dst = append(dst, '[')
		for i := range int(n.b) {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = v.Index(i).appendJCS(dst, strict); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case Object:
		var small [smallObject]int32
		order := small[:0]
		if n.b > smallObject {
			order = make([]int32, 0, n.b)
		}
		for i := range n.b {
			order = append(order, v.d.kids[n.a+2*i])
		}
		v.d.sortKeys(order)
		dst = append(dst, '{')
		for i, k := range order {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, v.d.text(k))
			dst = append(dst, ':')
			// A key node's value node follows it directly in document order.
			if dst, err = v.at(k+1).appendJCS(dst, strict); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return dst, nil
}

// sortKeys sorts key nodes by the UTF-16 code units of their text, as JCS requires.
func (d *Doc) sortKeys(keys []int32) {
	if len(keys) > smallObject {
		slices.SortFunc(keys, func(a, b int32) int { return compareUTF16(d.text(a), d.text(b)) })
		return
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && compareUTF16(d.text(keys[j-1]), d.text(keys[j])) > 0; j-- {
			keys[j-1], keys[j] = keys[j], keys[j-1]
		}
	}
}

// compareUTF16 orders valid UTF-8 strings by their UTF-16 code units. This differs from
// byte (code point) order only where a character above U+FFFF, encoded as a surrogate
// pair from 0xD800, meets one in U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return cmp.Compare(len(a), len(b))
	}
	// Back up to the start of the characters that differ; the prefix is shared, so the
	// character starts at the same offset in both.
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	return cmp.Compare(utf16Key(ra), utf16Key(rb))
}

// utf16Key maps r to its UTF-16 code units, first unit in the high half.
func utf16Key(r rune) uint32 {
	if r < 0x10000 {
		return uint32(r) << 16
	}
	r -= 0x10000
	return uint32(0xD800+r>>10)<<16 | uint32(0xDC00+r&0x3FF)
}

// AppendString appends s as a JSON string the way RFC 8785 writes one: only '"', '\\'
// and control characters are escaped, with the short forms where JSON has them and
// \u00xx otherwise. s should be valid UTF-8; its bytes are copied as they are.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		for i+8 <= len(s) && !special(load64(s, i)) {
			i += 8 // eight bytes that need no escape (special also stops at non-ASCII)
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
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
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendNumberText appends the JCS form of the JSON number raw, found at byte off.
func appendNumberText(dst []byte, raw string, off int, strict bool) ([]byte, error) {
	if isSmallInt(raw) {
		return append(dst, raw...), nil // already its own ECMAScript form
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return dst, fmt.Errorf("args: number at byte %d: %w", off, err) // unreachable after Decode
	}
	if math.IsInf(f, 0) {
		if strict {
			return dst, fmt.Errorf("args: number at byte %d is beyond the range of an IEEE 754 double", off)
		}
		return append(dst, "null"...), nil
	}
	mark := len(dst)
	dst = appendNumber(dst, f)
	if strict && !parseDecimal(raw).equal(parseDecimal(dst[mark:])) {
		return dst[:mark], fmt.Errorf("args: number at byte %d does not round-trip through an IEEE 754 double", off)
	}
	return dst, nil
}

// isSmallInt reports whether raw is an integer of at most 15 digits other than -0: a
// double holds it exactly and ECMAScript prints it as it is.
func isSmallInt(raw string) bool {
	digits := raw
	if len(raw) > 0 && raw[0] == '-' {
		digits = raw[1:]
		if digits == "0" {
			return false
		}
	}
	if len(digits) == 0 || len(digits) > 15 {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if !isDigit(digits[i]) {
			return false
		}
	}
	return true
}

// appendNumber appends f serialised as ECMAScript's Number::toString does (ECMA-262,
// section 6.1.6.1.20), which is what RFC 8785 prescribes. f must be finite.
func appendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0') // -0 too
	}
	// Go's shortest round-trip digits are the digits ECMAScript picks; only the layout
	// differs. b is [-]d[.ddd]e±xx.
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	if b[0] == '-' {
		dst = append(dst, '-')
		b = b[1:]
	}
	e := bytes.IndexByte(b, 'e')
	exp, _ := strconv.Atoi(string(b[e+1:]))
	var digits [24]byte
	k := 0
	for _, c := range b[:e] {
		if c != '.' {
			digits[k] = c
			k++
		}
	}
	// The value is 0.d1...dk × 10^n.
	n := exp + 1
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits[:k]...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:k]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits[:k]...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:k]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// decimal is the exact value of a JSON number: 0.digits × 10^exp, or zero. Only the first
// maxDigits significant digits are kept; n counts them all.
type decimal struct {
	zero   bool
	neg    bool
	n      int
	digits [maxDigits]byte
	exp    int64
}

// maxDigits is one more than the 17 significant digits a shortest double form can have.
const maxDigits = 18

func (a decimal) equal(b decimal) bool {
	if a.zero || b.zero {
		return a.zero && b.zero // -0 equals 0
	}
	return a.neg == b.neg && a.exp == b.exp && a.n == b.n && a.n <= maxDigits &&
		a.digits == b.digits
}

// parseDecimal reads a number in JSON syntax (which Decode has checked) exactly.
func parseDecimal[T string | []byte](s T) decimal {
	var d decimal
	i := 0
	if len(s) > 0 && s[0] == '-' {
		d.neg = true
		i++
	}
	intLen, pos, first, zeros := 0, 0, -1, 0
	point := false
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			point = true
			continue
		}
		if c == 'e' || c == 'E' {
			break
		}
		if !point {
			intLen++
		}
		pos++
		if c == '0' {
			if first >= 0 {
				zeros++ // held back: trailing zeros are not significant
			}
			continue
		}
		if first < 0 {
			first = pos - 1
		}
		for ; zeros > 0; zeros-- {
			d.push('0')
		}
		d.push(c)
	}
	var exp int64
	if i < len(s) {
		i++ // 'e'
		neg := false
		if s[i] == '+' || s[i] == '-' {
			neg = s[i] == '-'
			i++
		}
		for ; i < len(s); i++ {
			if exp < 1e15 { // saturate: far beyond any double's exponent
				exp = exp*10 + int64(s[i]-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	if first < 0 {
		return decimal{zero: true}
	}
	d.exp = int64(intLen-first) + exp
	return d
}

func (d *decimal) push(c byte) {
	if d.n < maxDigits {
		d.digits[d.n] = c
	}
	d.n++
}
