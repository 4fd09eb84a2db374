package chain

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegis-mcp/aegis/internal/record"
)

// ErrClosed is returned by Append on a Log that has been closed.
var ErrClosed = errors.New("chain: log closed")

// ErrInUse is what Open's error is when another writer holds the chain.
var ErrInUse = errors.New("in use by another writer")

// Options configure Open. The zero value is the default.
type Options struct {
	// SegmentSize is the size in bytes after which the next batch starts a
	// new segment file. Zero means 64 MiB.
	SegmentSize int64
	// MaxBatch caps the entries of one group commit. Zero means 4096.
	MaxBatch int
	// Logger receives recovery events. Nil means slog.Default().
	Logger *slog.Logger
	// KeyDir is the directory of the signing key (chain.key, chain.pub),
	// when the chain shares the key of the chain in KeyDir; the chain's
	// own directory then holds a copy of chain.pub. Empty means the
	// chain's own directory. Writers that share a key may open their
	// chains at the same moment: the key is created once.
	KeyDir string

	// wrap lets tests inject write and fsync failures.
	wrap func(segmentFile) segmentFile
}

// segmentFile is what the committer needs of the segment it appends to.
type segmentFile interface {
	Write([]byte) (int, error)
	Sync() error // fdatasync
	Close() error
}

// Log appends entries to the chain in a directory. It is safe for
// concurrent use; only one Log (in any process) may hold a directory.
//
// Appends are committed in groups (commit.go): the entries that arrive
// while one batch is being written and fsynced go out together in the next
// write and fsync.
type Log struct {
	dir     string
	keyDir  string
	segSize int64
	batch   int
	logger  *slog.Logger
	wrap    func(segmentFile) segmentFile
	priv    ed25519.PrivateKey
	pub     ed25519.PublicKey
	keyID   [8]byte // of pub, in each checkpoint
	acker   *acker  // of priv, for ack lines (ack.go); the committer's
	lock    *os.File

	// mu guards closed, the pending batch, which Appends join and its
	// committer takes whole, and who that committer is (commit.go).
	mu      sync.Mutex
	closed  bool
	pending *batch
	owner   owner         // who commits the pending batch next
	settled *sync.Cond    // on mu: broadcast when an appender stops committing after Close
	full    chan struct{} // closed when the committer takes a full pending batch
	waiting bool          // an Append waits on full
	wake    chan struct{} // an appender handed the writer the pending batch (capacity 1)
	// signWanted: the sign timer fired while a committer was at work; the
	// committer hands the signature to the writer when it is done.
	signWanted bool
	signTimer  *time.Timer // runs signDue, signDelay after a batch is acked unsigned
	quit       chan struct{}
	done       chan struct{}
	failed     atomic.Pointer[error]

	// The seq and prev of the next entry, guarded by mu.
	next uint64
	prev record.Digest

	// Owned by the committer (owner): an appender or the writer goroutine.
	f        segmentFile
	size     int64
	closeErr error
	// tip is the last entry written, tipHash its hash. unsigned: the
	// segment ends with an ack line, not a checkpoint, so the batches since
	// unsignedSince are durable and acknowledged but not yet signed. dirty:
	// a checkpoint was written after the last fsync.
	tipSeq        uint64
	tipHash       record.Digest
	unsigned      bool
	unsignedSince time.Time
	dirty         bool
	ckBuf         []byte

	entries   atomic.Uint64
	commits   atomic.Uint64
	largest   atomic.Int64
	syncNanos atomic.Int64
}

// A request is an entry on its way into a batch: encoded, and hashed up to
// prev, by its appender.
type request struct {
	t record.Template
}

type result struct {
	seq        uint64
	prev, hash record.Digest
}

var requests = sync.Pool{New: func() any { return new(request) }}

