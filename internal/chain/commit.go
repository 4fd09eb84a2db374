package chain

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegis-mcp/aegis/internal/record"
)

// Group commit. Appenders encode their entries, and hash them up to prev,
// on their own goroutines; then, under a mutex, each numbers its entry,
// links it to the one before, finishes its hash and appends the stored
// line to the pending batch. One committer at a time takes the pending
// batch whole, leaving an empty one for the next appenders; appends an
// ack line marking its last entry (or, once the batches before have
// waited signDelay, a checkpoint signing it: ack.go); writes the batch and
// fsyncs it; then
// answers all its appenders at once by closing the batch's done channel,
// after which each reads its result.
//
// The committer is the appender that joined an empty pending batch while
// nobody was committing (lead): an Append alone, as a proxy makes them one
// call at a time, is committed on its own goroutine and wakes no other.
// The appenders that join while it commits are handed to the writer
// goroutine, which keeps committing while batches keep coming (write), so
// that no appender commits more than its own batch.
//
// So the entries that arrive during one fsync go out together in the next
// write and fsync, and the chain's sequential work (linking and hashing)
// is done as they arrive, while that fsync runs. An appender is answered
// only after the fsync that covers its entry and the checkpoint signing it
// or the ack marking it.
//
// An earlier design sent each request over a channel to the writer, which
// linked and hashed the whole batch after taking it, and each answer back
// over a channel of its own through a notifier goroutine: two channel
// operations and a select per entry on each side, and the writer's hashing
// in series with the fsync. At 1024 appenders (2 cores) a round took more
// than twice the fsync it waited on.
//
// The writer does not write the next batch while the last one is being
// fsynced. That would be safe (a batch is acknowledged only after an fsync
// that starts after its write), but a batch cut while an fsync runs leaves
// out what arrives later in that fsync, which then waits two fsyncs instead
// of one. Hashing entries as they arrive on a goroutine of their own, so
// that the hashing overlaps the fsync, was tried with the channel design:
// it shortened the rounds on disk by about a fifth, but each entry then
// woke that goroutine, which cost 20-60% more CPU per entry. Here the
// appenders do that work themselves, and nothing is woken per entry.

// batch is a group of entries on its way to the disk. Its appenders add to
// it under Log.mu; after the committer takes it, it belongs to the
// committer until done is closed, and then its results to the appenders.
type batch struct {
	buf []byte   // the stored lines of its entries, then the checkpoint's
	res []result // of its entries, in order
	err error    // set instead of committing, to answer with
	// done is closed when the batch is answered. It is made (under
	// Log.mu) for the first appender that waits on it, so the batch of an
	// Append alone, which its appender commits, makes none.
	done chan struct{}
	// refs counts the appenders that have yet to read their results, and
	// the committer; the last to let go puts the batch back in the pool.
	refs atomic.Int32
}

var batches = sync.Pool{New: func() any { return new(batch) }}

// newBatch returns an empty batch, its reference held by its committer.
func newBatch() *batch {
	b := batches.Get().(*batch)
	b.refs.Store(1)
	return b
}

// waitable makes b's done channel, for an appender about to wait on it. The
// caller holds Log.mu, and b is pending, or still its lead's: nobody has
// answered it.
func (b *batch) waitable() {
	if b.done == nil {
		b.done = make(chan struct{})
	}
}

// release drops a reference to b; the last one returns b to the pool.
func (b *batch) release() {
	if b.refs.Add(-1) != 0 {
		return
	}
	b.buf, b.res, b.err, b.done = b.buf[:0], b.res[:0], nil, nil
	if cap(b.buf) > 4<<20 {
		b.buf = nil // a burst of huge entries should not pin memory
	}
	batches.Put(b)
}

// owner says who commits the pending batch next.
type owner uint8

const (
	ownNone     owner = iota // nobody: the next appender commits
	ownAppender              // an appender, on its own goroutine (lead)
	ownWriter                // the writer goroutine (write)
)

// start starts the writer; done is closed when it has stopped.
func (l *Log) start() {
	go func() {
		defer close(l.done)
		l.write()
	}()
}

// lead commits the pending batch on the goroutine of the appender that
// joined it first, while nobody else was committing: an Append alone (a
// proxy's one call at a time) is written, fsynced and answered without
// waking another goroutine, and without waiting for a signature: its batch
// ends with an ack line, signed later (ack.go). The appenders that join
// during its fsync are handed to the writer rather than committed here, so
// that this appender returns after one commit.
func (l *Log) lead() {
	l.mu.Lock()
	b := l.take()
	l.mu.Unlock()
	committed := false
	defer func() {
		if !committed {
			// commit panicked. Fail the log, so that no Append waits on
			// a commit that will not come, and let the panic go on.
			b.err = l.fail(errors.New("a commit panicked"))
		}
		l.answer(b)
		l.handOff()
	}()
	l.commit(b, false)
	committed = true
}

