package record

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"strconv"
	"time"
	"unicode/utf8"
)

// EntryDomain is the domain-separation prefix of an entry's hash:
// Hash = SHA-256(EntryDomain || canonical encoding).
const EntryDomain = "aegis.chain.v1\x00"

// The canonical encoding is RFC 8785 (JCS) JSON of the entry without its
// "hash" field. The fields are fixed, so the encoder below writes the keys in
// JCS order directly (they are ASCII, so sorting by UTF-16 code units is
// sorting by bytes):
//
//	args_hash bound caps decision envelope mode origin policy_hash prev
//	principal reason roles rules seq server session taint tier time tool
//	tool_schema_hash v would
//
// and, inside a capability (zero fields omitted):
//
//	argv command host id id_kind kind path port program scheme shell subtree unproven url
//
// Every top-level key is always present; absent digests are "". Numbers are
// unsigned integers at most MaxSeq, written in decimal without leading
// zeros, which is how JCS writes those doubles.

// A Template is an entry encoded before its place in a chain is known:
// its canonical encoding without the digits of prev and the seq number,
// which [Template.AppendLine] splices in once a writer numbers the entry.
// [Template.Encode] also hashes the bytes before prev, so that the writer,
// which numbers entries one at a time, hashes only the rest. The zero
// Template is ready to use; a Template is not safe for concurrent use.
type Template struct {
	buf    []byte // the canonical encoding, less prev and seq
	prevAt int    // offset where the 64 hex digits of prev go
	seqAt  int    // offset where the decimal seq goes
	// pre is SHA-256 of the domain and buf up to prev, ready for the rest
	// of the line, unless spent: an AppendLine has written the rest.
	pre   hash.Hash
	sum   []byte // for pre.Sum
	spent bool
}

// Encode makes t the template of e, reusing t's memory. It fails if e could
// not be recorded (an unknown decision, a string that is not UTF-8, ...).
func (t *Template) Encode(e *Entry) error {
	var err error
	t.buf, err = encodeEntry(t.buf[:0], e, t)
	if err != nil {
		t.buf = t.buf[:0]
		return err
	}
	t.hashHead()
	return nil
}

// hashHead starts pre over the domain and the bytes before prev.
func (t *Template) hashHead() {
	if t.pre == nil {
		t.pre, t.sum = sha256.New(), make([]byte, 0, sha256.Size)
	}
	t.pre.Reset()
	t.pre.Write(entryDomain)
	t.pre.Write(t.buf[:t.prevAt])
	t.spent = false
}

// Len returns the length of t's encoding, without prev and seq.
func (t *Template) Len() int { return len(t.buf) }

// MaxLineLen returns the longest stored line t's entry can make: its
// encoding with the digits of prev, the largest seq and the hash spliced
// in, newline excluded.
func (t *Template) MaxLineLen() int { return len(t.buf) + 64 + 20 + hashSuffixLen }

// AppendLine appends the stored line of t's entry numbered seq and linked to
// prev, newline included, and returns the entry's hash.
func (t *Template) AppendLine(out []byte, prev Digest, seq uint64) ([]byte, Digest) {
	if t.spent || t.pre == nil {
		t.hashHead()
	}
	start := len(out)
	b := t.buf
	out = append(out, b[:t.prevAt]...)
	out = appendHex32(out, &prev)
	out = append(out, b[t.prevAt:t.seqAt]...)
	out = strconv.AppendUint(out, seq, 10)
	out = append(out, b[t.seqAt:len(b)-1]...)
	var d Digest
	t.pre.Write(out[start+t.prevAt:])
	t.pre.Write(closeBrace)
	copy(d[:], t.pre.Sum(t.sum[:0]))
	t.spent = true
	return appendLineSuffix(out, d), d
}

// appendCanonical appends the canonical encoding of e to dst. e must have
// passed check. With t non-nil it leaves out the prev digits and the seq
// number and records where they go.
func appendCanonical(dst []byte, e *Entry, t *Template) []byte {
	w := encoder{b: dst}
	w.entry(e, t)
	return w.b
}

