package chain

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/aegis-mcp/aegis/internal/record"
)

// walk is the one reader of segment files, shared by Verify, Scan and
// Open's recovery. A pipeline (pipeline.go) reads the segments and parses
// their lines on several cores (decoding is independent per line); walk
// then checks the order (sequence, links, checkpoint placement) block by
// block, which is cheap, and hands Scan's entries on while the next blocks
// are being parsed.

// walkConfig says what a walk checks.
type walkConfig struct {
	pub     ed25519.PublicKey
	kid     [8]byte
	hash    bool // recompute every entry hash
	allSigs bool // verify every checkpoint signature
	strict  bool // decode every entry strictly, even when only hashing
	sink    sink // decode entries fully and pass them on
	light   bool // with sink: leave zero the fields of ScanOptions.Light
	// midChain: the first segment walked need not start the chain; its
	// first entry's prev is taken as given (Open reads only the last
	// segment).
	midChain bool
	workers  int

	arenas []record.Arena // one per worker, for Scan
}

// walkResult is the state of the chain where a walk stopped.
type walkResult struct {
	entries     uint64        // entries read and checked
	next        uint64        // seq the next entry must have
	prev        record.Digest // hash of the last entry read
	checkpoints uint64
	lastCk      checkpoint // the last checkpoint read, if haveCk
	haveCk      bool
	bytes       int64
	torn        int64 // bytes of an unterminated last line of the last segment
	segments    int
	lastCkEnd   int64  // offset in the last segment just past its last checkpoint line; 0 if none
	lastCkFile  string // where the last checkpoint is
	lastCkOff   int64
	lastSize    int64

	// The last ack line after the last checkpoint, if haveAck: the end of
	// a batch acknowledged before it was signed (ack.go).
	lastAck    ack
	haveAck    bool
	lastAckEnd int64 // offset in the last segment just past it
	lastAckOff int64
	lastAckSeg string
}

type lineKind uint8

const (
	lineEntry lineKind = iota + 1
	lineCheckpoint
	lineAck
)

type lineResult struct {
	kind     lineKind
	err      error
	seq      uint64
	prev     record.Digest // entry: its prev
	hash     record.Digest // entry: the stored hash; checkpoint: the hash it signs
	computed record.Digest // entry: the hash recomputed, when walkConfig.hash
	// A light read (see entryFactsOf) decodes neither prev nor the stored
	// hash: prevText is prev's digits, and hash is computed when the stored
	// digits are its hex, hashHex.
	prevText []byte
	hashHex  [64]byte
	ck       *checkpoint
	sigOK    bool
	mac      [32]byte // ack: its MAC, which only the writer can check
}