// Open opens the chain in dir for appending, creating the directory, the
// signing key (chain.key, mode 0600) and its public half (chain.pub) if
// they do not exist (in opts.KeyDir when it is set). While another Log, in
// this process or another, holds dir, Open fails with an error that is
// [ErrInUse].
//
// Open recovers from a crash: it verifies the end of the last segment, keeps
// and signs the entries up to its last ack line (acknowledged, not yet
// signed) and cuts off what follows (a torn line, and entries whose batch
// never completed: none of them was acknowledged). An entry whose Append
// failed at its fsync may be kept too, when its ack reached the disk
// anyway: the record errs on the side of keeping a decision. If what it
// reads is broken, Open returns the *BreakError and does not append to a
// chain it cannot extend honestly. opts may be nil.
//
// Open reads the last segment from the entry its last checkpoint signs,
// so its time does not grow with the segment: the signature vouches for
// the entries before that one, through the links. An entry altered before
// it is not seen by Open, which appends after the checkpoint and leaves
// the alteration where [Verify] finds it.
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
		keyDir:  opts.KeyDir,
	}
	if l.keyDir == "" {
		l.keyDir = dir
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
	// The sign timer exists before open, whose recovery may sign.
	l.signTimer = time.AfterFunc(time.Hour, l.signDue)
	l.signTimer.Stop()
	if err := l.open(); err != nil {
		unlockDir(lock)
		return nil, err
	}
	l.pending = newBatch()
	l.settled = sync.NewCond(&l.mu)
	l.full = make(chan struct{})
	l.wake = make(chan struct{}, 1)
	l.quit = make(chan struct{})
	l.done = make(chan struct{})
	l.start()
	return l, nil
}

func (l *Log) open() error {
	segs, err := listSegments(l.dir)
	if err != nil {
		return err
	}
	l.priv, err = loadKey(l.dir, l.keyDir, len(segs) > 0)
	if err != nil {
		return err
	}
	l.pub = l.priv.Public().(ed25519.PublicKey)
	l.keyID = keyID(l.pub)
	l.acker = newAcker(l.priv)
	if len(segs) == 0 {
		l.next = 1
		return l.createSegment(1)
	}
	last, acked, err := l.recoverTail(segs)
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
	l.tipSeq, l.tipHash = l.next-1, l.prev
	if acked {
		// Entries this Log acknowledged before it stopped and that no
		// checkpoint signs yet: sign them before anything else.
		l.unsigned = true
		if err := l.signTip(true); err != nil {
			l.f.Close()
			return fmt.Errorf("chain: signing the acknowledged tail of %s: %w", last.path, err)
		}
	}
	return nil
}

func (l *Log) setFile(f *os.File) {
	var sf segmentFile = dataSyncFile{f}
	if l.wrap != nil {
		sf = l.wrap(sf)
	}
	l.f = sf
}