// handOff ends an appender's turn as committer: the writer takes over if a
// batch is pending or a signature is due, else nobody commits until the
// next Append (or the sign timer).
func (l *Log) handOff() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending.res) > 0 || l.signWanted && l.unsigned {
		l.owner = ownWriter
		select {
		case l.wake <- struct{}{}:
		default: // a wake is pending already
		}
	} else {
		l.owner = ownNone
	}
	if l.closed {
		l.settled.Broadcast() // Close's writer may be waiting for this commit
	}
}

// write is the writer: it commits batches while they keep coming, from
// when an appender hands it the pending batch until a batch finds none
// waiting. After Close it waits for an appender's commit in progress,
// commits the pending batch, closes the segment and stops.
func (l *Log) write() {
	for {
		select {
		case <-l.wake:
		case <-l.quit:
			// l.closed is set: no Append joins the pending batch any
			// more, and none starts committing.
			l.mu.Lock()
			for l.owner == ownAppender {
				l.settled.Wait()
			}
			b := l.take()
			l.mu.Unlock()
			if len(b.res) > 0 {
				l.commit(b, true)
			}
			l.answer(b)
			l.signTip(true) // a failure fails the log, which Close returns
			l.closeErr = l.f.Close()
			return
		}
		l.mu.Lock()
		handed := l.owner == ownWriter
		l.mu.Unlock()
		if !handed {
			continue // not the writer's to commit (cannot happen)
		}
		// A sign request (the timer fired during an appender's commit) is
		// met by the next commit, past the delay, or by gather when none
		// is pending.
		for last := 0; ; {
			b := l.gather(last)
			if b == nil {
				break
			}
			last = len(b.res)
			l.commit(b, false)
			l.answer(b)
		}
	}
}

// take takes the pending batch, leaving an empty one, and lets in the Appends
// that waited for room. l.mu is held.
func (l *Log) take() *batch {
	b := l.pending
	l.pending = newBatch()
	if l.waiting {
		close(l.full)
		l.full, l.waiting = make(chan struct{}), false
	}
	return b
}

// gather takes the pending batch for the writer. The appenders the last
// commit answered are typically about to append again; without waiting for
// them, batches alternate between those and the rest, and average half the
// appenders. So while the batch is smaller than the last one and still
// grows, gather yields to let them in: a few scheduler turns, no timer.
// If no batch is pending then, the writer signs the acknowledged tail if the
// sign timer asked for it, and stops committing (ownNone); gather returns
// nil.
func (l *Log) gather(last int) *batch {
	seen := -1
	for turns := 0; ; turns++ {
		l.mu.Lock()
		n := len(l.pending.res)
		if n >= last || n >= l.batch || turns == 4 || n == seen && turns > 1 {
			if n == 0 {
				if l.signWanted && l.unsigned {
					// The sign timer fired during a commit that did not
					// reach the delay: sign before leaving.
					l.signWanted = false
					l.mu.Unlock()
					l.signTip(false)
					continue
				}
				l.owner = ownNone
				l.mu.Unlock()
				return nil
			}
			b := l.take()
			l.mu.Unlock()
			return b
		}
		l.mu.Unlock()
		seen = n
		runtime.Gosched()
	}
}

// signDelay is how long a batch may stay acknowledged but unsigned: the
// commit after that signs inline, and if none comes the sign timer signs.
// Each checkpoint signs everything before it, so while batches come faster
// than this, most end with an ack line and share a later signature: at
// most 50 signatures a second, each 60-100 µs of CPU on a busy 2-core VM.
// A proxy whose calls come one every few milliseconds signs once per
// several calls; one whose calls are seconds apart signs each, after it,
// while it is idle. It is a variable for tests.
var signDelay = 20 * time.Millisecond

// signDue runs when the sign timer fires: it signs the acknowledged tail if
// nobody is committing, or asks the committer to have it signed.
func (l *Log) signDue() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return // Close signs
	}
	if l.owner != ownNone {
		l.signWanted = true
		l.mu.Unlock()
		return
	}
	l.owner = ownAppender // as an appender would, so that Close waits
	l.mu.Unlock()
	l.signTip(false) // a failure fails the log
	l.handOff()
}