// encodeEntry is check and appendCanonical in one pass over e's strings: it
// appends the canonical encoding of e to dst, or returns dst and the error
// check finds when e is not recordable.
func encodeEntry(dst []byte, e *Entry, t *Template) ([]byte, error) {
	w := encoder{b: dst}
	w.entry(e, t)
	if !w.bad {
		return w.b, nil
	}
	if err := e.check(); err != nil {
		return dst, err
	}
	// The encoder refused what check accepts: a bug, refused all the same.
	return dst, fmt.Errorf("entry refused by the encoder, accepted by check")
}

// encoder appends a canonical encoding to b. bad records that what it
// wrote cannot be recorded: a string that is not UTF-8, or a decision,
// mode, year or capability kind that check refuses.
type encoder struct {
	b   []byte
	bad bool
}

func (w *encoder) entry(e *Entry, t *Template) {
	switch e.Decision {
	case Allow, Deny, Ask:
	default:
		w.bad = true
	}
	switch e.Mode {
	case Enforce, Shadow:
	default:
		w.bad = true
	}
	switch e.Would {
	case "", Allow, Deny, Ask:
	default:
		w.bad = true
	}
	w.b = append(w.b, `{"args_hash":`...)
	w.optDigest(e.ArgsHash)
	w.b = append(w.b, `,"bound":`...)
	w.b = strconv.AppendBool(w.b, e.Bound)
	w.b = append(w.b, `,"caps":[`...)
	for i := range e.Caps {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.capability(&e.Caps[i])
	}
	w.b = append(w.b, `],"decision":"`...)
	w.b = append(w.b, e.Decision...)
	w.b = append(w.b, `","envelope":`...)
	w.optDigest(e.Envelope)
	if e.Method != "" {
		if e.Method == MethodToolsCall {
			w.bad = true // its one spelling is no key
		}
		w.b = append(w.b, `,"method":`...)
		w.str(e.Method)
	}
	w.b = append(w.b, `,"mode":"`...)
	w.b = append(w.b, e.Mode...)
	w.b = append(w.b, `","origin":`...)
	w.str(e.Origin)
	w.b = append(w.b, `,"policy_hash":`...)
	w.optDigest(e.PolicyHash)
	w.b = append(w.b, `,"prev":"`...)
	if t != nil {
		t.prevAt = len(w.b)
	} else {
		w.b = appendHex32(w.b, &e.Prev)
	}
	w.b = append(w.b, `","principal":`...)
	w.str(e.Principal)
	w.b = append(w.b, `,"reason":`...)
	w.str(e.Reason)
	w.b = append(w.b, `,"roles":`...)
	w.strs(e.Roles)
	w.b = append(w.b, `,"rules":`...)
	w.strs(e.Rules)
	w.b = append(w.b, `,"seq":`...)
	if t != nil {
		t.seqAt = len(w.b)
	} else {
		w.b = strconv.AppendUint(w.b, e.Seq, 10)
	}
	w.b = append(w.b, `,"server":`...)
	w.str(e.Server)
	w.b = append(w.b, `,"session":`...)
	w.str(e.Session)
	w.b = append(w.b, `,"taint":`...)
	w.b = strconv.AppendBool(w.b, e.Taint)
	w.b = append(w.b, `,"tier":`...)
	w.str(e.Tier)
	w.b = append(w.b, `,"time":"`...)
	var ok bool
	w.b, ok = appendTime(w.b, e.Time)
	w.bad = w.bad || !ok
	w.b = append(w.b, `","tool":`...)
	w.str(e.Tool)
	w.b = append(w.b, `,"tool_schema_hash":`...)
	w.optDigest(e.ToolSchemaHash)
	w.b = append(w.b, `,"v":`...)
	w.b = strconv.AppendUint(w.b, Version, 10)
	w.b = append(w.b, `,"would":"`...)
	if e.Would != e.Decision {
		w.b = append(w.b, e.Would...)
	}
	w.b = append(w.b, `"}`...)
}

