package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"
)

// This file reads stored entry lines: fully and strictly with the decoder
// of decode.go, or lightly ([Skim]), for a verifier.

// Facts are what a reader of a chain needs of an entry line to place it
// in the chain: its seq, its link and its stored hash, and the bytes its
// hash is computed over.
type Facts struct {
	Seq  uint64
	Prev Digest // decoded by Decode and DecodeIn; zero from Skim
	Hash Digest // as stored; decoded by Decode and DecodeIn; zero from Skim
	// PrevText and HashText are the digits of prev and of the stored hash,
	// unchecked, from Skim; nil from Decode and DecodeIn.
	PrevText, HashText []byte
	Body               []byte // the line less `,"hash":"…"}`: canonical encoding minus its '}'; see [Hasher.Body]
}

// The keys of an entry line, in order.
var (
	kArgsHash   = newKey(`{"args_hash":`)
	kBound      = newKey(`,"bound":`)
	kCaps       = newKey(`,"caps":[`)
	kDecision   = newKey(`,"decision":`)
	kEnvelope   = newKey(`,"envelope":`)
	kMethod     = newKey(`,"method":`)
	kMode       = newKey(`,"mode":`)
	kOrigin     = newKey(`,"origin":`)
	kPolicyHash = newKey(`,"policy_hash":`)
	kPrev       = newKey(`,"prev":"`)
	kPrincipal  = newKey(`","principal":`)
	kReason     = newKey(`,"reason":`)
	kRoles      = newKey(`,"roles":`)
	kRules      = newKey(`,"rules":`)
	kSeq        = newKey(`,"seq":`)
	kServer     = newKey(`,"server":`)
	kSession    = newKey(`,"session":`)
	kTaint      = newKey(`,"taint":`)
	kTier       = newKey(`,"tier":`)
	kTime       = newKey(`,"time":"`)
	kTool       = newKey(`","tool":`)
	kToolSchema = newKey(`,"tool_schema_`) // a key is at most 16 bytes
	kHashKey    = newKey(`hash":`)
	kV          = newKey(`,"v":`)
	kWould      = newKey(`,"would":`)
	kHash       = newKey(`,"hash":"`)
	kEnd        = newKey(`"}`)
)

// Decode reads a stored entry line (without its newline) strictly: it
// accepts the stored form SPEC.md defines and nothing else, so what it
// accepts re-encodes to the same bytes. With e non-nil it fills e;
// otherwise it only validates, without allocating.
func Decode(line []byte, e *Entry) (f Facts, err error) {
	return DecodeIn(line, e, nil, false)
}

