package record

import (
	"encoding/binary"
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
	light bool   // optional digests are checked, not decoded (DecodeIn with light; chain.ScanOptions.Light)
	ar    *Arena // slices are carved from it and strings interned, if set
	err   *errSyntax
}

func (d *decoder) fail(what string) bool {
	if d.err == nil {
		d.err = &errSyntax{off: d.i, what: what}
	}
	return false
}

// A key is a literal of the stored form, a key with its punctuation such
// as `,"bound":`, kept as two little-endian words and masks so that
// matching it takes two loads and compares instead of a call to memequal.
type key struct {
	s    string
	n    int
	w, m [2]uint64
}

// newKey makes the key for s, at most 16 bytes.
func newKey(s string) *key {
	if len(s) > 16 {
		panic("record: key literal longer than 16 bytes: " + s)
	}
	k := &key{s: s, n: len(s)}
	for i := 0; i < len(s); i++ {
		k.w[i/8] |= uint64(s[i]) << (8 * (i % 8))
		k.m[i/8] |= 0xff << (8 * (i % 8))
	}
	return k
}

// lit consumes the literal k. (After an error it may still match; the
// error stands.)
func (d *decoder) lit(k *key) bool {
	return d.has(k) || d.litSlow(k.s)
}

// has consumes the literal k if it comes next with at least 16 bytes from
// its start, and reports whether it did; otherwise it records no error. It
// is lit's test, small enough to be inlined: d.has(k) || d.lit(k) is
// lit(k) without a call in the usual case.
func (d *decoder) has(k *key) bool {
	if b := d.b[d.i:]; len(b) >= 16 &&
		(binary.LittleEndian.Uint64(b)^k.w[0])&k.m[0]|(binary.LittleEndian.Uint64(b[8:])^k.w[1])&k.m[1] == 0 {
		d.i += k.n
		return true
	}
	return false
}

// litSlow is lit near the end of the line, where there are not two
// words left to load, and on a mismatch.
func (d *decoder) litSlow(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	if d.err != nil {
		return false
	}
	return d.fail(fmt.Sprintf("want %q", s))
}

// char consumes the byte c. It is small enough to be inlined.
func (d *decoder) char(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return d.charSlow(c)
}