func (w *encoder) capability(c *Cap) {
	if c.Kind == "" {
		w.bad = true
	}
	w.b = append(w.b, '{')
	sep := false
	key := func(k string) {
		if sep {
			w.b = append(w.b, ',')
		}
		sep = true
		w.b = append(w.b, '"')
		w.b = append(w.b, k...)
		w.b = append(w.b, `":`...)
	}
	if len(c.Argv) > 0 {
		key("argv")
		w.strs(c.Argv)
	}
	str := func(k, v string) {
		if v != "" {
			key(k)
			w.str(v)
		}
	}
	str("command", c.Command)
	str("host", c.Host)
	str("id", c.ID)
	str("id_kind", c.IDKind)
	str("kind", c.Kind)
	str("path", c.Path)
	if c.Port != 0 {
		key("port")
		w.b = strconv.AppendUint(w.b, uint64(c.Port), 10)
	}
	str("program", c.Program)
	str("scheme", c.Scheme)
	if c.Shell {
		key("shell")
		w.b = append(w.b, "true"...)
	}
	if c.Subtree {
		key("subtree")
		w.b = append(w.b, "true"...)
	}
	if c.Unproven {
		key("unproven")
		w.b = append(w.b, "true"...)
	}
	str("url", c.URL)
	w.b = append(w.b, '}')
}

func (w *encoder) optDigest(d Digest) {
	w.b = append(w.b, '"')
	if !d.IsZero() {
		w.b = appendHex32(w.b, &d)
	}
	w.b = append(w.b, '"')
}

func (w *encoder) strs(ss []string) {
	w.b = append(w.b, '[')
	for i, s := range ss {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(s)
	}
	w.b = append(w.b, ']')
}

