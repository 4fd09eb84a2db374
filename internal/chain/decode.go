package chain

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// The decoder reads the stored form and nothing else: keys in canonical
// order, no whitespace, JCS escapes only, no zero-valued capability fields,
// digests in lower-case hex. Anything it accepts re-encodes to the same
// bytes (FuzzDecode checks this), so an entry has one spelling and two
// parsers cannot read one line two ways.

// errSyntax is the error of a line that is not in the stored form.
type errSyntax struct {
	off  int
	what string
}

func (e *errSyntax) Error() string { return fmt.Sprintf("byte %d: %s", e.off, e.what) }

// decoder reads one line. With build false it validates without allocating.
type decoder struct {
	b     []byte
	i     int
	build bool
	s     string // string(b), made once when building, for substrings
	ar    *arena // if set, slices are carved from it
	err   *errSyntax
}

func (d *decoder) fail(what string) bool {
	if d.err == nil {
		d.err = &errSyntax{off: d.i, what: what}
	}
	return false
}

// lit consumes the literal s. It is small enough to inline, so that the
// comparison is against a constant. (After an error it may still match;
// the error stands.)
func (d *decoder) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return d.litFail(s)
}

func (d *decoder) litFail(s string) bool {
	if d.err != nil {
		return false
	}
	return d.fail(fmt.Sprintf("want %q", s))
}

func (d *decoder) peek(c byte) bool { return d.err == nil && d.i < len(d.b) && d.b[d.i] == c }

// str reads a canonical string and returns it (or "" when not building).
func (d *decoder) str() string {
	if d.err != nil {
		return ""
	}
	if !d.peek('"') {
		d.fail("want a string")
		return ""
	}
	start := d.i + 1
	i := start
	esc := false
	ascii := true
	b := d.b
	for {
		i += plainRun(b[i:])
		if i >= len(b) {
			d.i = i
			d.fail("unterminated string")
			return ""
		}
		c := b[i]
		if c == '"' {
			break
		}
		if c >= 0x80 {
			ascii = false
			i++
			continue
		}
		if c == '\\' {
			esc = true
			if i+1 >= len(b) {
				d.i = i
				d.fail("unterminated escape")
				return ""
			}
			switch b[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				// JCS writes \u only for the control characters without a
				// short form, as \u00xx with lower-case hex.
				if i+6 > len(b) || b[i+2] != '0' || b[i+3] != '0' || unhex[b[i+4]] > 1 || unhex[b[i+5]] == 0xff {
					d.i = i
					d.fail("non-canonical \\u escape")
					return ""
				}
				switch v := unhex[b[i+4]]<<4 | unhex[b[i+5]]; v {
				case '\b', '\t', '\n', '\f', '\r':
					d.i = i
					d.fail("non-canonical \\u escape")
					return ""
				}
				i += 6
			default:
				d.i = i
				d.fail("non-canonical escape")
				return ""
			}
			continue
		}
		// A control character.
		d.i = i
		d.fail("unescaped control character")
		return ""
	}
	raw := b[start:i]
	if !ascii && !utf8.Valid(raw) {
		d.i = start
		d.fail("string is not valid UTF-8")
		return ""
	}
	d.i = i + 1
	if !d.build {
		return ""
	}
	if !esc {
		return d.s[start:i]
	}
	return unescape(raw)
}

// plain marks the bytes a string holds as themselves: printable ASCII
// other than '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// unescape decodes the escapes of a string str has validated.
func unescape(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
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
			out = append(out, unhex[raw[i+3]]<<4|unhex[raw[i+4]])
			i += 4
		default: // '"' or '\\'
			out = append(out, raw[i])
		}
	}
	return string(out)
}

// strs reads an array of strings; empty arrays give nil.
func (d *decoder) strs() []string {
	if !d.lit("[") {
		return nil
	}
	if d.peek(']') {
		d.i++
		return nil
	}
	var out []string
	start := 0
	if d.ar != nil {
		d.ar.reserveStrs()
		out, start = d.ar.strs, len(d.ar.strs)
	}
	for {
		s := d.str()
		if d.err != nil {
			return nil
		}
		if d.build {
			if out == nil {
				out = make([]string, 0, 4)
			}
			out = append(out, s)
		}
		if d.peek(',') {
			d.i++
			continue
		}
		d.lit("]")
		if d.ar != nil {
			d.ar.strs = out
			return out[start:len(out):len(out)]
		}
		return out
	}
}

// uint reads a canonical unsigned integer no larger than max.
func (d *decoder) uint(max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	b, i := d.b, d.i
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		return d.failU("want a number")
	}
	if b[i] == '0' {
		if i+1 < len(b) && b[i+1] >= '0' && b[i+1] <= '9' {
			return d.failU("number with a leading zero")
		}
		d.i++
		return 0
	}
	var v uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		v = v*10 + uint64(b[i]-'0')
		if v > max {
			return d.failU(fmt.Sprintf("number above %d", max))
		}
	}
	d.i = i
	return v
}

func (d *decoder) failU(what string) uint64 { d.fail(what); return 0 }

// boolean reads true or false.
func (d *decoder) boolean() bool {
	if d.err != nil {
		return false
	}
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true" {
		d.i += 4
		return true
	}
	if len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false" {
		d.i += 5
		return false
	}
	d.fail("want true or false")
	return false
}

