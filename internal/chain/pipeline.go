package chain

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/aegis-mcp/aegis/internal/record"
)

// A pipeline reads segments for walk in three stages that overlap: one
// goroutine reads the files in blocks, cut at the last newline of each
// (the rest of a line goes to the next block); workers parse whole blocks
// (decoding is independent per line), one block each at a time; and the
// walk's goroutine takes the blocks back in file order. A block is a
// chunk, and there are a few more chunks than workers, so that the reader
// is a block ahead of the workers and the workers of the walk.

// blockSize is how much of a segment one chunk reads; lines cut at its end
// go to the next chunk. A block fits in a core's cache beside the decoder's
// tables. It is a variable for tests.
var blockSize = 256 << 10

// maxLine is the longest line a reader takes, newline excluded; a longer
// one is a malformed line, found without reading it all. A Log refuses an
// entry whose line would be longer (Append). A variable for tests.
var maxLine = 64 << 20

// chunk is one block of a segment on its way through the pipeline. Between
// the reader's send and ready, it belongs to one worker; after ready, to
// the walk.
type chunk struct {
	seg      int
	buf      []byte // owned, reused
	data     []byte // complete lines of the segment (and, at its end, a torn one)
	base     int64  // offset of data in the segment file
	lines    int    // bytes of data in complete lines
	starts   []int
	ends     []int // exclusive, without the newline
	segStart bool
	segEnd   bool
	partial  int // segEnd: bytes after the last newline
	long     int // a line longer than maxLine starts at base: the bytes read of it
	res      []lineResult
	cks      []checkpoint
	ents     []record.Entry
	aux      any // a sink's per-chunk state
	err      error
	ready    chan struct{} // parsed (capacity 1)
}

type pipeline struct {
	segs    []segment
	cfg     *walkConfig
	free    chan *chunk
	work    chan *chunk // to the workers
	ordered chan *chunk // to the walk, in file order
	quit    chan struct{}
	stopped atomic.Bool
	wg      sync.WaitGroup
}

// startPipeline starts reading and parsing segs.
func startPipeline(segs []segment, cfg *walkConfig) *pipeline {
	n := 2*cfg.workers + 2
	p := &pipeline{
		segs: segs, cfg: cfg,
		// Every channel holds all the chunks, so that only the reader's
		// wait for a free chunk blocks.
		free:    make(chan *chunk, n),
		work:    make(chan *chunk, n),
		ordered: make(chan *chunk, n),
		quit:    make(chan struct{}),
	}
	for range n {
		p.free <- &chunk{ready: make(chan struct{}, 1)}
	}
	p.wg.Go(p.read)
	for k := range cfg.workers {
		p.wg.Go(func() {
			h := record.NewHasher()
			for c := range p.work {
				if !p.stopped.Load() {
					cfg.parse(h, &cfg.arenas[k], c, &p.stopped)
				}
				c.ready <- struct{}{}
			}
		})
	}
	return p
}

// stop ends the pipeline and waits for its goroutines: no sink is called
// after it returns.
func (p *pipeline) stop() {
	p.stopped.Store(true)
	close(p.quit)
	p.wg.Wait()
}

// release gives a chunk the walk is done with back to the reader.
func (p *pipeline) release(c *chunk) { p.free <- c }

// read reads the segments into chunks and sends them, to a worker and to
// the walk. It stops early when the pipeline is stopped.
func (p *pipeline) read() {
	defer close(p.ordered)
	defer close(p.work)
	get := func() *chunk {
		select {
		case c := <-p.free:
			return c
		case <-p.quit:
			return nil
		}
	}
	fail := func(err error) {
		if c := get(); c != nil {
			*c = chunk{ready: c.ready, buf: c.buf, aux: c.aux, err: err}
			c.ready <- struct{}{}
			p.ordered <- c
		}
	}
	var carry []byte // the start of a line cut by the end of a block
	for si := range p.segs {
		f, err := os.Open(p.segs[si].path)
		if err != nil {
			fail(fmt.Errorf("chain: reading segment: %w", err))
			return
		}
		base := p.segs[si].from
		if base > 0 {
			if _, err := f.Seek(base, io.SeekStart); err != nil {
				f.Close()
				fail(fmt.Errorf("chain: reading segment: %w", err))
				return
			}
		}
		carry = carry[:0]
		first := true
		for {
			c := get()
			if c == nil {
				f.Close()
				return
			}
			// Read at least as much as is carried, so that the block
			// doubles while a line does not fit: a long line is copied a
			// few times over, not once per block.
			if size := len(carry) + max(blockSize, len(carry)); cap(c.buf) < size {
				c.buf = make([]byte, size)
			}
			buf := c.buf[:cap(c.buf)]
			n := copy(buf, carry)
			m, err := io.ReadFull(f, buf[n:])
			eof := err == io.EOF || err == io.ErrUnexpectedEOF
			if err != nil && !eof {
				f.Close()
				p.free <- c
				fail(fmt.Errorf("chain: reading segment: %w", err))
				return
			}
			data := buf[:n+m]
			k := bytes.LastIndexByte(data, '\n') + 1 // end of the last whole line
			if !eof && k == 0 {
				if len(data) > maxLine {
					// No line of a chain is this long: the walk reports
					// it as malformed where it starts, and stops here.
					*c = chunk{ready: c.ready, seg: si, buf: c.buf, data: buf[:0], base: base, segStart: first, long: len(data),
						starts: c.starts, ends: c.ends, res: c.res, cks: c.cks, ents: c.ents, aux: c.aux}
					f.Close()
					p.work <- c
					p.ordered <- c
					return
				}
				// A line longer than the block: read on with a bigger one.
				carry = append(carry[:0], data...)
				p.free <- c
				continue
			}
			*c = chunk{ready: c.ready, seg: si, buf: c.buf, data: data, base: base, lines: k, segStart: first,
				starts: c.starts, ends: c.ends, res: c.res, cks: c.cks, ents: c.ents, aux: c.aux}
			first = false
			if eof {
				c.segEnd, c.partial = true, len(data)-k
			} else {
				carry = append(carry[:0], data[k:]...)
			}
			base += int64(k)
			p.work <- c
			p.ordered <- c
			if c.segEnd {
				break
			}
		}
		f.Close()
	}
}

// parse splits c into lines and parses them, on one worker's goroutine.
func (cfg *walkConfig) parse(h *record.Hasher, ar *record.Arena, c *chunk, stopped *atomic.Bool) {
	c.starts, c.ends = c.starts[:0], c.ends[:0]
	data := c.data[:c.lines]
	for pos := 0; pos < len(data); {
		nl := bytes.IndexByte(data[pos:], '\n')
		c.starts = append(c.starts, pos)
		c.ends = append(c.ends, pos+nl)
		pos += nl + 1
	}
	n := len(c.starts)
	c.res = grow(c.res, n)
	c.cks = grow(c.cks, n)
	if cfg.sink != nil {
		c.ents = grow(c.ents, n)
		cfg.sink.prepare(c, n)
	}
	for i := range n {
		if i&63 == 63 && stopped.Load() {
			return
		}
		cfg.parseLine(h, ar, c, i)
	}
}