// createSegment starts the segment whose first entry is first.
func (l *Log) createSegment(first uint64) error {
	f, err := os.OpenFile(filepath.Join(l.dir, segmentName(first)), os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
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

// Append records e and returns its seq and hash once it is durable: written
// and fsynced, with the checkpoint that signs it or an ack line that marks
// it acknowledged in the same fsync. The caller MUST NOT act on the
// decision (forward the call) before Append returns nil. A batch is
// acknowledged after its ack line, and the checkpoint that signs it comes
// within signDelay, off the caller's path (ack.go); if the Log fails first,
// the next Open signs it.
//
// Concurrent Appends share one write and one fsync (group commit). Append
// fills in e's V, Seq, Prev and Hash, and its Time when zero (the time of
// the call). It fails without recording anything if e is not recordable
// (see record.Entry), and after a write or fsync failure every Append fails until
// the Log is reopened: the chain fails closed.
//
// If ctx ends first, Append returns ctx.Err() and the entry may or may not
// be recorded; the decision MUST then be treated as not recorded. An Append
// that finds nobody committing commits its batch itself (commit.go), and
// then returns when that write and fsync return, even if ctx ends during
// them: a disk that does not answer holds that one call, as it holds the
// log.
func (l *Log) Append(ctx context.Context, e *record.Entry) (seq uint64, hash [32]byte, err error) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	r := requests.Get().(*request)
	// Encode, and hash what comes before prev, here on the appender's
	// goroutine; the sequencer, which all entries go through, hashes only
	// the rest (join).
	err = r.t.Encode(e)
	if err == nil && r.t.MaxLineLen() > maxLine {
		// With prev, seq and hash spliced in, a line no reader takes.
		err = fmt.Errorf("entry of %d bytes is longer than a chain line may be (%d)", r.t.Len(), maxLine)
	}
	if err != nil {
		requests.Put(r)
		return 0, hash, fmt.Errorf("chain: append: %w", err)
	}
	if p := l.failed.Load(); p != nil {
		requests.Put(r)
		return 0, hash, *p
	}
	b, i, lead, err := l.join(ctx, r)
	requests.Put(r) // join copied r into the batch, or failed
	if err != nil {
		return 0, hash, err
	}
	if lead && ctx.Err() != nil {
		// Given up already: leave the batch to the writer, and wait on it
		// as the appenders who joined it do.
		l.mu.Lock()
		b.waitable()
		l.mu.Unlock()
		l.handOff()
		lead = false
	}
	if lead {
		// No batch was being committed: commit this one here, without
		// waking the writer (commit.go).
		l.lead()
	} else if done := ctx.Done(); done == nil {
		<-b.done
	} else {
		select {
		case <-b.done:
		case <-done:
			// The entry is in the batch and may yet be committed.
			b.release()
			return 0, hash, ctx.Err()
		}
	}
	res, err := b.res[i], b.err
	b.release()
	if err != nil {
		return 0, hash, err
	}
	e.V, e.Seq, e.Prev, e.Hash = record.Version, res.seq, res.prev, res.hash
	return res.seq, res.hash, nil
}

// join adds r's entry to the pending batch and returns the batch, the
// entry's place in it, and whether the caller is to commit it (lead: nobody
// was committing). While the pending batch is full it waits for the
// committer to take it.
//
// join numbers the entry and links it to the entry before, finishing its
// hash, under l.mu: so the appenders do the chain's sequential work as they
// arrive, while the committer fsyncs the batch before, and the committer's
// share of a batch is an ack (or now and then a signature), one write and
// one fsync.
func (l *Log) join(ctx context.Context, r *request) (b *batch, i int, lead bool, err error) {
	l.mu.Lock()
	for {
		if l.closed {
			l.mu.Unlock()
			return nil, 0, false, ErrClosed
		}
		if len(l.pending.res) < l.batch {
			break
		}
		l.waiting = true
		full := l.full
		l.mu.Unlock()
		select {
		case <-full:
		case <-ctx.Done():
			return nil, 0, false, ctx.Err()
		}
		l.mu.Lock()
	}
	if p := l.failed.Load(); p != nil {
		l.mu.Unlock()
		return nil, 0, false, *p
	}
	if l.next > record.MaxSeq {
		err := l.fail(fmt.Errorf("seq would pass %d", uint64(record.MaxSeq)))
		l.mu.Unlock()
		return nil, 0, false, err
	}
	b = l.pending
	i = len(b.res)
	var d record.Digest
	b.buf, d = r.t.AppendLine(b.buf, l.prev, l.next)
	b.res = append(b.res, result{seq: l.next, prev: l.prev, hash: d})
	l.prev = d
	l.next++
	b.refs.Add(1)
	if l.owner == ownNone {
		// Nobody is committing, so the pending batch was empty: this
		// appender commits it. Otherwise the committer takes it next.
		l.owner, lead = ownAppender, true
	} else {
		b.waitable()
	}
	l.mu.Unlock()
	return b, i, lead, nil
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
		Batches:  l.commits.Load(),
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
	l.signTimer.Stop()
	close(l.quit)
	<-l.done
	unlockDir(l.lock)
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return l.closeErr
}

// dataSyncFile is a segment file whose Sync is fdatasync where there is one.
type dataSyncFile struct{ *os.File }

func (f dataSyncFile) Sync() error { return fdatasync(f.File) }