// DecodeIn is [Decode] carving e's slices from ar and interning its
// strings there, when ar is not nil. When light, it leaves zero in e the
// fields a decision is not made on (Session, Time, and the digests but Prev
// and Hash), which it checks without decoding.
func DecodeIn(line []byte, e *Entry, ar *Arena, light bool) (f Facts, err error) {
	d := decoder{b: line, build: e != nil, ar: ar, light: light}
	var x Entry
	if e == nil {
		e = &x
	}
	// Each key is tested inline (has), and read by lit, which says what
	// is wrong, only when it is not there.
	if !d.has(kArgsHash) {
		d.lit(kArgsHash)
	}
	d.optDigest(&e.ArgsHash)
	if !d.has(kBound) {
		d.lit(kBound)
	}
	e.Bound = d.boolean()
	if !d.has(kCaps) {
		d.lit(kCaps)
	}
	e.Caps = nil
	if d.peek(']') {
		d.i++
	} else {
		var scratch Cap
		for d.err == nil {
			c := &scratch
			if d.build {
				// Decode into the entry's next slot, not aside and copied.
				if e.Caps == nil {
					e.Caps = d.newCaps()
				}
				if n := len(e.Caps); n < cap(e.Caps) {
					e.Caps = e.Caps[:n+1]
					e.Caps[n] = Cap{}
				} else {
					e.Caps = append(e.Caps, Cap{})
				}
				c = &e.Caps[len(e.Caps)-1]
			}
			d.capability(c)
			if d.peek(',') {
				d.i++
				continue
			}
			if !d.next(']') {
				d.char(']')
			}
			break
		}
	}
	if !d.has(kDecision) {
		d.lit(kDecision)
	}
	e.Decision = d.decision(false)
	if !d.has(kEnvelope) {
		d.lit(kEnvelope)
	}
	d.optDigest(&e.Envelope)
	// The one optional key: absent for a tools/call.
	if d.has(kMethod) {
		at := d.i
		e.Method = d.str() // "" when only validating: the raw bytes tell
		if raw := string(d.b[at:d.i]); d.err == nil && (raw == `""` || raw == `"`+MethodToolsCall+`"`) {
			d.i = at
			d.fail("method " + raw + " is written by leaving the key out")
		}
	}
	if !d.has(kMode) {
		d.lit(kMode)
	}
	e.Mode = d.mode()
	if !d.has(kOrigin) {
		d.lit(kOrigin)
	}
	e.Origin = d.strMemo(memoOrigin)
	if !d.has(kPolicyHash) {
		d.lit(kPolicyHash)
	}
	d.optDigest(&e.PolicyHash)
	if !d.has(kPrev) {
		d.lit(kPrev)
	}
	d.hex32Into(&e.Prev)
	if !d.has(kPrincipal) {
		d.lit(kPrincipal)
	}
	e.Principal = d.strMemo(memoPrincipal)
	if !d.has(kReason) {
		d.lit(kReason)
	}
	e.Reason = d.strMemo(memoReason)
	if !d.has(kRoles) {
		d.lit(kRoles)
	}
	e.Roles = d.strs(memoRole, memoRole)
	if !d.has(kRules) {
		d.lit(kRules)
	}
	e.Rules = d.strs(memoRule, nMemo-1)
	if !d.has(kSeq) {
		d.lit(kSeq)
	}
	e.Seq = d.uint(MaxSeq)
	if d.err == nil && e.Seq == 0 {
		d.fail("seq 0: sequence numbers start at 1")
	}
	if !d.has(kServer) {
		d.lit(kServer)
	}
	e.Server = d.strMemo(memoServer)
	if !d.has(kSession) {
		d.lit(kSession)
	}
	build := d.build
	d.build = build && !light // read only to check it
	e.Session = d.str()
	d.build = build
	if !d.has(kTaint) {
		d.lit(kTaint)
	}
	e.Taint = d.boolean()
	if !d.has(kTier) {
		d.lit(kTier)
	}
	e.Tier = d.strMemo(memoTier)
	if !d.has(kTime) {
		d.lit(kTime)
	}
	d.build = build && !light
	e.Time = d.timestamp()
	d.build = build
	if !d.has(kTool) {
		d.lit(kTool)
	}
	e.Tool = d.strMemo(memoTool)
	// The key is longer than a key's 16 bytes, so it is tested in two;
	// an error names it whole, where it starts.
	if at := d.i; !d.has(kToolSchema) || !d.has(kHashKey) {
		d.i = at
		d.litSlow(`,"tool_schema_hash":`)
	}
	d.optDigest(&e.ToolSchemaHash)
	if !d.has(kV) {
		d.lit(kV)
	}
	if v := d.uint(MaxSeq); d.err == nil && v != Version {
		d.fail(fmt.Sprintf("format version %d, want %d", v, Version))
	}
	e.V = Version
	if !d.has(kWould) {
		d.lit(kWould)
	}
	e.Would = d.decision(true)
	if d.err == nil && e.Would == e.Decision {
		d.fail("would equal to decision is written as \"\"")
	}
	bodyEnd := d.i
	if !d.has(kHash) {
		d.lit(kHash)
	}
	d.hex32Into(&e.Hash)
	if !d.has(kEnd) {
		d.lit(kEnd)
	}
	if d.err == nil && d.i != len(line) {
		d.fail("trailing bytes after the entry")
	}
	if d.err != nil {
		return f, d.err
	}
	return Facts{Seq: e.Seq, Prev: e.Prev, Hash: e.Hash, Body: line[:bodyEnd]}, nil
}

var (
	prevKey        = []byte(`,"prev":"`)
	seqKey         = []byte(`,"seq":`)
	seqAnchor      = []byte(`],"seq":`)
	decisionAnchor = []byte(`],"decision":"`)
	hashKey        = []byte(`,"hash":"`)
	entryStart     = []byte(`{"args_hash":"`)
)

