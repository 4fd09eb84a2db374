package chain

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// Group commit. Appenders queue requests (each encoded, and hashed up to
// prev, on the appender's goroutine); two goroutines make them durable:
//
//   - the writer takes every request queued, numbers, links and hashes
//     them, appends a checkpoint signing the last, writes the batch and
//     fsyncs it, then starts on the requests that queued meanwhile;
//   - the notifier answers the batch's appenders, so that the writer's next
//     batch does not wait for the wakeups.
//
// So the entries that arrive during one fsync go out together in the next
// write and fsync. An appender is answered only after the fsync that covers
// its entry and the checkpoint signing it.
//
// The writer does not write the next batch while the last one is being
// fsynced. That would be safe (a batch is acknowledged only after an fsync
// that starts after its write), but a batch cut while an fsync runs leaves
// out what arrives later in that fsync, which then waits two fsyncs instead
// of one. Hashing entries as they arrive, on a goroutine of their own, so
// that the hashing overlaps the fsync, was tried: it shortened the rounds
// on disk by about a fifth, but each entry then woke that goroutine, which
// cost 20-60% more CPU per entry, and in memory (fsync free) it ran at
// 60-80% of this design's rate (BenchmarkAppendMemory).

// batch is a group of requests on its way through the writer and the
// notifier.
type batch struct {
	buf  []byte // their stored lines, then the checkpoint's
	reqs []*request
	res  []result
	err  error // set instead of committing, to answer with
}

func (b *batch) reset() *batch {
	b.buf, b.reqs, b.res, b.err = b.buf[:0], b.reqs[:0], b.res[:0], nil
	if cap(b.buf) > 4<<20 {
		b.buf = nil // a burst of huge entries should not pin memory
	}
	return b
}

// start starts the goroutines; done is closed when both have stopped.
func (l *Log) start() {
	l.batches = make(chan *batch, 2)
	l.notify = make(chan *batch, 2)
	var wg sync.WaitGroup
	wg.Go(l.write)
	wg.Go(l.answer)
	go func() {
		wg.Wait()
		close(l.done)
	}()
}

// write is the writer. After Close it commits what is queued, closes the
// segment and stops.
func (l *Log) write() {
	defer close(l.notify)
	last := 0 // entries in the last batch
	for {
		b := l.newBatch()
		select {
		case r := <-l.queue:
			b.reqs = append(b.reqs, r)
		case <-l.quit:
			// Every Append that got past l.closed has sent already.
			for {
				l.take(b)
				if len(b.reqs) == 0 {
					l.closeErr = l.f.Close()
					return
				}
				l.commit(b)
				l.notify <- b
				b = l.newBatch()
			}
		}
		l.gather(b, last)
		last = len(b.reqs)
		l.commit(b)
		l.notify <- b
	}
}

func (l *Log) newBatch() *batch {
	select {
	case b := <-l.batches:
		return b
	default:
		return new(batch)
	}
}

// take moves queued requests into b, up to the batch size, without waiting.
func (l *Log) take(b *batch) {
	for len(b.reqs) < l.batch {
		select {
		case r := <-l.queue:
			b.reqs = append(b.reqs, r)
			continue
		default:
		}
		return
	}
}

// gather fills b from the queue. The appenders the last commit answered
// are typically about to append again; without waiting for them, batches
// alternate between those and the rest, and average half the appenders.
// So while the batch is smaller than the last one and the queue still
// grows, gather yields to let them in: a few scheduler turns, no timer, so
// an Append alone is not delayed.
func (l *Log) gather(b *batch, last int) {
	for turns := 0; ; turns++ {
		l.take(b)
		if len(b.reqs) >= last || len(b.reqs) >= l.batch || turns == 4 {
			return
		}
		n := len(b.reqs)
		runtime.Gosched()
		if len(l.queue) == 0 && n == len(b.reqs) && turns > 0 {
			return
		}
	}
}

