package chain

import (
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/aegis-mcp/aegis/internal/record"
)

// BreakKind classifies how a chain was found altered in the middle.
type BreakKind uint8

// The kinds of break. Each is evidence of tampering (or of a bug), never
// the result of a crash: a crash only shortens the last segment.
const (
	// BreakMalformed: a complete line that is not an entry, checkpoint or
	// ack in the stored form, or a segment other than the last that ends
	// mid-line.
	BreakMalformed BreakKind = iota + 1
	// BreakSeq: an entry whose seq is not the next one (an entry or a
	// segment deleted, inserted or moved), or a chain or segment that does
	// not start where it must.
	BreakSeq
	// BreakLink: an entry whose prev is not the hash of the entry before.
	BreakLink
	// BreakHash: an entry whose stored hash is not the hash of its content.
	BreakHash
	// BreakCheckpoint: a checkpoint that does not sign the entry right
	// before it (or right before the ack before it), an ack that does not
	// mark the entry right before it, or a segment other than the last that
	// ends unsigned.
	BreakCheckpoint
	// BreakSignature: a checkpoint by another key, or whose signature does
	// not verify.
	BreakSignature
)

var breakNames = [...]string{
	BreakMalformed:  "malformed line",
	BreakSeq:        "sequence break",
	BreakLink:       "broken link",
	BreakHash:       "hash mismatch",
	BreakCheckpoint: "misplaced checkpoint",
	BreakSignature:  "bad signature",
}

// String names k.
func (k BreakKind) String() string {
	if int(k) < len(breakNames) && breakNames[k] != "" {
		return breakNames[k]
	}
	return fmt.Sprintf("break(%d)", uint8(k))
}

// BreakError reports a chain altered in the middle: the first place, in
// file order, where it stops being the chain a Log writes.
type BreakError struct {
	Kind BreakKind
	// Seq is the entry at fault: the one whose hash or link is wrong, the
	// one expected where another seq was found, or the one a checkpoint
	// claims to sign.
	Seq  uint64
	Want string
	Got  string
	// File and Offset locate the line (the segment's name and the line's
	// byte offset; for a segment-level break, the end of the file).
	File   string
	Offset int64
}

func (e *BreakError) Error() string {
	return fmt.Sprintf("chain: %s at seq %d (%s, offset %d): want %s, got %s", e.Kind, e.Seq, e.File, e.Offset, e.Want, e.Got)
}

// Report describes a chain that verified, or how far it verified when
// Verify also returns an error.
type Report struct {
	// Entries is the number of entries checked: the seq of the last one.
	Entries uint64
	// Signed is the number of entries covered by a checkpoint whose
	// signature verified: the seq of that checkpoint. Entries after it are
	// not attested by the key, and anyone can append them.
	Signed uint64
	// Acked is the seq of the last ack line after the last checkpoint, or
	// 0: an ack line claims the entries up to it were acknowledged before
	// they were signed (a Log signs them within signDelay, or when it
	// reopens the chain after a crash). Its MAC can be checked only with
	// the private key (AckKey), so without it these entries are as
	// unsigned as any others.
	Acked uint64
	// AckChecked: VerifyWith was given the private key (AckKey) and the
	// MAC of the ack line at Acked is right, so this key's writer did
	// acknowledge the entries up to it.
	AckChecked bool
	// Checkpoints is the number of checkpoint lines checked.
	Checkpoints uint64
	// LastHash is the hash of the last entry.
	LastHash record.Digest
	// Segments and Bytes count what was read.
	Segments int
	Bytes    int64
	// TornBytes is the length of an unterminated last line, a write cut
	// short by a crash; it is not part of the chain.
	TornBytes int64
	// SignaturesChecked is the number of checkpoint signatures verified.
	SignaturesChecked uint64
}

// Unsigned returns the number of entries after the last verified
// checkpoint.
func (r Report) Unsigned() uint64 { return r.Entries - r.Signed }

// Truncated reports whether the chain ends with a torn line or with
// unsigned entries: what a crash leaves, and what anyone can add.
func (r Report) Truncated() bool { return r.TornBytes > 0 || r.Unsigned() > 0 }