// Skim finds seq, prev and the stored hash of an entry line without
// decoding the rest, for a verifier, which hashes the line's bytes as they
// are. It reads seq; prev and the hash it leaves as text (Facts.PrevText and
// Facts.HashText), which a verifier compares with the lower-case hex of the
// hashes it computes. ok is false when it cannot find them this way;
// [Decode] then says what is wrong with the line.
//
// The shortcut is sound for what a verifier proves: a line covered by a
// signature is byte for byte what the key holder wrote, and its writer
// writes only the stored form, in which the first `],"decision":"`, the
// first `,"prev":"` after it and the first `],"seq":` after that are the
// top-level keys (inside a string every '"' is escaped, and no capability
// has such keys). A line that is not covered proves nothing either way, and
// a verifier decodes any line that breaks the chain strictly to classify
// the break; chain's Scan and VerifyOptions.Strict decode every line
// strictly.
func Skim(line []byte) (f Facts, ok bool) {
	n := len(line)
	if n < len(entryStart)+hashSuffixLen || string(line[:len(entryStart)]) != string(entryStart) {
		return f, false
	}
	suffix := line[n-hashSuffixLen:]
	if string(suffix[:len(hashKey)]) != string(hashKey) || string(suffix[hashSuffixLen-2:]) != `"}` {
		return f, false
	}
	f.HashText = suffix[len(hashKey) : len(hashKey)+64]
	body := line[:n-hashSuffixLen]
	// Search from anchors that start with a rare byte (']' ends only the
	// caps, argv, roles and rules arrays), so the searches skip ahead in
	// long strides instead of stopping at every ',' or '"'.
	a := bytes.Index(body, decisionAnchor)
	if a < 0 {
		return f, false
	}
	i := prevAt(body, a+len(decisionAnchor))
	if i < 0 {
		i = bytes.Index(body[a:], prevKey)
		if i < 0 {
			return f, false
		}
		i += a + len(prevKey)
	}
	if len(body)-i < 64+1 {
		return f, false
	}
	f.PrevText = body[i : i+64]
	j := bytes.Index(body[i+64:], seqAnchor)
	if j < 0 {
		return f, false
	}
	j += 64 + 1 // seqAnchor starts with ']'
	d := decoder{b: body, i: i + j + len(seqKey)}
	f.Seq = d.uint(MaxSeq)
	if d.err != nil || f.Seq == 0 || !d.peek(',') {
		return f, false
	}
	f.Body = body
	return f, true
}

// prevAt returns where the digits of prev start in the body of an entry
// line, given i, where the decision's word starts; or -1 if it cannot tell
// this way. Between the two, every field has one of a few lengths but the
// origin, whose end is its first '"' unless that is escaped: prevAt steps
// over them instead of searching for `,"prev":"`, whose first byte is
// common.
func prevAt(body []byte, i int) int {
	// Constants, so that each comparison compiles to a few loads.
	const (
		allow, deny, ask = `allow"`, `deny"`, `ask"`
		envelope         = `,"envelope":"`
		mode             = `","mode":"`
		enforce, shadow  = `enforce","origin":"`, `shadow","origin":"`
		policyHash       = `,"policy_hash":"`
		prev             = `","prev":"`
	)
	if len(body)-i < len(allow)+len(envelope) {
		return -1
	}
	switch {
	case string(body[i:i+len(allow)]) == allow:
		i += len(allow)
	case string(body[i:i+len(deny)]) == deny:
		i += len(deny)
	case string(body[i:i+len(ask)]) == ask:
		i += len(ask)
	default:
		return -1
	}
	if string(body[i:i+len(envelope)]) != envelope {
		return -1
	}
	i += len(envelope)
	if i < len(body) && body[i] != '"' {
		i += 64
	}
	if len(body)-i < len(mode)+len(enforce) || string(body[i:i+len(mode)]) != mode {
		return -1
	}
	i += len(mode)
	switch {
	case string(body[i:i+len(enforce)]) == enforce:
		i += len(enforce)
	case string(body[i:i+len(shadow)]) == shadow:
		i += len(shadow)
	default:
		return -1
	}
	end := bytes.IndexByte(body[i:], '"')
	if end < 0 || end > 0 && body[i+end-1] == '\\' {
		return -1
	}
	i += end + 1
	if len(body)-i < len(policyHash) || string(body[i:i+len(policyHash)]) != policyHash {
		return -1
	}
	i += len(policyHash)
	if i < len(body) && body[i] != '"' {
		i += 64
	}
	if len(body)-i < len(prev) || string(body[i:i+len(prev)]) != prev {
		return -1
	}
	return i + len(prev)
}