// next consumes the byte c if it comes next, and reports whether it did;
// on a mismatch it records no error. It is char's test, small enough to be
// inlined: d.next(c) || d.char(c) is char(c) without a call when c is
// there.
func (d *decoder) next(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// charSlow is char on a mismatch; kept out of line so that char inlines.
//
//go:noinline
func (d *decoder) charSlow(c byte) bool {
	var s [1]byte
	s[0] = c
	return d.litSlow(string(s[:]))
}

func (d *decoder) peek(c byte) bool { return d.err == nil && d.i < len(d.b) && d.b[d.i] == c }

// str reads a canonical string and returns it (or "" when not building).
func (d *decoder) str() string {
	b, i := d.b, d.i
	if d.err != nil || i >= len(b) || b[i] != '"' {
		d.fail("want a string")
		return ""
	}
	start := i + 1
	end := start + plainRun(b[start:])
	if end < len(b) && b[end] == '"' {
		// The usual string: printable ASCII without escapes.
		d.i = end + 1
		if !d.build {
			return ""
		}
		return d.ar.str(b, start, end)
	}
	return d.strSlow(start, end)
}

// The fields whose last value an arena keeps, for strMemo.
const (
	memoOrigin = iota
	memoPrincipal
	memoReason
	memoServer
	memoTier
	memoTool
	memoKind
	memoRole
	memoRule
	nMemo = memoRule + 4 // the first four rules
)

// strMemo is str for a field whose value often repeats from one entry to
// the next, such as the server: when the arena's last value for field k
// is spelled next, as a whole string, it returns that value without
// reading the string again. The last value is a string str read without
// escapes, so the same bytes are the same valid string.
func (d *decoder) strMemo(k int) string {
	if d.ar == nil || !d.build {
		return d.str()
	}
	last := &d.ar.last[k]
	if s := *last; d.err == nil && s != "" {
		b, i := d.b, d.i+1
		if end := i + len(s); end < len(b) && b[i-1] == '"' && b[end] == '"' && string(b[i:end]) == s {
			d.i = end + 1
			return s
		}
	}
	start := d.i
	s := d.str()
	if d.err == nil && d.i-start == len(s)+2 {
		*last = s // read without escapes
	}
	return s
}

// strSlow is str for a string with escapes or non-ASCII characters, from
// end, the first byte that is not plain.
func (d *decoder) strSlow(start, i int) string {
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
		return d.ar.str(b, start, i)
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

// strs reads an array of strings; empty arrays give nil. Its first
// strings are read with strMemo for fields memo, memo+1, ..., up to
// memoMax.
func (d *decoder) strs(memo, memoMax int) []string {
	if !(d.next('[') || d.char('[')) {
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
		var s string
		if memo <= memoMax {
			s = d.strMemo(memo)
			memo++
		} else {
			s = d.str()
		}
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
		if !d.next(']') {
			d.char(']')
		}
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
	d.hex32Into(&v)
	return v
}

// hex32Into is hex32 decoding into *v, which it leaves as it was on an
// error.
func (d *decoder) hex32Into(v *Digest) {
	if d.err != nil {
		return
	}
	if len(d.b)-d.i < 64 {
		d.fail("want 64 hex digits")
		return
	}
	var x Digest
	if !hexDigest(&x, d.b[d.i:d.i+64]) {
		d.fail("want 64 lower-case hex digits")
		return
	}
	*v = x
	d.i += 64
}

// optDigest reads "" or a quoted non-zero digest into *v, which it sets
// to zero for "". A light decoder checks the digest and leaves *v zero.
func (d *decoder) optDigest(v *Digest) {
	*v = Digest{}
	if !(d.next('"') || d.char('"')) {
		return
	}
	if d.peek('"') {
		d.i++
		return
	}
	if d.light {
		d.hex32Check()
	} else {
		d.hex32Into(v)
		if d.err == nil && v.IsZero() {
			d.fail(`an absent digest is "", not zeros`)
		}
	}
	if !d.next('"') {
		d.char('"')
	}
}

// hex32Check is hex32 checking the digits and that they are not all
// zeros, without decoding them.
func (d *decoder) hex32Check() {
	if d.err != nil {
		return
	}
	if len(d.b)-d.i < 64 {
		d.fail("want 64 hex digits")
		return
	}
	b := d.b[d.i : d.i+64]
	if !hexValid(b) {
		d.fail("want 64 lower-case hex digits")
		return
	}
	d.i += 64
	if allZeros(b) {
		d.fail(`an absent digest is "", not zeros`)
	}
}

// decision reads a quoted decision, or "" when empty is allowed, and
// returns the matching constant, so no allocation is needed.
func (d *decoder) decision(empty bool) string {
	if d.err != nil {
		return ""
	}
	b := d.b[d.i:]
	switch {
	case len(b) >= 7 && string(b[:7]) == `"allow"`:
		d.i += 7
		return Allow
	case len(b) >= 6 && string(b[:6]) == `"deny"`:
		d.i += 6
		return Deny
	case len(b) >= 5 && string(b[:5]) == `"ask"`:
		d.i += 5
		return Ask
	case empty && len(b) >= 2 && string(b[:2]) == `""`:
		d.i += 2
		return ""
	}
	d.fail(`want "allow", "deny" or "ask"`)
	return ""
}

// mode reads a quoted mode.
func (d *decoder) mode() string {
	if d.err != nil {
		return ""
	}
	b := d.b[d.i:]
	switch {
	case len(b) >= 9 && string(b[:9]) == `"enforce"`:
		d.i += 9
		return Enforce
	case len(b) >= 8 && string(b[:8]) == `"shadow"`:
		d.i += 8
		return Shadow
	}
	d.fail(`want "enforce" or "shadow"`)
	return ""
}

// timestamp reads timeLayout (no quotes).
func (d *decoder) timestamp() time.Time {
	if d.err != nil {
		return time.Time{}
	}
	if b := d.b[d.i:]; len(b) >= 32 {
		// The usual case, a word at a time; timestampSlow reads the rest
		// and says what is wrong.
		if y, mo, dd, h, mi, s, ns, ok := timeFields(b); ok {
			d.i += len(timeLayout)
			if !d.build {
				return time.Time{}
			}
			return time.Date(y, time.Month(mo), dd, h, mi, s, ns, time.UTC)
		}
	}
	return d.timestampSlow()
}

// timeFields reads the fields of a time spelled as timeLayout at the start
// of b, which has at least 32 bytes, and reports whether it is one:
// timestampSlow's answer, from four words.
func timeFields(b []byte) (y, mo, dd, h, mi, s, ns int, ok bool) {
	b = b[:32]
	// "2006-01-" "02T15:04" ":05.0000" "00000Z.."; the fourth word ends
	// after the time, so its last two bytes are masked out.
	w0 := binary.LittleEndian.Uint64(b[0:])
	w1 := binary.LittleEndian.Uint64(b[8:])
	w2 := binary.LittleEndian.Uint64(b[16:])
	w3 := binary.LittleEndian.Uint64(b[24:])
	// The separators, each in its place, and digits everywhere else.
	const (
		sep0, dig0 = 0x2d00002d00000000, 0x00ffff00ffffffff // "YYYY-MM-"
		sep1, dig1 = 0x00003a0000540000, 0xffff00ffff00ffff // "DDTHH:MM"
		sep2, dig2 = 0x000000002e00003a, 0xffffffff00ffff00 // ":SS.NNNN"
		sep3, dig3 = 0x00005a0000000000, 0x000000ffffffffff // "NNNNNZ"
	)
	if w0&^dig0 != sep0 || w1&^dig1 != sep1 || w2&^dig2 != sep2 || w3&^dig3&0x0000ffffffffffff != sep3 {
		return
	}
	digits := func(x, m uint64) bool {
		x &= m
		m &= highs
		// A byte of x is a digit when it is below 0x80, at least '0' and
		// not past '9'; each test is the high bit of a sum that cannot
		// carry into the next byte.
		return (x|^((x+ones*(0x80-'0'))&^(x+ones*(0x80-'9'-1))))&m == 0
	}
	if !digits(w0, dig0) || !digits(w1, dig1) || !digits(w2, dig2) || !digits(w3, dig3) {
		return
	}
	two := func(i int) int { return int(b[i]-'0')*10 + int(b[i+1]-'0') }
	y = two(0)*100 + two(2)
	mo, dd, h, mi, s = two(5), two(8), two(11), two(14), two(17)
	for _, c := range b[20:29] {
		ns = ns*10 + int(c-'0')
	}
	ok = mo >= 1 && mo <= 12 && dd >= 1 && dd <= daysIn(time.Month(mo), y) && h <= 23 && mi <= 59 && s <= 59
	return
}

// timestampSlow is timestamp a byte at a time.
func (d *decoder) timestampSlow() time.Time {
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

// capKey returns the index of name among a capability's keys in canonical
// order (argv, command, host, id, id_kind, kind, path, port, program,
// scheme, shell, subtree, unproven, url), or -1.
func capKey(name []byte) int {
	switch string(name) {
	case "argv":
		return 0
	case "command":
		return 1
	case "host":
		return 2
	case "id":
		return 3
	case "id_kind":
		return 4
	case "kind":
		return 5
	case "path":
		return 6
	case "port":
		return 7
	case "program":
		return 8
	case "scheme":
		return 9
	case "shell":
		return 10
	case "subtree":
		return 11
	case "unproven":
		return 12
	case "url":
		return 13
	}
	return -1
}

// capability reads one capability object into c (when building).
func (d *decoder) capability(c *Cap) {
	if !(d.next('{') || d.char('{')) {
		return
	}
	last := -1
	hasKind := false
	for n := 0; ; n++ {
		if d.peek('}') {
			d.i++
			break
		}
		if n > 0 && !(d.next(',') || d.char(',')) {
			return
		}
		if !(d.next('"') || d.char('"')) {
			return
		}
		j := d.i
		for j < len(d.b) && (d.b[j] >= 'a' && d.b[j] <= 'z' || d.b[j] == '_') {
			j++
		}
		k := -1
		if j+1 < len(d.b) && d.b[j] == '"' && d.b[j+1] == ':' {
			k = capKey(d.b[d.i:j])
		}
		if k <= last {
			d.fail("want a capability key in canonical order (argv command host id id_kind kind path port program scheme shell subtree unproven url)")
			return
		}
		last = k
		d.i = j + 2
		switch k {
		case 0: // argv
			at := d.i
			v := d.strs(0, -1)
			if d.err == nil && d.b[at+1] == ']' {
				d.i = at
				d.fail("empty argv is omitted, not []")
				return
			}
			if d.build {
				c.Argv = v
			}
		case 7: // port
			v := d.uint(65535)
			if d.err == nil && v == 0 {
				d.fail("port 0 is omitted")
			}
			c.Port = uint16(v)
		case 10, 11, 12: // shell, subtree, unproven
			if d.err != nil || len(d.b)-d.i < 4 || string(d.b[d.i:d.i+4]) != "true" {
				d.fail("want true (false is omitted)")
				return
			}
			d.i += 4
			switch k {
			case 10:
				c.Shell = true
			case 11:
				c.Subtree = true
			default:
				c.Unproven = true
			}
		default:
			if d.peek('"') && d.i+1 < len(d.b) && d.b[d.i+1] == '"' {
				d.fail("empty field is omitted")
				return
			}
			var s string
			if k == 5 {
				s = d.strMemo(memoKind)
			} else {
				s = d.str()
			}
			switch k {
			case 1:
				c.Command = s
			case 2:
				c.Host = s
			case 3:
				c.ID = s
			case 4:
				c.IDKind = s
			case 5:
				c.Kind, hasKind = s, true
			case 6:
				c.Path = s
			case 8:
				c.Program = s
			case 9:
				c.Scheme = s
			case 13:
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
