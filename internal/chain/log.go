package chain

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by Append on a Log that has been closed.
var ErrClosed = errors.New("chain: log closed")

// Options configure Open. The zero value is the default.
type Options struct {
	// SegmentSize is the size in bytes after which the next batch starts a
	// new segment file. Zero means 64 MiB.
	SegmentSize int64
	// MaxBatch caps the entries of one group commit. Zero means 4096.
	MaxBatch int
	// Logger receives recovery events. Nil means slog.Default().
	Logger *slog.Logger

	// wrap lets tests inject write and fsync failures.
	wrap func(segmentFile) segmentFile
}

// segmentFile is what the writer needs of the segment it appends to.
type segmentFile interface {
	Write([]byte) (int, error)
	Sync() error // fdatasync
	Close() error
}

// Log appends entries to the chain in a directory. It is safe for
// concurrent use; only one Log (in any process) may hold a directory.
type Log struct {
	dir     string
	segSize int64
	batch   int
	logger  *slog.Logger
	wrap    func(segmentFile) segmentFile
	priv    ed25519.PrivateKey
	pub     ed25519.PublicKey
	lock    *os.File

	mu     sync.RWMutex // held for reading while sending to queue
	closed bool
	queue  chan *request
	quit   chan struct{}
	done   chan struct{}
	failed atomic.Pointer[error]

	// Owned by the writer goroutine.
	f        segmentFile
	size     int64
	next     uint64
	prev     Digest
	buf      []byte
	res      []result
	h        *hasher
	closeErr error

	entries   atomic.Uint64
	batches   atomic.Uint64
	largest   atomic.Int64
	syncNanos atomic.Int64
}

type request struct {
	buf  []byte // the canonical encoding, less prev and seq
	t    template
	done chan result
}

type result struct {
	seq        uint64
	prev, hash Digest
	err        error
}

var requests = sync.Pool{New: func() any { return &request{done: make(chan result, 1)} }}

