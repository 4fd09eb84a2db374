package chain

import (
	"bytes"
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
	s     string    // string(b), made once when building, for substrings
	in    *interner // if set, strings come from here instead of s
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
		if d.in != nil {
			return d.in.get(raw)
		}
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

// interner hands out one string for repeated values (sessions,
// principals, tools, rules, ...), so a scan does not allocate each of them
// for every entry. It is not safe for concurrent use.
type interner struct {
	m map[string]string
}

// internMax bounds an interner: past it, new values are allocated as usual.
const internMax = 1 << 14

func (in *interner) get(b []byte) string {
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(in.m) < internMax && len(b) <= 256 {
		if in.m == nil {
			in.m = make(map[string]string)
		}
		in.m[s] = s
	}
	return s
}

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

// entryFacts are what Verify needs from a line.
type entryFacts struct {
	seq  uint64
	prev Digest
	hash Digest // as stored
	body []byte // the line less `,"hash":"…"}`: canonical encoding minus its '}'
}

// decodeEntry reads a stored entry line (without its newline). With e
// non-nil it fills e; otherwise it only validates.
func decodeEntry(line []byte, e *Entry) (f entryFacts, err error) {
	return decodeEntryIn(line, e, nil)
}

// decodeEntryIn is decodeEntry taking the strings of e from in, when in
// is not nil.
func decodeEntryIn(line []byte, e *Entry, in *interner) (f entryFacts, err error) {
	d := decoder{b: line, build: e != nil, in: in}
	if d.build && in == nil {
		d.s = string(line)
	}
	var x Entry
	if e == nil {
		e = &x
	}
	d.lit(`{"args_hash":`)
	e.ArgsHash = d.optDigest()
	d.lit(`,"bound":`)
	e.Bound = d.boolean()
	d.lit(`,"caps":[`)
	e.Caps = nil
	if d.peek(']') {
		d.i++
	} else {
		for d.err == nil {
			var c Cap
			d.capability(&c)
			if d.build {
				if e.Caps == nil {
					e.Caps = make([]Cap, 0, 1)
				}
				e.Caps = append(e.Caps, c)
			}
			if d.peek(',') {
				d.i++
				continue
			}
			d.lit("]")
			break
		}
	}
	d.lit(`,"decision":`)
	e.Decision = d.word(false, decisionWords)
	d.lit(`,"envelope":`)
	e.Envelope = d.optDigest()
	d.lit(`,"mode":`)
	e.Mode = d.word(false, modeWords)
	d.lit(`,"origin":`)
	e.Origin = d.str()
	d.lit(`,"policy_hash":`)
	e.PolicyHash = d.optDigest()
	d.lit(`,"prev":"`)
	e.Prev = d.hex32()
	d.lit(`","principal":`)
	e.Principal = d.str()
	d.lit(`,"reason":`)
	e.Reason = d.str()
	d.lit(`,"roles":`)
	e.Roles = d.strs()
	d.lit(`,"rules":`)
	e.Rules = d.strs()
	d.lit(`,"seq":`)
	e.Seq = d.uint(MaxSeq)
	if d.err == nil && e.Seq == 0 {
		d.fail("seq 0: sequence numbers start at 1")
	}
	d.lit(`,"server":`)
	e.Server = d.str()
	d.lit(`,"session":`)
	e.Session = d.str()
	d.lit(`,"taint":`)
	e.Taint = d.boolean()
	d.lit(`,"tier":`)
	e.Tier = d.str()
	d.lit(`,"time":"`)
	e.Time = d.timestamp()
	d.lit(`","tool":`)
	e.Tool = d.str()
	d.lit(`,"tool_schema_hash":`)
	e.ToolSchemaHash = d.optDigest()
	d.lit(`,"v":`)
	if v := d.uint(MaxSeq); d.err == nil && v != Version {
		d.fail(fmt.Sprintf("format version %d, want %d", v, Version))
	}
	e.V = Version
	d.lit(`,"would":`)
	e.Would = d.word(true, decisionWords)
	if d.err == nil && e.Would == e.Decision {
		d.fail("would equal to decision is written as \"\"")
	}
	bodyEnd := d.i
	d.lit(`,"hash":"`)
	e.Hash = d.hex32()
	d.lit(`"}`)
	if d.err == nil && d.i != len(line) {
		d.fail("trailing bytes after the entry")
	}
	if d.err != nil {
		return f, d.err
	}
	return entryFacts{seq: e.Seq, prev: e.Prev, hash: e.Hash, body: line[:bodyEnd]}, nil
}

var (
	prevKey    = []byte(`,"prev":"`)
	seqKey     = []byte(`,"seq":`)
	hashKey    = []byte(`,"hash":"`)
	entryStart = []byte(`{"args_hash":"`)
)

// entryFactsOf reads seq, prev and the stored hash of an entry line
// without decoding the rest, for Verify, which hashes the line's bytes as
// they are. The shortcut is sound for what Verify proves: a line covered by
// a signature is byte for byte what the key holder wrote, and its writer
// writes only the stored form, in which the first `,"prev":"` and the
// first `,"seq":` after it are the top-level keys (inside a string every
// '"' is escaped, and no capability has such keys). A line that is not
// covered proves nothing either way, and any line that breaks the chain is
// decoded strictly to classify the break. Scan and VerifyOptions.Strict
// decode every line strictly.
func entryFactsOf(line []byte) (f entryFacts, ok bool) {
	n := len(line)
	if n < len(entryStart)+hashSuffixLen || string(line[:len(entryStart)]) != string(entryStart) {
		return f, false
	}
	suffix := line[n-hashSuffixLen:]
	if string(suffix[:len(hashKey)]) != string(hashKey) || string(suffix[hashSuffixLen-2:]) != `"}` {
		return f, false
	}
	if f.hash, ok = parseHex32(suffix[len(hashKey) : len(hashKey)+64]); !ok {
		return f, false
	}
	body := line[:n-hashSuffixLen]
	i := bytes.Index(body, prevKey)
	if i < 0 || len(body)-i < len(prevKey)+64+1 {
		return f, false
	}
	i += len(prevKey)
	if f.prev, ok = parseHex32(body[i : i+64]); !ok {
		return f, false
	}
	j := bytes.Index(body[i:], seqKey)
	if j < 0 {
		return f, false
	}
	d := decoder{b: body, i: i + j + len(seqKey)}
	f.seq = d.uint(MaxSeq)
	if d.err != nil || f.seq == 0 || !d.peek(',') {
		return f, false
	}
	f.body = body
	return f, true
}
