package chain

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"time"
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
//	argv command host id id_kind kind path port program scheme shell url
//
// Every top-level key is always present; absent digests are "". Numbers are
// unsigned integers at most MaxSeq, written in decimal without leading
// zeros, which is how JCS writes those doubles.

// template records where a Log splices the fields only its writer knows
// (prev and seq) into an entry encoded ahead of time by the caller.
type template struct {
	prevAt int // offset where the 64 hex digits of prev go
	seqAt  int // offset where the decimal seq goes
}

// appendCanonical appends the canonical encoding of e to dst. e must have
// passed check. With t non-nil it leaves out the prev digits and the seq
// number and records where they go.
func appendCanonical(dst []byte, e *Entry, t *template) []byte {
	dst = append(dst, `{"args_hash":`...)
	dst = appendOptDigest(dst, e.ArgsHash)
	dst = append(dst, `,"bound":`...)
	dst = strconv.AppendBool(dst, e.Bound)
	dst = append(dst, `,"caps":[`...)
	for i := range e.Caps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendCap(dst, &e.Caps[i])
	}
	dst = append(dst, `],"decision":"`...)
	dst = append(dst, e.Decision...)
	dst = append(dst, `","envelope":`...)
	dst = appendOptDigest(dst, e.Envelope)
	dst = append(dst, `,"mode":"`...)
	dst = append(dst, e.Mode...)
	dst = append(dst, `","origin":`...)
	dst = appendString(dst, e.Origin)
	dst = append(dst, `,"policy_hash":`...)
	dst = appendOptDigest(dst, e.PolicyHash)
	dst = append(dst, `,"prev":"`...)
	if t != nil {
		t.prevAt = len(dst)
	} else {
		dst = hex.AppendEncode(dst, e.Prev[:])
	}
	dst = append(dst, `","principal":`...)
	dst = appendString(dst, e.Principal)
	dst = append(dst, `,"reason":`...)
	dst = appendString(dst, e.Reason)
	dst = append(dst, `,"roles":`...)
	dst = appendStrings(dst, e.Roles)
	dst = append(dst, `,"rules":`...)
	dst = appendStrings(dst, e.Rules)
	dst = append(dst, `,"seq":`...)
	if t != nil {
		t.seqAt = len(dst)
	} else {
		dst = strconv.AppendUint(dst, e.Seq, 10)
	}
	dst = append(dst, `,"server":`...)
	dst = appendString(dst, e.Server)
	dst = append(dst, `,"session":`...)
	dst = appendString(dst, e.Session)
	dst = append(dst, `,"taint":`...)
	dst = strconv.AppendBool(dst, e.Taint)
	dst = append(dst, `,"tier":`...)
	dst = appendString(dst, e.Tier)
	dst = append(dst, `,"time":"`...)
	dst = appendTime(dst, e.Time)
	dst = append(dst, `","tool":`...)
	dst = appendString(dst, e.Tool)
	dst = append(dst, `,"tool_schema_hash":`...)
	dst = appendOptDigest(dst, e.ToolSchemaHash)
	dst = append(dst, `,"v":`...)
	dst = strconv.AppendUint(dst, Version, 10)
	dst = append(dst, `,"would":"`...)
	if e.Would != e.Decision {
		dst = append(dst, e.Would...)
	}
	return append(dst, `"}`...)
}

func appendCap(dst []byte, c *Cap) []byte {
	dst = append(dst, '{')
	sep := false
	key := func(k string) {
		if sep {
			dst = append(dst, ',')
		}
		sep = true
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, `":`...)
	}
	if len(c.Argv) > 0 {
		key("argv")
		dst = appendStrings(dst, c.Argv)
	}
	str := func(k, v string) {
		if v != "" {
			key(k)
			dst = appendString(dst, v)
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
		dst = strconv.AppendUint(dst, uint64(c.Port), 10)
	}
	str("program", c.Program)
	str("scheme", c.Scheme)
	if c.Shell {
		key("shell")
		dst = append(dst, "true"...)
	}
	str("url", c.URL)
	return append(dst, '}')
}

func appendOptDigest(dst []byte, d Digest) []byte {
	dst = append(dst, '"')
	if !d.IsZero() {
		dst = hex.AppendEncode(dst, d[:])
	}
	return append(dst, '"')
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// appendString appends s as a JCS string (RFC 8785 section 3.2.2.2, which
// is ECMAScript's JSON.stringify): '"' and '\' are escaped, the control
// characters U+0000 to U+001F use \b \t \n \f \r or \u00xx with lower-case
// hex, and everything else, U+007F and U+2028 included, is written as its
// UTF-8 bytes. s must be valid UTF-8.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		start = i + 1
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, `\b`...)
		case '\t':
			dst = append(dst, `\t`...)
		case '\n':
			dst = append(dst, `\n`...)
		case '\f':
			dst = append(dst, `\f`...)
		case '\r':
			dst = append(dst, `\r`...)
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// timeLayout is the stored form of Entry.Time: UTC, always nine fractional
// digits, so that one instant has one encoding.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// appendTime appends t in timeLayout. The year must be 0000 to 9999.
func appendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	dst = appendDigits(dst, y, 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, int(mo), 2)
	dst = append(dst, '-')
	dst = appendDigits(dst, d, 2)
	dst = append(dst, 'T')
	dst = appendDigits(dst, h, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, mi, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, s, 2)
	dst = append(dst, '.')
	dst = appendDigits(dst, t.Nanosecond(), 9)
	return append(dst, 'Z')
}

func appendDigits(dst []byte, v, width int) []byte {
	var buf [9]byte
	for i := width - 1; i >= 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, buf[:width]...)
}

// hasher computes entry hashes without allocating. It is not safe for
// concurrent use.
type hasher struct {
	h   hash.Hash
	sum []byte
}

func newHasher() *hasher { return &hasher{h: sha256.New(), sum: make([]byte, 0, sha256.Size)} }

var (
	entryDomain = []byte(EntryDomain)
	closeBrace  = []byte{'}'}
)

// canonical returns SHA-256(EntryDomain || canon).
func (hs *hasher) canonical(canon []byte) (d Digest) {
	hs.h.Reset()
	hs.h.Write(entryDomain)
	hs.h.Write(canon)
	copy(d[:], hs.h.Sum(hs.sum[:0]))
	return d
}

// lineBody returns the entry hash of a stored line given its body: the
// line without its trailing `,"hash":"…"}`. The canonical encoding is the
// body followed by '}'.
func (hs *hasher) lineBody(body []byte) (d Digest) {
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
	dst = hex.AppendEncode(dst, h[:])
	return append(dst, "\"}\n"...)
}

// Canonical returns the canonical encoding of e: the bytes its Hash is
// computed over (without the domain prefix). It fails if e could not be
// recorded (an unknown decision, a string that is not UTF-8, ...).
func (e *Entry) Canonical() ([]byte, error) {
	if err := e.check(); err != nil {
		return nil, fmt.Errorf("chain: encoding entry: %w", err)
	}
	if e.Seq > MaxSeq {
		return nil, fmt.Errorf("chain: encoding entry: seq %d above %d", e.Seq, uint64(MaxSeq))
	}
	return appendCanonical(nil, e, nil), nil
}

// ComputeHash returns the hash of e's canonical encoding, the value its Hash
// field must hold.
func (e *Entry) ComputeHash() (Digest, error) {
	c, err := e.Canonical()
	if err != nil {
		return Digest{}, err
	}
	return newHasher().canonical(c), nil
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
