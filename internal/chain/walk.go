package chain

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
)

// walk is the one reader of segment files, shared by Verify, Scan and
// Open's recovery. A producer goroutine reads each segment, splits it into
// chunks of lines and parses every chunk on several cores (decoding is
// independent per line); the caller's goroutine then checks the order
// (sequence, links, checkpoint placement) chunk by chunk, which is cheap,
// and calls fn for Scan while the next chunk is being parsed.

// walkConfig says what a walk checks.
type walkConfig struct {
	pub     ed25519.PublicKey
	kid     [8]byte
	hash    bool               // recompute every entry hash
	allSigs bool               // verify every checkpoint signature
	strict  bool               // decode every entry strictly, even when only hashing
	fn      func(*Entry) error // decode entries fully and pass them on
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

// blockSize is how much of a segment one chunk reads; lines cut at its end
// go to the next chunk.
var blockSize = 4 << 20 // a variable for tests

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

type chunk struct {
	seg      int
	buf      []byte // owned, reused
	data     []byte // complete lines of the segment (and, at its end, a torn one)
	base     int64  // offset of data in the segment file
	starts   []int
	ends     []int // exclusive, without the newline
	segStart bool
	segEnd   bool
	partial  int // segEnd: bytes after the last newline
	res      []lineResult
	cks      []checkpoint
	ents     []Entry
	err      error
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

	stop := make(chan struct{})
	out := make(chan *chunk, 1)
	free := make(chan *chunk, 3)
	for range 3 {
		free <- new(chunk)
	}
	go produce(segs, &cfg, out, free, stop)
	defer func() {
		close(stop)
		for range out {
		}
	}()

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
	checkTail := !cfg.strict && cfg.fn == nil

	lastWasEntry := false
	for c := range out {
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
				if cfg.fn != nil {
					if err := cfg.fn(&c.ents[i]); err != nil {
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
				p := &unsigned[k]
				i := int(p.off - c.base)
				_, p.err = decodeEntry(c.data[i:c.ends[lineIndex(c, i)]], nil)
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
		free <- c
	}
	for _, p := range unsigned {
		if p.err != nil {
			return w, &BreakError{Kind: BreakMalformed, Seq: p.seq, Want: "an entry in the stored form", Got: "entry: " + p.err.Error(), File: segs[p.seg].name, Offset: p.off}
		}
	}
	return w, nil
}

// produce reads and parses the segments, sending chunks in order. It stops
// early when stop is closed.
func produce(segs []segment, cfg *walkConfig, out chan<- *chunk, free chan *chunk, stop <-chan struct{}) {
	defer close(out)
	send := func(c *chunk) bool {
		select {
		case out <- c:
			return true
		case <-stop:
			return false
		}
	}
	get := func() *chunk {
		select {
		case c := <-free:
			return c
		case <-stop:
			return nil
		}
	}
	fail := func(err error) {
		if c := get(); c != nil {
			c.err = err
			send(c)
		}
	}
	var carry []byte // the start of a line cut by the end of a block
	for si := range segs {
		f, err := os.Open(segs[si].path)
		if err != nil {
			fail(fmt.Errorf("chain: reading segment: %w", err))
			return
		}
		var base int64
		carry = carry[:0]
		first := true
		for {
			c := get()
			if c == nil {
				f.Close()
				return
			}
			if cap(c.buf) < len(carry)+blockSize {
				c.buf = make([]byte, len(carry)+blockSize)
			}
			buf := c.buf[:cap(c.buf)]
			n := copy(buf, carry)
			m, err := io.ReadFull(f, buf[n:])
			eof := err == io.EOF || err == io.ErrUnexpectedEOF
			if err != nil && !eof {
				f.Close()
				free <- c
				fail(fmt.Errorf("chain: reading segment: %w", err))
				return
			}
			data := buf[:n+m]
			k := bytes.LastIndexByte(data, '\n') + 1 // end of the last whole line
			if !eof && k == 0 {
				// A line longer than the block: read on with a bigger one.
				carry = append(carry[:0], data...)
				free <- c
				continue
			}
			*c = chunk{seg: si, buf: c.buf, data: data, base: base, segStart: first,
				starts: c.starts[:0], ends: c.ends[:0], res: c.res, cks: c.cks, ents: c.ents}
			first = false
			if eof {
				c.segEnd, c.partial = true, len(data)-k
			} else {
				carry = append(carry[:0], data[k:]...)
			}
			base += int64(k)
			for pos := 0; pos < k; {
				nl := bytes.IndexByte(data[pos:k], '\n')
				c.starts = append(c.starts, pos)
				c.ends = append(c.ends, pos+nl)
				pos += nl + 1
			}
			cfg.parse(c)
			if !send(c) {
				f.Close()
				return
			}
			if c.segEnd {
				break
			}
		}
		f.Close()
	}
}

// parse parses the lines of c, on up to cfg.workers goroutines.
func (cfg *walkConfig) parse(c *chunk) {
	n := len(c.starts)
	c.res = grow(c.res, n)
	c.cks = grow(c.cks, n)
	if cfg.fn != nil {
		c.ents = grow(c.ents, n)
	}
	workers := cfg.workers
	if n < 64 {
		workers = 1
	}
	var wg sync.WaitGroup
	for k := range workers {
		lo, hi := k*n/workers, (k+1)*n/workers
		ar := &cfg.arenas[k]
		work := func() {
			h := newHasher()
			for i := lo; i < hi; i++ {
				cfg.parseLine(h, ar, c, i)
			}
		}
		if k == workers-1 {
			work()
		} else {
			wg.Go(work)
		}
	}
	wg.Wait()
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
	case cfg.fn != nil:
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
