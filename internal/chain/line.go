package chain

import (
	"bytes"
	"fmt"
)

// This file reads stored entry lines: fully and strictly with the decoder
// of decode.go, or lightly, for Verify.

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

// decodeEntryIn is decodeEntry carving e's slices from ar, when ar is not
// nil.
func decodeEntryIn(line []byte, e *Entry, ar *arena) (f entryFacts, err error) {
	d := decoder{b: line, build: e != nil, ar: ar}
	if d.build {
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
					e.Caps = d.newCaps()
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
	prevKey        = []byte(`,"prev":"`)
	seqKey         = []byte(`,"seq":`)
	seqAnchor      = []byte(`],"seq":`)
	decisionAnchor = []byte(`],"decision":"`)
	hashKey        = []byte(`,"hash":"`)
	entryStart     = []byte(`{"args_hash":"`)
)

// entryFactsOf reads seq, prev and the stored hash of an entry line
// without decoding the rest, for Verify, which hashes the line's bytes as
// they are. The shortcut is sound for what Verify proves: a line covered by
// a signature is byte for byte what the key holder wrote, and its writer
// writes only the stored form, in which the first `],"decision":"`, the
// first `,"prev":"` after it and the first `],"seq":` after that are the
// top-level keys (inside a string every '"' is escaped, and no capability
// has such keys). A line that is not
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
	// Search from anchors that start with a rare byte (']' ends only the
	// caps, argv, roles and rules arrays), so the searches skip ahead in
	// long strides instead of stopping at every ',' or '"'.
	a := bytes.Index(body, decisionAnchor)
	if a < 0 {
		return f, false
	}
	i := bytes.Index(body[a:], prevKey)
	if i < 0 || len(body)-a-i < len(prevKey)+64+1 {
		return f, false
	}
	i += a + len(prevKey)
	if f.prev, ok = parseHex32(body[i : i+64]); !ok {
		return f, false
	}
	j := bytes.Index(body[i+64:], seqAnchor)
	if j < 0 {
		return f, false
	}
	j += 64 + 1 // seqAnchor starts with ']'
	d := decoder{b: body, i: i + j + len(seqKey)}
	f.seq = d.uint(MaxSeq)
	if d.err != nil || f.seq == 0 || !d.peek(',') {
		return f, false
	}
	f.body = body
	return f, true
}

// arena hands out the slices of decoded entries (roles, rules, caps) from
// shared backing arrays, so a scan does not allocate three slices per
// entry. A slice it gave out stays valid: the arena moves on to a new array
// when one is full. It is not safe for concurrent use.
type arena struct {
	strs []string
	caps []Cap
}

const arenaLen = 4096

// reserveStrs makes room for an array of strings.
func (a *arena) reserveStrs() {
	if cap(a.strs)-len(a.strs) < 64 {
		a.strs = make([]string, 0, arenaLen)
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
		a.caps = make([]Cap, 0, arenaLen)
	}
	// One slot, the usual count; an append past it reallocates, so a
	// longer list never overwrites the arena's next slices.
	n := len(a.caps)
	a.caps = a.caps[:n+1]
	return a.caps[n : n : n+1]
}
