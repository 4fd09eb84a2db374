package dlp

import (
	"encoding/base64"
	"strings"
)

// Base64 in text. A string may carry a secret as base64: a file of base64 read as text,
// a model's argument that encodes what it sends, base64 nested in base64. Such a secret
// is looked for where a detector can tell: a run of base64 counts only if, decoded, Scan
// finds something in it. There is no detector for "looks like base64".
//
// A run is a maximal stretch of base64 units: a character of either alphabet, or '+',
// '/' and '=' percent-encoded (%2B, %2F, %3D, as in a URL query); line breaks inside it
// ("\n", "\r\n", or those written as JSON escapes in text that is itself JSON) are
// skipped, and it ends after its padding. A run may start mid-encoding (a fragment, or
// letters glued before it), so it is decoded from each of its first four units: the
// alignment of the text it encodes is one of them. Decoding from an alignment reads
// the run as if one to three 'A's (zero bits) came before it, so that the bytes of a
// group the run starts inside are kept, all but their bits from before the run. Decoded text is scanned, and its own
// runs decoded in turn, down to maxDecodeDepth.
//
// Most runs are not base64 at all (paths, identifiers, words): before decoding, a run
// must pass a check on its characters alone. A secret is text, and the top bit of each
// decoded byte is one bit of one character (the byte a group's first, second or third
// character starts), so whether an alignment decodes to minASCII bytes of ASCII in a
// row is known from the characters' classes. No detector finds a secret in fewer.

// tailWindow is how much of the end of a decoded unpadded run is scanned again without
// its last one or two bytes: letters glued after a run decode to a byte or two of
// garbage that can hide a secret just before them (a token's end must be a word's).
const tailWindow = 512

// tails calls fn with the ends of dec, decoded from r, that letters glued after r
// may have spoilt: dec's last tailWindow bytes without the last byte, and without the
// last two.
func tails(r b64run, dec string, fn func(string)) {
	if r.padded {
		return
	}
	for t := 1; t <= 2 && len(dec)-t >= minFinding; t++ {
		fn(dec[max(0, len(dec)-tailWindow) : len(dec)-t])
	}
}

// maxDecodeDepth is how many times base64 is decoded inside base64.
const maxDecodeDepth = 3

// minRunUnits is the fewest characters of a run that decode to minFinding bytes.
const minRunUnits = (minFinding*4 + 2) / 3

// minASCII is how many bytes of ASCII in a row an alignment of a run must decode to
// for it to be decoded and scanned. Every finding holds that many (a connection
// string's "pwd=x;" is the shortest); a finding whose ASCII is broken up more finely
// (by invisible characters or non-ASCII letters every few bytes) is not looked for in
// base64.
const minASCII = minFinding

// Unit values other than an alphabet character's 0..63.
const (
	uNone  = -1 // not a unit: the run ends before it
	uPad   = -2 // '=' or %3D
	uBreak = -3 // a line break
)