// commit makes b durable: it appends an ack line marking b's last entry
// (ack.go), or a checkpoint signing it when the batches before have been
// unsigned for signDelay or when final, and writes b in one write, then one
// fsync. On failure it sets b.err.
func (l *Log) commit(b *batch, final bool) {
	if p := l.failed.Load(); p != nil {
		b.err = *p
		return
	}
	first, last := b.res[0], b.res[len(b.res)-1]
	if l.size >= l.segSize {
		// A segment ends with a checkpoint, durable before the next
		// segment exists.
		if err := l.signTip(true); err != nil {
			b.err = err
			return
		}
		if err := l.f.Close(); err != nil {
			b.err = l.fail(err)
			return
		}
		if err := l.createSegment(first.seq); err != nil {
			b.err = l.fail(err)
			return
		}
	}
	now := time.Now()
	sign := final || l.unsigned && now.Sub(l.unsignedSince) >= signDelay
	if sign {
		ck := signCheckpointAs(l.priv, l.keyID, last.seq, last.hash)
		b.buf = appendCheckpoint(b.buf, &ck)
	} else {
		k := l.acker.make(last.seq, last.hash)
		b.buf = appendAck(b.buf, &k)
	}
	if _, err := l.f.Write(b.buf); err != nil {
		b.err = l.fail(fmt.Errorf("writing: %w", err))
		return
	}
	l.size += int64(len(b.buf))
	t0 := time.Now()
	if err := l.f.Sync(); err != nil {
		b.err = l.fail(fmt.Errorf("fsync: %w", err))
		return
	}
	l.syncNanos.Add(int64(time.Since(t0)))
	l.tipSeq, l.tipHash = last.seq, last.hash
	if sign && l.unsigned {
		l.tailSigned()
	}
	if !sign && !l.unsigned {
		l.unsignedSince = now
		l.signTimer.Reset(signDelay)
	}
	l.unsigned, l.dirty = !sign, false
	l.entries.Add(uint64(len(b.res)))
	l.commits.Add(1)
	if n := int64(len(b.res)); n > l.largest.Load() {
		l.largest.Store(n)
	}
}

// signTip writes the checkpoint that signs the last entry written, which
// an ack line ends, and fsyncs it if sync (else the next commit's fsync, or
// Close's, covers it: until then a crash leaves the ack, and Open signs the
// entries again). A failure fails the log.
func (l *Log) signTip(sync bool) error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	if l.unsigned {
		ck := signCheckpointAs(l.priv, l.keyID, l.tipSeq, l.tipHash)
		l.ckBuf = appendCheckpoint(l.ckBuf[:0], &ck)
		if _, err := l.f.Write(l.ckBuf); err != nil {
			return l.fail(fmt.Errorf("writing a checkpoint: %w", err))
		}
		l.size += int64(len(l.ckBuf))
		l.unsigned, l.dirty = false, true
		l.tailSigned()
	}
	if sync && l.dirty {
		if err := l.f.Sync(); err != nil {
			return l.fail(fmt.Errorf("fsync: %w", err))
		}
		l.dirty = false
	}
	return nil
}

// tailSigned notes that a checkpoint now signs the acked tail: the sign
// timer, and a request it made while a commit was at work, are moot. Left
// set, the request would have the next lone Append's batch signed at once.
func (l *Log) tailSigned() {
	l.signTimer.Stop()
	l.mu.Lock()
	l.signWanted = false
	l.mu.Unlock()
}

// answer wakes the appenders of b, committed or failed, all at once, and
// lets go of the committer's reference to it.
func (l *Log) answer(b *batch) {
	if b.done != nil { // nil: nobody waits
		close(b.done)
	}
	b.release()
}

// fail puts the Log in the failed state, if it is not failed already, and
// returns the error that failed it. After a failed write or fsync the
// file's state is unknown (a failed fsync may even have dropped dirty
// pages), so nothing more is appended to it; Open recovers from what
// reached the disk.
func (l *Log) fail(err error) error {
	err = fmt.Errorf("chain: log failed, reopen to recover: %w", err)
	if l.failed.CompareAndSwap(nil, &err) {
		l.logger.Error("chain: log failed", slog.String("dir", l.dir), slog.Any("err", err))
	}
	return *l.failed.Load()
}

// appendBatch appends the lines of a batch to out: its entries, numbered
// from seq and linked from prev, then the checkpoint signing the last one.
// It returns the results and the prev and seq that follow the batch. A Log
// makes the same lines in steps (add, then commit); tests use this.
func appendBatch(out []byte, res []result, priv ed25519.PrivateKey, prev record.Digest, seq uint64, batch []*request) ([]byte, []result, record.Digest, uint64) {
	for _, r := range batch {
		var d record.Digest
		out, d = r.t.AppendLine(out, prev, seq)
		res = append(res, result{seq: seq, prev: prev, hash: d})
		prev = d
		seq++
	}
	ck := signCheckpoint(priv, seq-1, prev)
	return appendCheckpoint(out, &ck), res, prev, seq
}