// VerifyOptions configure VerifyWith. The zero value is what Verify does.
type VerifyOptions struct {
	// AllSignatures verifies the signature of every checkpoint. By default
	// only the last checkpoint's signature is verified: it covers every
	// entry before it through the hash links, and each ed25519 verification
	// costs about as much as hashing 100 KB. Every checkpoint's placement,
	// hash and key id is checked either way, so without AllSignatures the
	// one alteration that goes unnoticed is a corrupted signature in a
	// checkpoint that a later valid one makes redundant.
	AllSignatures bool
	// Strict decodes every entry with the strict decoder, which refuses
	// any line not in the stored form. By default Verify reads only seq,
	// prev and hash from a line and hashes its bytes as they are (see
	// SPEC.md): enough to prove the signed entries are those the key
	// holder wrote; Scan decodes strictly anyway.
	Strict bool
	// Workers is the number of goroutines that parse and hash lines.
	// Zero means GOMAXPROCS.
	Workers int
	// AckKey, if set, is the chain's private key, with which Verify also
	// checks the MAC of the last ack line after the last checkpoint: what
	// the key holder (an auditor with the disk of a crashed writer, say)
	// can learn of an acked tail without opening the chain for writing,
	// which would sign it. A wrong MAC is a BreakSignature.
	AckKey ed25519.PrivateKey
}

// Verify checks the chain in dir against pub, offline: every entry's
// canonical form, hash, link and seq; every checkpoint's placement and key;
// and the signature of the last checkpoint, which covers all entries up to
// it.
//
// It tells two outcomes apart. A chain altered in the middle (an entry
// edited, deleted, inserted or moved; a forged or corrupted checkpoint)
// gives a *BreakError. A chain cut short at the tail (a torn last line, or
// entries after the last checkpoint) verifies, and the Report says how
// much: see Report.Truncated. A suffix removed whole cannot be noticed from
// the chain alone; compare Report.Entries with a checkpoint kept elsewhere.
// Any other error means the chain could not be read. On a chain a Log is
// appending to, the batch being written, and the batches acked in the last
// 20 ms, may show as such a tail.
func Verify(dir string, pub ed25519.PublicKey) (Report, error) {
	return VerifyWith(dir, pub, nil)
}

// VerifyWith is Verify with options; opts may be nil.
func VerifyWith(dir string, pub ed25519.PublicKey, opts *VerifyOptions) (Report, error) {
	if opts == nil {
		opts = &VerifyOptions{}
	}
	if len(pub) != ed25519.PublicKeySize {
		return Report{}, fmt.Errorf("chain: verify: public key has %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	if opts.AckKey != nil && (len(opts.AckKey) != ed25519.PrivateKeySize || !pub.Equal(opts.AckKey.Public())) {
		return Report{}, errors.New("chain: verify: the private key given for acks is not the public key's")
	}
	segs, err := listSegments(dir)
	if err != nil {
		return Report{}, err
	}
	if len(segs) == 0 {
		return Report{}, fmt.Errorf("chain: verify: no segment files in %s", dir)
	}
	kid := keyID(pub)
	w, err := walk(segs, walkConfig{pub: pub, kid: kid, hash: true, allSigs: opts.AllSignatures, strict: opts.Strict, workers: opts.Workers})
	rep := Report{
		Entries:     w.entries,
		Checkpoints: w.checkpoints,
		LastHash:    w.prev,
		Segments:    w.segments,
		Bytes:       w.bytes,
		TornBytes:   w.torn,
	}
	if w.haveAck {
		rep.Acked = w.lastAck.seq
	}

	if opts.AllSignatures {
		rep.SignaturesChecked = w.checkpoints
	}
	if err != nil {
		return rep, err
	}
	if w.haveCk {
		if !opts.AllSignatures {
			rep.SignaturesChecked = 1
			if !w.lastCk.verify(pub, kid) {
				return rep, &BreakError{Kind: BreakSignature, Seq: w.lastCk.seq, Want: "a valid signature by key " + KeyID(pub), Got: "an invalid signature", File: w.lastCkFile, Offset: w.lastCkOff}
			}
		}
		rep.Signed = w.lastCk.seq
	}
	if opts.AckKey != nil && w.haveAck {
		if !newAcker(opts.AckKey).check(&w.lastAck) {
			return rep, &BreakError{Kind: BreakSignature, Seq: w.lastAck.seq, Want: "an ack MAC made with key " + KeyID(pub), Got: "another MAC", File: w.lastAckSeg, Offset: w.lastAckOff}
		}
		rep.AckChecked = true
	}
	return rep, nil
}

// Scan calls fn with each entry of the chain in dir, in order. It checks
// what is cheap (the stored form, seq continuity, links between the stored
// hashes, checkpoint placement) but not the hashes or signatures: run
// Verify for that. Entries after the last checkpoint are passed on; a torn
// last line is skipped. A break gives a *BreakError; an error from fn stops
// the scan and is returned as is.
//
// fn MUST NOT keep e after it returns: the Entry is reused. Its strings and
// slices are not, and may be kept.
func Scan(dir string, fn func(e *record.Entry) error) error {
	if fn == nil {
		return errors.New("chain: scan: nil fn")
	}
	return scan(dir, scanSink{fn}, false)
}

// ScanFrom is [Scan] from entry seq on: fn is called with entry seq and
// the entries after it. Only the segments from the one holding seq are
// read, so a chain's latest entries, or one entry, are found without
// reading it all; the entries of the segments before are not checked, nor
// the link to them: run [Verify] for that. A seq before the chain's first
// segment starts at its beginning; one past its last entry calls fn with
// nothing.
func ScanFrom(dir string, seq uint64, fn func(e *record.Entry) error) error {
	if fn == nil {
		return errors.New("chain: scan: nil fn")
	}
	segs, err := listSegments(dir)
	if err != nil {
		return err
	}
	k := 0
	for i, sg := range segs {
		if sg.first <= seq {
			k = i
		}
	}
	_, err = walk(segs[k:], walkConfig{sink: scanSink{func(e *record.Entry) error {
		if e.Seq < seq {
			return nil
		}
		return fn(e)
	}}, midChain: k > 0})
	return err
}

// SegmentStarts returns the seq of the first entry of each segment of the
// chain in dir, in order: where [ScanFrom] can start without reading an
// entry it does not pass on.
func SegmentStarts(dir string) ([]uint64, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, len(segs))
	for i, sg := range segs {
		out[i] = sg.first
	}
	return out, nil
}