// b64val is the value of each byte that is a base64 character in one alphabet or the
// other.
var b64val = func() (t [256]int8) {
	for i := range t {
		t[i] = uNone
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range len(alphabet) {
		t[alphabet[i]] = int8(i)
	}
	t['-'], t['_'] = 62, 63
	return t
}()

// asciiAt has bit p set for a character value v when, at position p of a group, v
// starts a decoded byte whose top bit is clear: bit 5 of the first character, bit 3 of
// the second, bit 1 of the third. The fourth starts no byte.
var asciiAt = func() (t [64]uint8) {
	for v := range t {
		if v&0x20 == 0 {
			t[v] |= 1
		}
		if v&0x08 == 0 {
			t[v] |= 2
		}
		if v&0x02 == 0 {
			t[v] |= 4
		}
	}
	return t
}()

// lanes has 1 in each of the four bytes of a uint32, one per alignment.
const lanes = 0x01010101

// streakStep is how a character of value v, as the u-th of a run, moves the streaks
// of nextRun, by u&3: the low 32 bits keep the lanes of the alignments for which it
// starts a byte of ASCII, or starts none (it is a group's fourth character there), and
// the high 32 bits add one to the lanes of the first.
var streakStep = func() (t [4][64]uint64) {
	for u := range 4 {
		for v := range 64 {
			var keep, add uint64
			for a := range 4 {
				switch p := (u + a) & 3; {
				case p == 3:
					keep |= 0xFF << (8 * a)
				case asciiAt[v]&(1<<p) != 0:
					keep |= 0xFF << (8 * a)
					add |= 1 << (8 * a)
				}
			}
			t[u][v] = keep | add<<32
		}
	}
	return t
}()

// unitAt returns the unit at s[i] and its length in bytes.
func unitAt(s string, i int) (v, n int) {
	c := s[i]
	if v := b64val[c]; v >= 0 {
		return int(v), 1
	}
	switch c {
	case '=':
		return uPad, 1
	case '\n':
		return uBreak, 1
	case '\r':
		if i+1 < len(s) && s[i+1] == '\n' {
			return uBreak, 2
		}
	case '\\':
		// A line break written as a JSON escape, in text that is JSON.
		if i+1 < len(s) && s[i+1] == 'n' {
			return uBreak, 2
		}
		if i+3 < len(s) && s[i+1] == 'r' && s[i+2] == '\\' && s[i+3] == 'n' {
			return uBreak, 4
		}
	case '%':
		if i+2 < len(s) {
			switch s[i+1] {
			case '2':
				switch s[i+2] {
				case 'B', 'b':
					return 62, 3
				case 'F', 'f':
					return 63, 3
				}
			case '3':
				if s[i+2] == 'D' || s[i+2] == 'd' {
					return uPad, 3
				}
			}
		}
	}
	return uNone, 0
}

// b64run is a run of base64 units in a string.
type b64run struct {
	start, end int   // the run is s[start:end]
	units      int   // alphabet characters, without padding and breaks
	padded     bool  // the run ends in padding
	aligns     uint8 // bit a: decoding after a zero units may yield minASCII bytes of ASCII
}

// nextRun returns the first run of s at or after i that is long enough to hold a
// finding and that some alignment of may decode to text, and where to look for the
// next; ok is false when there is none.
func nextRun(s string, i int) (r b64run, ok bool) {
	for i < len(s) {
		// Skip to a unit that may start a run: an alphabet character, or an
		// encoded '+' or '/'.
		for i < len(s) && b64val[s[i]] < 0 && s[i] != '%' {
			i++
		}
		if i >= len(s) {
			break
		}
		r = b64run{start: i}
		// The bytes of ASCII in a row that each alignment decodes to, one
		// lane of 8 bits each; a lane that reaches minASCII sets its bit of
		// r.aligns and starts again from 0, so none overflows.
		var streaks uint32
		for i < len(s) {
			v, n := int(b64val[s[i]]), 1
			if v < 0 {
				v, n = unitAt(s, i)
			}
			if v >= 0 {
				st := streakStep[r.units&3][v]
				streaks = streaks&uint32(st) + uint32(st>>32)
				if hi := (streaks + lanes*(0x80-minASCII)) & (lanes * 0x80); hi != 0 {
					for a := range 4 {
						if hi&(0x80<<(8*a)) != 0 {
							r.aligns |= 1 << a
							streaks &^= 0xFF << (8 * a)
						}
					}
				}
				r.units++
				i += n
				continue
			}
			if v == uBreak {
				// Inside a run only: a break before an alphabet character.
				if i+n < len(s) {
					if w, _ := unitAt(s, i+n); w >= 0 {
						i += n
						continue
					}
				}
				break
			}
			if v == uPad && r.units > 0 {
				r.padded = true
				for i < len(s) {
					if w, m := unitAt(s, i); w == uPad {
						i += m
						continue
					}
					break
				}
			}
			break
		}
		if i == r.start {
			i++ // a '%' that is not a unit
			continue
		}
		r.end = i
		if r.units >= minRunUnits && r.aligns != 0 {
			return r, true
		}
	}
	return b64run{}, false
}

// decodeRun appends to dst the bytes of r decoded after a zero units (a < 4),
// leniently: padding and breaks are skipped, and a last lone character is dropped.
func decodeRun(dst []byte, s string, r b64run, a int) []byte {
	var acc uint32
	n := a
	for i := r.start; i < r.end; {
		v, m := unitAt(s, i)
		i += m
		if v < 0 {
			continue
		}
		acc = acc<<6 | uint32(v)
		if n++; n == 4 {
			dst = append(dst, byte(acc>>16), byte(acc>>8), byte(acc))
			acc, n = 0, 0
		}
	}
	switch n {
	case 2:
		dst = append(dst, byte(acc>>4))
	case 3:
		dst = append(dst, byte(acc>>10), byte(acc>>2))
	}
	return dst
}

// runStyle is how a run spells its base64, so that redacted text can be spelt the
// same way.
type runStyle struct {
	url       bool   // the URL-safe alphabet
	padded    bool   // padding written
	pct       bool   // '+', '/' and '=' percent-encoded
	lower     bool   // ... with lower-case hex digits
	width     int    // units per line, padding included; 0 for one line
	lineBreak string // the break between lines
}

// styleOf reads r's spelling; ok is false when it mixes two (both alphabets, or
// '+' both raw and percent-encoded, say).
func styleOf(s string, r b64run) (st runStyle, ok bool) {
	std, url, raw, pct := false, false, false, false
	units := 0
	for i := r.start; i < r.end; {
		v, n := unitAt(s, i)
		switch {
		case v == uBreak:
			if st.lineBreak == "" {
				st.lineBreak, st.width = s[i:i+n], units
			}
		case v == uPad:
			st.padded = true
			units++
		case s[i] == '-' || s[i] == '_':
			url = true
			units++
		case v == 62 || v == 63:
			std = true
			units++
		default:
			units++
		}
		if v == uPad || v == 62 || v == 63 {
			if n == 3 {
				pct = true
				st.lower = s[i+2] >= 'a'
			} else if s[i] != '-' && s[i] != '_' {
				raw = true
			}
		}
		i += n
	}
	st.url, st.pct = url, pct
	return st, !(std && url) && !(raw && pct) && (st.lineBreak == "" || st.width > 0)
}

// respell appends data, decoded from a run after a zero units, encoded again in st's
// spelling without those units; ok is false when the encoding does not start with
// them (the redaction changed the bytes they are part of).
func respell(dst []byte, a int, st runStyle, data []byte) ([]byte, bool) {
	enc := base64.StdEncoding
	if st.url {
		enc = base64.URLEncoding
	}
	if !st.padded {
		enc = enc.WithPadding(base64.NoPadding)
	}
	units := 0
	emit := func(unit string) {
		if st.width > 0 && units > 0 && units%st.width == 0 {
			dst = append(dst, st.lineBreak...)
		}
		dst = append(dst, unit...)
		units++
	}
	out := enc.EncodeToString(data)
	if len(out) < a || out[:a] != "AAA"[:a] {
		return nil, false
	}
	for i := a; i < len(out); i++ {
		c := out[i]
		if !st.pct || (c != '+' && c != '/' && c != '=') {
			emit(out[i : i+1])
			continue
		}
		esc := "%2B"
		switch c {
		case '/':
			esc = "%2F"
		case '=':
			esc = "%3D"
		}
		if st.lower {
			esc = strings.ToLower(esc)
		}
		emit(esc)
	}
	return dst, true
}

// respelled returns red, the redaction of orig (r decoded after a zero units), spelt
// as r was; ok is false when spelling orig that way would not give r back, so that
// the spelling is not known well enough to write red.
func respelled(s string, r b64run, a int, orig, red []byte) ([]byte, bool) {
	st, ok := styleOf(s, r)
	if !ok {
		return nil, false
	}
	if !st.padded && !st.url && len(orig)%3 == 0 {
		// Unpadded or padded, no one can tell; the standard alphabet's
		// strict decoders want padding.
		st.padded = true
	}
	again, ok := respell(make([]byte, 0, r.end-r.start), a, st, orig)
	if !ok || string(again) != s[r.start:r.end] {
		return nil, false
	}
	return respell(make([]byte, 0, len(red)*4/3+8), a, st, red)
}

// redactedAt returns s, a string decoded depth times from base64, with the findings
// whose kind satisfies redact replaced, in s and in the base64 runs in s, and the kind
// of the first it replaced.
func redactedAt(s string, redact func(Kind) bool, depth int) (string, Kind) {
	var buf [8]Finding
	fs := Scan(s, buf[:0])
	if redact != nil {
		keep := fs[:0]
		for _, f := range fs {
			if redact(f.Kind) {
				keep = append(keep, f)
			}
		}
		fs = keep
	}
	var first Kind
	if len(fs) > 0 {
		first = fs[0].Kind
		s = Redact(s, fs)
	}
	if depth >= maxDecodeDepth || len(s) < minRunUnits {
		return s, first
	}
	var b []byte
	pos := 0
	for i := 0; ; {
		r, ok := nextRun(s, i)
		if !ok {
			break
		}
		i = r.end
		changed := 0
		var kind Kind
		var red []byte
		for a := range 4 {
			if r.aligns&(1<<a) == 0 {
				continue
			}
			dec := decodeRun(nil, s, r, a)
			rd, kd := redactedAt(string(dec), redact, depth+1)
			if rd == string(dec) {
				// Letters glued after the run may hide a secret
				// before them: the whole run goes.
				tails(r, string(dec), func(t string) {
					if tr, tk := redactedAt(t, redact, depth+1); tr != t && changed < 2 {
						changed, kind = 2, tk
					}
				})
				continue
			}
			if changed++; changed == 1 {
				kind = kd
				if out, ok := respelled(s, r, a, dec, []byte(rd)); ok {
					red = out
				} else {
					changed++
				}
			}
		}
		if changed == 0 {
			continue
		}
		b = append(b, s[pos:r.start]...)
		if changed == 1 {
			// The run written back must hold nothing at any alignment: the
			// marker's bytes shift what the others decode to, and one of
			// them may now read a secret the first finding hid (an AWS
			// key, then a "key = value" a line below).
			if again, _ := redactedAt(string(red), redact, depth); again != string(red) {
				changed = 2
			}
		}
		if changed == 1 {
			b = append(b, red...)
		} else {
			// Two alignments hold a secret, or this one cannot be written back
			// as it was spelt: the whole run goes.
			b = append(append(append(b, "[REDACTED:"...), kind...), ']')
		}
		pos = r.end
		if first == "" {
			first = kind
		}
	}
	if b == nil {
		return s, first
	}
	return string(append(b, s[pos:]...)), first
}