// Open opens the chain in dir for appending, creating the directory, the
// signing key (chain.key, mode 0600) and its public half (chain.pub) if
// they do not exist.
//
// Open recovers from a crash: it verifies the last segment and cuts off
// what follows its last checkpoint (a torn line, and entries whose batch
// never completed: none of them was acknowledged). If the last segment is
// broken in the middle, Open returns the *BreakError and does not append to
// a chain it cannot extend honestly. opts may be nil.
func Open(dir string, opts *Options) (*Log, error) {
	if opts == nil {
		opts = &Options{}
	}
	l := &Log{
		dir:     dir,
		segSize: opts.SegmentSize,
		batch:   opts.MaxBatch,
		logger:  opts.Logger,
		wrap:    opts.wrap,
		h:       newHasher(),
	}
	if l.segSize <= 0 {
		l.segSize = 64 << 20
	}
	if l.batch <= 0 {
		l.batch = 4096
	}
	if l.logger == nil {
		l.logger = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("chain: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	l.lock = lock
	if err := l.open(); err != nil {
		unlockDir(lock)
		return nil, err
	}
	l.queue = make(chan *request, 4*l.batch)
	l.quit = make(chan struct{})
	l.done = make(chan struct{})
	go l.run()
	return l, nil
}

func (l *Log) open() error {
	segs, err := listSegments(l.dir)
	if err != nil {
		return err
	}
	l.priv, err = loadOrCreateKey(l.dir, len(segs) > 0)
	if err != nil {
		return err
	}
	l.pub = l.priv.Public().(ed25519.PublicKey)
	if len(segs) == 0 {
		l.next = 1
		return l.createSegment()
	}
	last, err := l.recoverTail(segs)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(last.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("chain: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("chain: %w", err)
	}
	l.size = fi.Size()
	l.setFile(f)
	return nil
}

func (l *Log) setFile(f *os.File) {
	var sf segmentFile = dataSyncFile{f}
	if l.wrap != nil {
		sf = l.wrap(sf)
	}
	l.f = sf
}

// createSegment starts the segment whose first entry is l.next.
func (l *Log) createSegment() error {
	f, err := os.OpenFile(filepath.Join(l.dir, segmentName(l.next)), os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("chain: starting segment: %w", err)
	}
	if err := syncDir(l.dir); err != nil {
		f.Close()
		return fmt.Errorf("chain: starting segment: %w", err)
	}
	l.setFile(f)
	l.size = 0
	return nil
}

// PublicKey returns the key that verifies this chain's checkpoints.
func (l *Log) PublicKey() ed25519.PublicKey { return l.pub }

// Dir returns the directory of the chain.
func (l *Log) Dir() string { return l.dir }

// Append records e and returns its seq and hash once it is durable: written,
// fsynced, and covered by a signed checkpoint in the same fsync. The caller
// MUST NOT act on the decision (forward the call) before Append returns nil.
//
// Concurrent Appends share one write and one fsync (group commit). Append
// fills in e's V, Seq, Prev and Hash, and its Time when zero (the time of
// the call). It fails without recording anything if e is not recordable
// (see Entry), and after a write or fsync failure every Append fails until
// the Log is reopened: the chain fails closed.
//
// If ctx ends first, Append returns ctx.Err() and the entry may or may not
// be recorded; the decision MUST then be treated as not recorded.
func (l *Log) Append(ctx context.Context, e *Entry) (seq uint64, hash [32]byte, err error) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if err := e.check(); err != nil {
		return 0, hash, fmt.Errorf("chain: append: %w", err)
	}
	if p := l.failed.Load(); p != nil {
		return 0, hash, *p
	}
	r := requests.Get().(*request)
	r.buf = appendCanonical(r.buf[:0], e, &r.t)

	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		requests.Put(r)
		return 0, hash, ErrClosed
	}
	select {
	case l.queue <- r:
	case <-ctx.Done():
		l.mu.RUnlock()
		requests.Put(r)
		return 0, hash, ctx.Err()
	}
	l.mu.RUnlock()

	select {
	case res := <-r.done:
		requests.Put(r)
		if res.err != nil {
			return 0, hash, res.err
		}
		e.V, e.Seq, e.Prev, e.Hash = Version, res.seq, res.prev, res.hash
		return res.seq, res.hash, nil
	case <-ctx.Done():
		// The writer still owns r and will answer into its buffered
		// channel; r is left to the garbage collector.
		return 0, hash, ctx.Err()
	}
}

// Stats are counters of a Log since Open.
type Stats struct {
	Entries  uint64        // entries made durable
	Batches  uint64        // group commits, each one write and one fsync
	Largest  int           // entries in the largest batch
	SyncTime time.Duration // total time spent in fsync
}

// Stats returns the Log's counters.
func (l *Log) Stats() Stats {
	return Stats{
		Entries:  l.entries.Load(),
		Batches:  l.batches.Load(),
		Largest:  int(l.largest.Load()),
		SyncTime: time.Duration(l.syncNanos.Load()),
	}
}

// Close waits for the Appends already queued, then closes the segment and
// releases the directory. Appends after Close fail with ErrClosed. Close
// returns the error that failed the Log, if one did.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	close(l.quit)
	<-l.done
	unlockDir(l.lock)
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return l.closeErr
}

// run is the writer: it drains the queue in batches, each one write and one
// fsync, until Close.
func (l *Log) run() {
	defer close(l.done)
	batch := make([]*request, 0, l.batch)
	last := 0 // size of the last batch
	for {
		var r *request
		select {
		case r = <-l.queue:
		case <-l.quit:
			// Every Append that got past l.closed has sent already.
			for {
				batch = batch[:0]
				for len(batch) < l.batch {
					select {
					case r := <-l.queue:
						batch = append(batch, r)
						continue
					default:
					}
					break
				}
				if len(batch) == 0 {
					l.closeErr = l.f.Close()
					return
				}
				l.commit(batch)
			}
		}
		batch = append(batch[:0], r)
		batch = l.gather(batch, last)
		last = len(batch)
		l.commit(batch)
	}
}