func walk(segs []segment, cfg walkConfig) (walkResult, error) {
	if cfg.workers <= 0 {
		cfg.workers = runtime.GOMAXPROCS(0)
	}
	if !cfg.hash {
		// The light read leaves digests as text for the hash check to
		// compare; without hashing, decode every line.
		cfg.strict = true
	}
	cfg.arenas = make([]record.Arena, cfg.workers)
	w := walkResult{next: 1}
	prevKnown := true
	if len(segs) == 0 {
		return w, nil
	}
	if cfg.midChain {
		w.next = segs[0].first
		prevKnown = false
	}

	p := startPipeline(segs, &cfg)
	defer p.stop()

	// The entries after the last checkpoint, which no signature covers: a
	// light read does not vouch for their form, so they are decoded
	// strictly, once the walk is over; a later checkpoint may still cover
	// them. When a chunk is released (its buffer is reused), the lines of
	// the entries after its last checkpoint are copied to tail, or, past
	// maxTail bytes, decoded there and then.
	type pending struct {
		seg  int
		off  int64
		seq  uint64
		line []byte // in tail; nil once decoded
		err  error
	}
	var unsigned []pending
	var tail []byte
	checkTail := !cfg.strict && cfg.sink == nil

	// prevHex is w.prev in hex, for the light read's links.
	var prevHex [64]byte
	hex.Encode(prevHex[:], w.prev[:])
	// The kind of the line before, in this segment (0 at its start): a
	// checkpoint follows an entry or an ack, an ack follows an entry.
	var before lineKind
	for c := range p.ordered {
		<-c.ready
		if c.err != nil {
			return w, c.err
		}
		s := &segs[c.seg]
		last := c.seg == len(segs)-1
		brk := func(kind BreakKind, seq uint64, i int, want, got string) (walkResult, error) {
			off := c.base + int64(len(c.data))
			if i >= 0 {
				off = c.base + int64(c.starts[i])
				// An entry read without the strict decoder may be a line
				// no writer makes; say so rather than what it broke.
				if c.res[i].kind == lineEntry && kind != BreakMalformed {
					if _, err := record.Decode(c.data[c.starts[i]:c.ends[i]], nil); err != nil {
						kind, want, got = BreakMalformed, "an entry in the stored form", "entry: "+err.Error()
					}
				}
			}
			return w, &BreakError{Kind: kind, Seq: seq, Want: want, Got: got, File: s.name, Offset: off}
		}
		if c.segStart {
			w.segments++
			before = 0
			if s.first != w.next {
				return brk(BreakSeq, w.next, -1, fmt.Sprint(w.next), fmt.Sprintf("segment named for seq %d", s.first))
			}
		}
		if c.long > 0 {
			return brk(BreakMalformed, w.next, -1, fmt.Sprintf("a line of at most %d bytes", maxLine), fmt.Sprintf("more than %d bytes without a newline", c.long))
		}
		tailFrom := len(unsigned) // this chunk's entries in unsigned
		for i := range c.res {
			r := &c.res[i]
			if r.err != nil {
				return brk(BreakMalformed, w.next, i, "an entry, checkpoint or ack line", r.err.Error())
			}
			switch r.kind {
			case lineEntry:
				if r.seq != w.next {
					return brk(BreakSeq, w.next, i, fmt.Sprint(w.next), fmt.Sprint(r.seq))
				}
				if prevKnown && (r.prevText == nil && r.prev != w.prev || r.prevText != nil && string(r.prevText) != string(prevHex[:])) {
					got := r.prev.String()
					if r.prevText != nil {
						got = string(r.prevText)
					}
					return brk(BreakLink, r.seq, i, w.prev.String(), got)
				}
				if cfg.hash && r.computed != r.hash {
					return brk(BreakHash, r.seq, i, r.computed.String(), r.hash.String())
				}
				if cfg.sink != nil {
					if err := cfg.sink.entry(c, i); err != nil {
						return w, err
					}
				}
				if checkTail {
					unsigned = append(unsigned, pending{seg: c.seg, off: c.base + int64(c.starts[i]), seq: r.seq})
				}
				w.prev, prevKnown = r.hash, true
				if r.prevText != nil {
					prevHex = r.hashHex
				}
				w.next++
				w.entries++
				before = lineEntry
			case lineAck:
				if before != lineEntry || r.seq != w.next-1 || r.hash != w.prev {
					want := "an ack right after the entry it marks"
					if before == lineEntry {
						want = fmt.Sprintf("ack %d of hash %v", w.next-1, w.prev)
					}
					return brk(BreakCheckpoint, r.seq, i, want, fmt.Sprintf("ack %d of hash %v", r.seq, r.hash))
				}
				w.lastAck, w.haveAck = ack{seq: r.seq, hash: r.hash, mac: r.mac}, true
				w.lastAckSeg, w.lastAckOff = s.name, c.base+int64(c.starts[i])
				if last {
					w.lastAckEnd = c.base + int64(c.ends[i]) + 1
				}
				before = lineAck
			case lineCheckpoint:
				if before != lineEntry && before != lineAck || r.seq != w.next-1 || r.hash != w.prev {
					want := "a checkpoint right after the entry it signs, or its ack"
					if before == lineEntry || before == lineAck {
						want = fmt.Sprintf("checkpoint %d of hash %v", w.next-1, w.prev)
					}
					return brk(BreakCheckpoint, r.seq, i, want, fmt.Sprintf("checkpoint %d of hash %v", r.seq, r.hash))
				}
				if cfg.pub != nil && r.ck.key != cfg.kid {
					return brk(BreakSignature, r.seq, i, "key "+KeyID(cfg.pub), fmt.Sprintf("key %x", r.ck.key))
				}
				if cfg.allSigs && !r.sigOK {
					return brk(BreakSignature, r.seq, i, "a valid signature by key "+KeyID(cfg.pub), "an invalid signature")
				}
				w.lastCk, w.haveCk = *r.ck, true
				w.lastCkFile, w.lastCkOff = s.name, c.base+int64(c.starts[i])
				w.checkpoints++
				before = lineCheckpoint
				unsigned, tailFrom, tail = unsigned[:0], 0, tail[:0]
				w.haveAck, w.lastAckEnd = false, 0
				if last {
					w.lastCkEnd = c.base + int64(c.ends[i]) + 1
				}
			}
		}
		if checkTail {
			for k := tailFrom; k < len(unsigned); k++ {
				u := &unsigned[k]
				i := int(u.off - c.base)
				line := c.data[i:c.ends[lineIndex(c, i)]]
				if len(tail)+len(line) > maxTail {
					_, u.err = record.Decode(line, nil)
					continue
				}
				tail = append(tail, line...)
				u.line = tail[len(tail)-len(line):]
			}
		}
		if c.segEnd {
			size := c.base + int64(len(c.data))
			w.bytes += size
			if last {
				w.lastSize = size
			}
			if c.partial > 0 {
				if !last {
					return brk(BreakMalformed, w.next, -1, "a segment ending in a newline", fmt.Sprintf("%d bytes of an unterminated line", c.partial))
				}
				w.torn = int64(c.partial)
			}
			if !last && before != lineCheckpoint && before != 0 {
				return brk(BreakCheckpoint, w.next-1, -1, "a segment ending in a checkpoint (a Log starts a new segment only after one)", "unsigned entries at its end")
			}
		}
		p.release(c)
	}
	for _, u := range unsigned {
		if u.line != nil {
			_, u.err = record.Decode(u.line, nil)
		}
		if u.err != nil {
			return w, &BreakError{Kind: BreakMalformed, Seq: u.seq, Want: "an entry in the stored form", Got: "entry: " + u.err.Error(), File: segs[u.seg].name, Offset: u.off}
		}
	}
	return w, nil
}

