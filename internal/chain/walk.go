package chain

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"runtime"
	"slices"
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
	// midChain: the first segment walked need not start the chain; its
	// first entry's prev is taken as given (Open reads only the last
	// segment).
	midChain bool
	workers  int

	arenas []arena // one per worker, for Scan
}

// walkResult is the state of the chain where a walk stopped.
type walkResult struct {
	entries     uint64 // entries read and checked
	next        uint64 // seq the next entry must have
	prev        Digest // hash of the last entry read
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
}

type lineKind uint8

const (
	lineEntry lineKind = iota + 1
	lineCheckpoint
)

type lineResult struct {
	kind     lineKind
	err      error
	seq      uint64
	prev     Digest // entry: its prev
	hash     Digest // entry: the stored hash; checkpoint: the hash it signs
	computed Digest // entry: the hash recomputed, when walkConfig.hash
	ck       *checkpoint
	sigOK    bool
}

func walk(segs []segment, cfg walkConfig) (walkResult, error) {
	if cfg.workers <= 0 {
		cfg.workers = runtime.GOMAXPROCS(0)
	}
	cfg.arenas = make([]arena, cfg.workers)
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
	// strictly. That is done as each chunk is released (its buffer is
	// reused), for the entries after its last checkpoint; a later
	// checkpoint may still cover them, and only what is left at the end
	// counts.
	type pending struct {
		seg int
		off int64
		seq uint64
		err error
	}
	var unsigned []pending
	checkTail := !cfg.strict && cfg.sink == nil

	lastWasEntry := false
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
					if _, err := decodeEntry(c.data[c.starts[i]:c.ends[i]], nil); err != nil {
						kind, want, got = BreakMalformed, "an entry in the stored form", "entry: "+err.Error()
					}
				}
			}
			return w, &BreakError{Kind: kind, Seq: seq, Want: want, Got: got, File: s.name, Offset: off}
		}
		if c.segStart {
			w.segments++
			lastWasEntry = false
			if s.first != w.next {
				return brk(BreakSeq, w.next, -1, fmt.Sprint(w.next), fmt.Sprintf("segment named for seq %d", s.first))
			}
		}
		tailFrom := len(unsigned) // this chunk's entries in unsigned
		for i := range c.res {
			r := &c.res[i]
			if r.err != nil {
				return brk(BreakMalformed, w.next, i, "an entry or checkpoint line", r.err.Error())
			}
			switch r.kind {
			case lineEntry:
				if r.seq != w.next {
					return brk(BreakSeq, w.next, i, fmt.Sprint(w.next), fmt.Sprint(r.seq))
				}
				if prevKnown && r.prev != w.prev {
					return brk(BreakLink, r.seq, i, w.prev.String(), r.prev.String())
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
				w.next++
				w.entries++
				lastWasEntry = true
			case lineCheckpoint:
				if !lastWasEntry || r.seq != w.next-1 || r.hash != w.prev {
					want := "a checkpoint right after the entry it signs"
					if lastWasEntry {
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
				lastWasEntry = false
				unsigned, tailFrom = unsigned[:0], 0
				if last {
					w.lastCkEnd = c.base + int64(c.ends[i]) + 1
				}
			}
		}
		if checkTail {
			for k := tailFrom; k < len(unsigned); k++ {
				u := &unsigned[k]
				i := int(u.off - c.base)
				_, u.err = decodeEntry(c.data[i:c.ends[lineIndex(c, i)]], nil)
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
			if !last && lastWasEntry {
				return brk(BreakCheckpoint, w.next-1, -1, "a segment ending in a checkpoint (a Log starts a new segment only after one)", "unsigned entries at its end")
			}
		}
		p.release(c)
	}
	for _, u := range unsigned {
		if u.err != nil {
			return w, &BreakError{Kind: BreakMalformed, Seq: u.seq, Want: "an entry in the stored form", Got: "entry: " + u.err.Error(), File: segs[u.seg].name, Offset: u.off}
		}
	}
	return w, nil
}

var checkpointPrefix = []byte(`{"checkpoint":`)

func (cfg *walkConfig) parseLine(h *hasher, ar *arena, c *chunk, i int) {
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
	var (
		f   entryFacts
		err error
	)
	switch {
	case cfg.sink != nil:
		f, err = decodeEntryIn(line, &c.ents[i], ar)
	case cfg.strict:
		f, err = decodeEntry(line, nil)
	default:
		var ok bool
		if f, ok = entryFactsOf(line); !ok {
			_, err = decodeEntry(line, nil) // for its message
			if err == nil {
				err = errors.New("not an entry")
			}
		}
	}
	if err != nil {
		r.err = fmt.Errorf("entry: %w", err)
		return
	}
	r.kind, r.seq, r.prev, r.hash = lineEntry, f.seq, f.prev, f.hash
	if cfg.hash {
		r.computed = h.lineBody(f.body)
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