// gather fills batch from the queue. The appenders the last commit woke
// are typically about to append again; without waiting for them, batches
// alternate between those and the rest, and average half the appenders. So
// while the batch is smaller than the last one and the queue still grows,
// gather yields to let them in: a few scheduler turns, no timer, so an
// Append alone is not delayed.
func (l *Log) gather(batch []*request, last int) []*request {
	for turns := 0; ; turns++ {
		for len(batch) < l.batch {
			select {
			case r := <-l.queue:
				batch = append(batch, r)
				continue
			default:
			}
			break
		}
		if len(batch) >= last || len(batch) >= l.batch || turns == 4 {
			return batch
		}
		n := len(batch)
		runtime.Gosched()
		if len(l.queue) == 0 && n == len(batch) && turns > 0 {
			return batch
		}
	}
}

// commit makes one batch durable and answers its requests.
func (l *Log) commit(batch []*request) {
	if p := l.failed.Load(); p != nil {
		for _, r := range batch {
			r.done <- result{err: *p}
		}
		return
	}
	if l.next+uint64(len(batch))-1 > MaxSeq {
		l.fail(batch, fmt.Errorf("seq would pass %d", uint64(MaxSeq)))
		return
	}
	if l.size >= l.segSize {
		if err := l.f.Close(); err != nil {
			l.fail(batch, err)
			return
		}
		if err := l.createSegment(); err != nil {
			l.fail(batch, err)
			return
		}
	}
	out, res, prev, seq := appendBatch(l.buf[:0], l.res[:0], l.h, l.priv, l.prev, l.next, batch)
	l.buf, l.res = out, res

	if _, err := l.f.Write(out); err != nil {
		l.fail(batch, fmt.Errorf("writing: %w", err))
		return
	}
	t0 := time.Now()
	if err := l.f.Sync(); err != nil {
		l.fail(batch, fmt.Errorf("fsync: %w", err))
		return
	}
	l.syncNanos.Add(int64(time.Since(t0)))
	l.size += int64(len(out))
	l.prev, l.next = prev, seq
	l.entries.Add(uint64(len(batch)))
	l.batches.Add(1)
	if n := int64(len(batch)); n > l.largest.Load() {
		l.largest.Store(n)
	}
	for i, r := range batch {
		r.done <- res[i]
	}
	if cap(l.buf) > 4<<20 {
		l.buf = nil // a burst of huge entries should not pin memory
	}
}

// appendBatch appends the lines of a batch to out: its entries, numbered
// from seq and linked from prev, then the checkpoint signing the last one.
// It returns the results and the prev and seq that follow the batch.
func appendBatch(out []byte, res []result, h *hasher, priv ed25519.PrivateKey, prev Digest, seq uint64, batch []*request) ([]byte, []result, Digest, uint64) {
	for _, r := range batch {
		start := len(out)
		b, t := r.buf, r.t
		out = append(out, b[:t.prevAt]...)
		out = hex.AppendEncode(out, prev[:])
		out = append(out, b[t.prevAt:t.seqAt]...)
		out = strconv.AppendUint(out, seq, 10)
		out = append(out, b[t.seqAt:len(b)-1]...)
		d := h.lineBody(out[start:])
		out = appendLineSuffix(out, d)
		res = append(res, result{seq: seq, prev: prev, hash: d})
		prev = d
		seq++
	}
	ck := signCheckpoint(priv, seq-1, prev)
	return appendCheckpoint(out, &ck), res, prev, seq
}

// fail puts the Log in the failed state and answers batch with err. After a
// failed write or fsync the file's state is unknown (a failed fsync may
// even have dropped dirty pages), so nothing more is appended to it; Open
// recovers from what reached the disk.
func (l *Log) fail(batch []*request, err error) {
	err = fmt.Errorf("chain: log failed, reopen to recover: %w", err)
	l.failed.CompareAndSwap(nil, &err)
	l.logger.Error("chain: log failed", slog.String("dir", l.dir), slog.Any("err", err))
	p := l.failed.Load()
	for _, r := range batch {
		r.done <- result{err: *p}
	}
}

// dataSyncFile is a segment file whose Sync is fdatasync where there is one.
type dataSyncFile struct{ *os.File }

func (f dataSyncFile) Sync() error { return fdatasync(f.File) }