// hex32 reads 64 lower-case hex digits (no quotes).
func (d *decoder) hex32() (v Digest) {
	if d.err != nil {
		return v
	}
	if len(d.b)-d.i < 64 {
		d.fail("want 64 hex digits")
		return v
	}
	v, ok := parseHex32(d.b[d.i : d.i+64])
	if !ok {
		d.fail("want 64 lower-case hex digits")
		return v
	}
	d.i += 64
	return v
}

// optDigest reads "" or a quoted non-zero digest.
func (d *decoder) optDigest() (v Digest) {
	if !d.lit(`"`) {
		return v
	}
	if d.peek('"') {
		d.i++
		return v
	}
	v = d.hex32()
	if d.err == nil && v.IsZero() {
		d.fail(`an absent digest is "", not zeros`)
	}
	d.lit(`"`)
	return v
}

// word reads a quoted string that must be one of words (or "" if empty is
// allowed) and returns the matching constant, so no allocation is needed.
func (d *decoder) word(empty bool, words []string) string {
	if !d.lit(`"`) {
		return ""
	}
	if empty && d.peek('"') {
		d.i++
		return ""
	}
	for _, w := range words {
		if len(d.b)-d.i > len(w) && string(d.b[d.i:d.i+len(w)]) == w && d.b[d.i+len(w)] == '"' {
			d.i += len(w) + 1
			return w
		}
	}
	d.fail(fmt.Sprintf("want one of %q", words))
	return ""
}

var (
	decisionWords = []string{Allow, Deny, Ask}
	modeWords     = []string{Enforce, Shadow}
)

// timestamp reads timeLayout (no quotes).
func (d *decoder) timestamp() time.Time {
	if d.err != nil {
		return time.Time{}
	}
	b := d.b[d.i:]
	if len(b) < len(timeLayout) {
		d.fail("want a time like " + timeLayout)
		return time.Time{}
	}
	b = b[:len(timeLayout)]
	num := func(from, to int) int {
		v := 0
		for _, c := range b[from:to] {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, dd := num(0, 4), num(5, 7), num(8, 10)
	h, mi, s, ns := num(11, 13), num(14, 16), num(17, 19), num(20, 29)
	if b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != '.' || b[29] != 'Z' ||
		y < 0 || mo < 1 || mo > 12 || dd < 1 || dd > daysIn(time.Month(mo), y) ||
		h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59 || ns < 0 {
		d.fail("want a time like " + timeLayout)
		return time.Time{}
	}
	d.i += len(timeLayout)
	if !d.build {
		return time.Time{}
	}
	return time.Date(y, time.Month(mo), dd, h, mi, s, ns, time.UTC)
}

func daysIn(m time.Month, year int) int {
	if m == time.February && year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		return 29
	}
	return int(monthDays[m])
}

var monthDays = [13]uint8{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// capKeys are a capability's keys in canonical order.
var capKeys = [...]string{"argv", "command", "host", "id", "id_kind", "kind", "path", "port", "program", "scheme", "shell", "url"}

// capability reads one capability object into c (when building).
func (d *decoder) capability(c *Cap) {
	if !d.lit("{") {
		return
	}
	last := -1
	hasKind := false
	for n := 0; ; n++ {
		if d.peek('}') {
			d.i++
			break
		}
		if n > 0 && !d.lit(",") {
			return
		}
		if !d.lit(`"`) {
			return
		}
		k := -1
		for j := last + 1; j < len(capKeys); j++ {
			key := capKeys[j]
			if len(d.b)-d.i > len(key)+1 && string(d.b[d.i:d.i+len(key)]) == key && d.b[d.i+len(key)] == '"' && d.b[d.i+len(key)+1] == ':' {
				k = j
				d.i += len(key) + 2
				break
			}
		}
		if k < 0 {
			d.fail("want a capability key in canonical order (argv command host id id_kind kind path port program scheme shell url)")
			return
		}
		last = k
		switch capKeys[k] {
		case "argv":
			at := d.i
			v := d.strs()
			if d.err == nil && d.b[at+1] == ']' {
				d.i = at
				d.fail("empty argv is omitted, not []")
				return
			}
			if d.build {
				c.Argv = v
			}
		case "port":
			v := d.uint(65535)
			if d.err == nil && v == 0 {
				d.fail("port 0 is omitted")
			}
			c.Port = uint16(v)
		case "shell":
			if !d.lit("true") {
				return
			}
			c.Shell = true
		default:
			if d.peek('"') && d.i+1 < len(d.b) && d.b[d.i+1] == '"' {
				d.fail("empty field is omitted")
				return
			}
			s := d.str()
			switch capKeys[k] {
			case "command":
				c.Command = s
			case "host":
				c.Host = s
			case "id":
				c.ID = s
			case "id_kind":
				c.IDKind = s
			case "kind":
				c.Kind, hasKind = s, true
			case "path":
				c.Path = s
			case "program":
				c.Program = s
			case "scheme":
				c.Scheme = s
			case "url":
				c.URL = s
			}
		}
		if d.err != nil {
			return
		}
	}
	if d.err == nil && !hasKind {
		d.fail("capability without a kind")
	}
}