// commit makes b durable: it numbers, links and hashes its entries, and
// writes them with a checkpoint signing the last, in one write, then one
// fsync. On failure it sets b.err.
func (l *Log) commit(b *batch) {
	if p := l.failed.Load(); p != nil {
		b.err = *p
		return
	}
	if l.next+uint64(len(b.reqs))-1 > MaxSeq {
		l.fail(b, fmt.Errorf("seq would pass %d", uint64(MaxSeq)))
		return
	}
	if l.size >= l.segSize {
		if err := l.f.Close(); err != nil {
			l.fail(b, err)
			return
		}
		if err := l.createSegment(l.next); err != nil {
			l.fail(b, err)
			return
		}
	}
	var prev Digest
	var seq uint64
	b.buf, b.res, prev, seq = appendBatch(b.buf, b.res, l.h, l.priv, l.prev, l.next, b.reqs)
	if _, err := l.f.Write(b.buf); err != nil {
		l.fail(b, fmt.Errorf("writing: %w", err))
		return
	}
	t0 := time.Now()
	if err := l.f.Sync(); err != nil {
		l.fail(b, fmt.Errorf("fsync: %w", err))
		return
	}
	l.syncNanos.Add(int64(time.Since(t0)))
	l.size += int64(len(b.buf))
	l.prev, l.next = prev, seq
	l.entries.Add(uint64(len(b.reqs)))
	l.commits.Add(1)
	if n := int64(len(b.reqs)); n > l.largest.Load() {
		l.largest.Store(n)
	}
}

// answer is the notifier: it answers the appenders of each committed
// batch, then hands the batch back for reuse.
func (l *Log) answer() {
	for b := range l.notify {
		for i, r := range b.reqs {
			if b.err != nil {
				r.done <- result{err: b.err}
			} else {
				r.done <- b.res[i]
			}
		}
		select {
		case l.batches <- b.reset():
		default:
		}
	}
}

// fail puts the Log in the failed state and makes err b's error. After a
// failed write or fsync the file's state is unknown (a failed fsync may
// even have dropped dirty pages), so nothing more is appended to it; Open
// recovers from what reached the disk.
func (l *Log) fail(b *batch, err error) {
	err = fmt.Errorf("chain: log failed, reopen to recover: %w", err)
	l.failed.CompareAndSwap(nil, &err)
	l.logger.Error("chain: log failed", slog.String("dir", l.dir), slog.Any("err", err))
	b.err = *l.failed.Load()
}

// appendEntry appends the stored line of r to out, with prev and seq
// spliced in, and returns its hash. r.pre, when set, has already absorbed
// the domain and the line up to prev (the appender's share of the
// hashing); otherwise h hashes the whole line.
func appendEntry(out []byte, h *hasher, r *request, prev Digest, seq uint64) ([]byte, Digest) {
	start := len(out)
	b, t := r.buf, r.t
	out = append(out, b[:t.prevAt]...)
	out = hex.AppendEncode(out, prev[:])
	out = append(out, b[t.prevAt:t.seqAt]...)
	out = strconv.AppendUint(out, seq, 10)
	out = append(out, b[t.seqAt:len(b)-1]...)
	var d Digest
	if r.pre != nil {
		r.pre.Write(out[start+t.prevAt:])
		r.pre.Write(closeBrace)
		copy(d[:], r.pre.Sum(r.sum[:0]))
	} else {
		d = h.lineBody(out[start:])
	}
	return appendLineSuffix(out, d), d
}

// appendBatch appends the lines of a batch to out: its entries, numbered
// from seq and linked from prev, then the checkpoint signing the last one.
// It returns the results and the prev and seq that follow the batch. A Log
// makes the same lines in steps (add, then commit); tests use this.
func appendBatch(out []byte, res []result, h *hasher, priv ed25519.PrivateKey, prev Digest, seq uint64, batch []*request) ([]byte, []result, Digest, uint64) {
	for _, r := range batch {
		var d Digest
		out, d = appendEntry(out, h, r, prev, seq)
		res = append(res, result{seq: seq, prev: prev, hash: d})
		prev = d
		seq++
	}
	ck := signCheckpoint(priv, seq-1, prev)
	return appendCheckpoint(out, &ck), res, prev, seq
}