// ScanMap is [Scan] with a step that runs in parallel. It calls work on
// each entry as soon as the entry is decoded, on several goroutines at once
// and in no particular order, with r pointing at a result for work to set,
// then fn with the entry and that result, in chain order, on the caller's
// goroutine, as Scan does. The results are reused: r holds what an earlier
// call of work set for another entry, and work must set all of it.
//
// work runs before the entry's place in the chain is checked, so it may
// also see entries that follow a break, which fn never sees: it MUST be
// safe for concurrent use, MUST NOT keep e or r, and SHOULD only compute
// its result. fn MUST NOT keep e or r either. Neither is called after
// ScanMap returns.
func ScanMap[R any](dir string, work func(e *record.Entry, r *R), fn func(e *record.Entry, r *R) error) error {
	return ScanMapWith(dir, nil, work, fn)
}

// ScanOptions configure ScanMapWith. The zero value is what ScanMap does.
type ScanOptions struct {
	// Light leaves zero, in the entries passed on, the fields that record
	// where and when a call was decided rather than what it was decided
	// on: Session, Time, ArgsHash, Envelope, PolicyHash and
	// ToolSchemaHash. Each is still checked to be in the stored form, as
	// every line is; they are only not decoded. What a scan checks does
	// not change.
	Light bool
}

// ScanMapWith is ScanMap with options; opts may be nil.
func ScanMapWith[R any](dir string, opts *ScanOptions, work func(e *record.Entry, r *R), fn func(e *record.Entry, r *R) error) error {
	if work == nil || fn == nil {
		return errors.New("chain: scan: nil function")
	}
	if opts == nil {
		opts = &ScanOptions{}
	}
	return scan(dir, &mapSink[R]{work: work, fn: fn}, opts.Light)
}

func scan(dir string, s sink, light bool) error {
	segs, err := listSegments(dir)
	if err != nil {
		return err
	}
	_, err = walk(segs, walkConfig{sink: s, light: light})
	return err
}

// sink receives the entries a scan decodes.
type sink interface {
	// prepare is called by a worker before it decodes the n lines of c.
	prepare(c *chunk, n int)
	// mapEntry is called by a worker on c.ents[i] once it is decoded.
	mapEntry(c *chunk, i int)
	// entry is called on the walk's goroutine with c.ents[i], in chain
	// order, once its place in the chain is checked.
	entry(c *chunk, i int) error
}

type scanSink struct{ fn func(*record.Entry) error }

func (scanSink) prepare(*chunk, int)           {}
func (scanSink) mapEntry(*chunk, int)          {}
func (s scanSink) entry(c *chunk, i int) error { return s.fn(&c.ents[i]) }

// mapSink keeps work's results for a chunk in the chunk (c.aux).
type mapSink[R any] struct {
	work func(*record.Entry, *R)
	fn   func(*record.Entry, *R) error
}

func (m *mapSink[R]) prepare(c *chunk, n int) {
	r, _ := c.aux.([]R)
	c.aux = grow(r, n)
}

func (m *mapSink[R]) mapEntry(c *chunk, i int) { m.work(&c.ents[i], &c.aux.([]R)[i]) }

func (m *mapSink[R]) entry(c *chunk, i int) error { return m.fn(&c.ents[i], &c.aux.([]R)[i]) }