// maxTail bounds the bytes of unsigned entry lines a walk keeps to decode
// at its end: the largest batches a Log writes fit, and a long unsigned tail
// (which no Log writes) is decoded as it is read. It is a variable for
// tests.
var maxTail = 16 << 20

var checkpointPrefix = []byte(`{"checkpoint":`)

func (cfg *walkConfig) parseLine(h *record.Hasher, ar *record.Arena, c *chunk, i int) {
	line := c.data[c.starts[i]:c.ends[i]]
	r := &c.res[i]
	*r = lineResult{}
	if bytes.HasPrefix(line, checkpointPrefix) {
		ck := &c.cks[i]
		var err error
		*ck, err = decodeCheckpoint(line)
		if err != nil {
			r.err = fmt.Errorf("checkpoint: %w", err)
			return
		}
		r.kind, r.seq, r.hash, r.ck = lineCheckpoint, ck.seq, ck.hash, ck
		if cfg.allSigs {
			r.sigOK = ck.verify(cfg.pub, cfg.kid)
		}
		return
	}
	if bytes.HasPrefix(line, ackPrefix) {
		k, err := decodeAck(line)
		if err != nil {
			r.err = fmt.Errorf("ack: %w", err)
			return
		}
		r.kind, r.seq, r.hash, r.mac = lineAck, k.seq, k.hash, k.mac
		return
	}
	var (
		f   record.Facts
		err error
	)
	switch {
	case cfg.sink != nil:
		f, err = record.DecodeIn(line, &c.ents[i], ar, cfg.light)
	case cfg.strict:
		f, err = record.Decode(line, nil)
	default:
		var ok bool
		if f, ok = record.Skim(line); !ok {
			_, err = record.Decode(line, nil) // for its message
			if err == nil {
				err = errors.New("not an entry")
			}
		}
	}
	if err != nil {
		r.err = fmt.Errorf("entry: %w", err)
		return
	}
	r.kind, r.seq, r.prev, r.hash = lineEntry, f.Seq, f.Prev, f.Hash
	if cfg.hash {
		r.computed = h.Body(f.Body)
	}
	if f.PrevText != nil {
		// Compare in hex: encoding the computed hash is cheaper than
		// decoding two digests, and equal digits are lower-case hex.
		r.prevText = f.PrevText
		hex.Encode(r.hashHex[:], r.computed[:])
		if string(r.hashHex[:]) == string(f.HashText) {
			r.hash = r.computed
		} else {
			r.hash, _ = record.ParseDigest(f.HashText) // for the message
		}
	}
	if cfg.sink != nil {
		cfg.sink.mapEntry(c, i)
	}
}

// lineIndex returns the index of the line of c that starts at start.
func lineIndex(c *chunk, start int) int {
	i, _ := slices.BinarySearch(c.starts, start)
	return i
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