// str appends s as a JCS string (RFC 8785 section 3.2.2.2, which is
// ECMAScript's JSON.stringify): '"' and '\' are escaped, the control
// characters U+0000 to U+001F use \b \t \n \f \r or \u00xx with lower-case
// hex, and everything else, U+007F and U+2028 included, is written as its
// UTF-8 bytes. If s is not valid UTF-8 it sets w.bad.
func (w *encoder) str(s string) {
	w.b = append(w.b, '"')
	for {
		n := plainRunString(s)
		w.b = append(w.b, s[:n]...)
		s = s[n:]
		if len(s) == 0 {
			break
		}
		c := s[0]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s)
			if r == utf8.RuneError && size == 1 {
				w.bad = true
			}
			w.b = append(w.b, s[:size]...)
			s = s[size:]
			continue
		}
		s = s[1:]
		switch c {
		case '"', '\\':
			w.b = append(w.b, '\\', c)
		case '\b':
			w.b = append(w.b, `\b`...)
		case '\t':
			w.b = append(w.b, `\t`...)
		case '\n':
			w.b = append(w.b, `\n`...)
		case '\f':
			w.b = append(w.b, `\f`...)
		case '\r':
			w.b = append(w.b, `\r`...)
		default:
			w.b = append(w.b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	w.b = append(w.b, '"')
}

const hexDigits = "0123456789abcdef"

// timeLayout is the stored form of Entry.Time: UTC, always nine fractional
// digits, so that one instant has one encoding.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// appendTime appends t in timeLayout; ok is false, and nothing appended,
// if its year (in UTC) is outside 0000-9999, which the layout cannot hold.
// It computes the civil date from the Unix day number (the days_from_civil
// inverse of H. Hinnant's chrono algorithms, proleptic Gregorian like
// package time) and writes digits in pairs; FuzzAppendTime holds it to
// time.Format.
func appendTime(dst []byte, t time.Time) (out []byte, ok bool) {
	sec := t.Unix()
	days, rem := sec/86400, sec%86400
	if rem < 0 {
		days, rem = days-1, rem+86400
	}
	// Days since 0000-03-01, in 400-year eras of 146,097 days.
	z := days + 719468
	era := z / 146097
	if z%146097 < 0 {
		era--
	}
	doe := z - era*146097                                  // day of era, 0-146096
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // year of era, 0-399
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // day of the year from March 1, 0-365
	mp := (5*doy + 2) / 153                                // month from March, 0-11
	y, m, d := yoe+era*400, mp+3, doy-(153*mp+2)/5+1
	if m > 12 {
		y, m = y+1, m-12
	}
	if y < 0 || y > 9999 {
		return dst, false
	}
	ns := t.Nanosecond()
	var b [len(timeLayout)]byte
	put2(b[0:], int(y/100))
	put2(b[2:], int(y%100))
	b[4] = '-'
	put2(b[5:], int(m))
	b[7] = '-'
	put2(b[8:], int(d))
	b[10] = 'T'
	put2(b[11:], int(rem/3600))
	b[13] = ':'
	put2(b[14:], int(rem/60%60))
	b[16] = ':'
	put2(b[17:], int(rem%60))
	b[19] = '.'
	b[20] = byte('0' + ns/100_000_000)
	put2(b[21:], ns/1_000_000%100)
	put2(b[23:], ns/10_000%100)
	put2(b[25:], ns/100%100)
	put2(b[27:], ns%100)
	b[29] = 'Z'
	return append(dst, b[:]...), true
}

// put2 writes v, 0-99, as two decimal digits.
func put2(b []byte, v int) {
	b[0], b[1] = digitPairs[2*v], digitPairs[2*v+1]
}

const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// A Hasher computes entry hashes without allocating. It is not safe for
// concurrent use.
type Hasher struct {
	h   hash.Hash
	sum []byte
}

// NewHasher returns a Hasher.
func NewHasher() *Hasher { return &Hasher{h: sha256.New(), sum: make([]byte, 0, sha256.Size)} }

var (
	entryDomain = []byte(EntryDomain)
	closeBrace  = []byte{'}'}
)

// canonical returns SHA-256(EntryDomain || canon).
func (hs *Hasher) canonical(canon []byte) (d Digest) {
	hs.h.Reset()
	hs.h.Write(entryDomain)
	hs.h.Write(canon)
	copy(d[:], hs.h.Sum(hs.sum[:0]))
	return d
}

// Body returns the entry hash of a stored line given its body: the line
// without its trailing `,"hash":"…"}` ([Facts].Body). The canonical encoding is the
// body followed by '}'.
func (hs *Hasher) Body(body []byte) (d Digest) {
	hs.h.Reset()
	hs.h.Write(entryDomain)
	hs.h.Write(body)
	hs.h.Write(closeBrace)
	copy(d[:], hs.h.Sum(hs.sum[:0]))
	return d
}

// hashSuffixLen is the length of the `,"hash":"<64 hex>"}` that ends a stored
// entry line (before its newline).
const hashSuffixLen = len(`,"hash":""}`) + 64

// appendLineSuffix ends a stored entry line whose body (the canonical
// encoding less its closing brace) dst already holds.
func appendLineSuffix(dst []byte, h Digest) []byte {
	dst = append(dst, `,"hash":"`...)
	dst = appendHex32(dst, &h)
	return append(dst, "\"}\n"...)
}

// Canonical returns the canonical encoding of e: the bytes its Hash is
// computed over (without the domain prefix). It fails if e could not be
// recorded (an unknown decision, a string that is not UTF-8, ...).
func (e *Entry) Canonical() ([]byte, error) {
	c, err := encodeEntry(nil, e, nil)
	if err != nil {
		return nil, fmt.Errorf("record: encoding entry: %w", err)
	}
	if e.Seq > MaxSeq {
		return nil, fmt.Errorf("record: encoding entry: seq %d above %d", e.Seq, uint64(MaxSeq))
	}
	return c, nil
}

// ComputeHash returns the hash of e's canonical encoding, the value its Hash
// field must hold.
func (e *Entry) ComputeHash() (Digest, error) {
	c, err := e.Canonical()
	if err != nil {
		return Digest{}, err
	}
	return NewHasher().canonical(c), nil
}

// MarshalJSON returns e in its stored form (one line of a segment, without
// the newline): the canonical encoding with "hash" added as the last key,
// holding e.Hash as it is.
func (e Entry) MarshalJSON() ([]byte, error) {
	c, err := e.Canonical()
	if err != nil {
		return nil, err
	}
	b := appendLineSuffix(c[:len(c)-1], e.Hash)
	return b[:len(b)-1], nil
}