// Arena hands out the slices of decoded entries (roles, rules, caps) from
// shared backing arrays, so a scan does not allocate three slices per
// entry, and interns their strings. A slice it gave out stays valid: the
// Arena moves on to a new array when one is full. It is not safe for
// concurrent use. A nil Arena allocates each slice and string.
type Arena struct {
	strs []string
	caps []Cap
	// text holds the bytes of the strings the Arena made, one after the
	// other: a string is a view of its bytes (see newString), which are
	// never written again, so a scan does not allocate a string per
	// entry for the strings that do not repeat (paths, URLs).
	text []byte
	// last holds the last value of the fields read with strMemo.
	last [nMemo]string
	// interned holds recent strings by a hash of their bytes. Most strings
	// of an entry repeat from entry to entry (server, tool, principal,
	// roles, rules, reason, kinds); interning them spares a copy per entry
	// and most of the garbage a scan would otherwise make.
	interned [1024]internedString
}

type internedString struct {
	s           string
	first, last uint64 // the first and last 8 bytes of s, as in Arena.str
}

// maxInterned is the length above which strings are not interned: long
// strings seldom repeat.
const maxInterned = 128

// textLen is the size of an Arena's blocks of string bytes, and the
// longest string carved from them.
const textLen = 16 << 10

// newString returns a copy of b, carved from the Arena's current block of
// string bytes. The bytes of a string it returned are never written again:
// the block is only appended to, within its capacity, and a full block is
// left as it is for a new one. A string kept keeps its whole block.
func (a *Arena) newString(b []byte) string {
	if len(b) == 0 || len(b) > textLen/4 {
		return string(b)
	}
	if cap(a.text)-len(a.text) < len(b) {
		a.text = make([]byte, 0, textLen)
	}
	off := len(a.text)
	a.text = append(a.text, b...)
	return unsafe.String(unsafe.SliceData(a.text[off:]), len(b))
}

// str returns b[start:end] as a string, interned when it is short.
func (a *Arena) str(b []byte, start, end int) string {
	n := end - start
	if a == nil {
		return string(b[start:end])
	}
	if n > maxInterned || n == 0 || len(b)-start < 8 {
		return a.newString(b[start:end])
	}
	// The first and last 8 bytes, which for a string shorter than 8 are
	// its bytes (the line goes on after it; those bytes are masked out),
	// and for one up to 16 bytes long cover it.
	first := binary.LittleEndian.Uint64(b[start:])
	last := binary.LittleEndian.Uint64(b[max(end-8, start):])
	if n < 8 {
		first &= 1<<(8*n) - 1
		last = first
	}
	// A collision only costs a copy.
	is := &a.interned[(first*0x9e3779b97f4a7c15^last*0xc2b2ae3d27d4eb4f^uint64(n))>>54]
	if len(is.s) != n || is.first != first || is.last != last || n > 16 && is.s != string(b[start:end]) {
		*is = internedString{a.newString(b[start:end]), first, last}
	}
	return is.s
}

// The lengths of an Arena's arrays of strings and of capabilities: each
// array is a small object (at most 32 KiB), which the runtime carves from
// memory it reuses, where a larger one takes fresh pages from the kernel
// (a page fault each).
const (
	strsLen = 1024
	capsLen = 128
)

// reserveStrs makes room for an array of strings.
func (a *Arena) reserveStrs() {
	if cap(a.strs)-len(a.strs) < 64 {
		a.strs = make([]string, 0, strsLen)
	}
}

// newCaps returns an empty slice of capabilities to append to, carved
// from ar when there is one.
func (d *decoder) newCaps() []Cap {
	a := d.ar
	if a == nil {
		return make([]Cap, 0, 1)
	}
	if cap(a.caps) == len(a.caps) {
		a.caps = make([]Cap, 0, capsLen)
	}
	// One slot, the usual count; an append past it reallocates, so a
	// longer list never overwrites the Arena's next slices.
	n := len(a.caps)
	a.caps = a.caps[:n+1]
	return a.caps[n : n : n+1]
}
