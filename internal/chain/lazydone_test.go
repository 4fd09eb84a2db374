package chain

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/record"
)

// A batch makes its done channel only for an appender that waits on it
// (batch.waitable, under Log.mu), and answer closes it only if made. These
// tests (from a review of that change) hold the paths that wait on or
// close done to their promises: no Append hangs, none returns before its
// entry is durable, none reads another entry's result, and Close returns.

// gateFile holds each Sync until the test lets it go, when armed, and
// otherwise yields a few times, to widen the windows in which appenders
// join a batch being committed.
type gateFile struct {
	segmentFile
	armed *atomic.Bool
	in    chan struct{} // receives when a held Sync starts
	gate  chan struct{} // a held Sync returns when it receives
}

func (f *gateFile) Sync() error {
	if f.armed.Load() {
		f.in <- struct{}{}
		<-f.gate
		return nil
	}
	for range 3 {
		runtime.Gosched()
	}
	return nil
}

// lazyEntry is the entry of appender g's i-th call, its cap path naming
// both, so that the entry at a seq tells whose it is.
func lazyEntry(g, i int) *record.Entry {
	e := entryN(g*1000 + i)
	e.Caps[0].Path = fmt.Sprintf("/home/u/g%d/i%d", g, i)
	return e
}

type lazyAck struct {
	seq  uint64
	hash [32]byte
	path string
}

// checkLazy scans dir: each acknowledged seq holds the appender's own
// entry, with the hash it was told, and no seq was told to two appenders.
func checkLazy(t *testing.T, dir string, acks []lazyAck) {
	t.Helper()
	have := map[uint64]*record.Entry{}
	if err := Scan(dir, func(e *record.Entry) error { c := *e; have[e.Seq] = &c; return nil }); err != nil {
		t.Fatal(err)
	}
	told := map[uint64]bool{}
	for _, a := range acks {
		if told[a.seq] {
			t.Fatalf("seq %d acknowledged to two appenders", a.seq)
		}
		told[a.seq] = true
		e, ok := have[a.seq]
		switch {
		case !ok:
			t.Fatalf("acknowledged seq %d lost", a.seq)
		case e.Hash != a.hash:
			t.Fatalf("seq %d: told hash %x, chain has %x", a.seq, a.hash[:4], e.Hash[:4])
		case e.Caps[0].Path != a.path:
			t.Fatalf("seq %d: told to the appender of %s, holds %s", a.seq, a.path, e.Caps[0].Path)
		}
	}
}

// TestLazyDoneStress appends from many goroutines with small batches,
// under GOMAXPROCS 1, 2 and 4, with contexts ended before the call, during
// it at random, or never, and closes the Log at a random point. Every
// Append returns (a watchdog fails the test after a minute, not a timing
// assertion: it catches a wait on a channel nobody closes); an Append that
// succeeds returns after its entry is committed (the Log counts it) and is
// told its own entry's seq and hash.
func TestLazyDoneStress(t *testing.T) {
	defer func(d time.Duration) { signDelay = d }(signDelay)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	its := 60
	if testing.Short() {
		its = 12
	}
	for it := range its {
		runtime.GOMAXPROCS([]int{1, 2, 4}[it%3])
		signDelay = []time.Duration{0, 10 * time.Microsecond, time.Hour}[it/3%3]
		rng := rand.New(rand.NewPCG(uint64(it), 3))
		dir := memTempDir(t)
		var armed atomic.Bool
		l := openT(t, dir, &Options{SegmentSize: int64(1 + (it%4)*2000), MaxBatch: 1 + it%3, wrap: func(f segmentFile) segmentFile {
			return &gateFile{segmentFile: noSyncFile{f}, armed: &armed}
		}})
		var amu sync.Mutex
		var acks []lazyAck
		var wg sync.WaitGroup
		var returned atomic.Int64
		const goroutines, calls = 12, 25
		closeAt := rng.IntN(goroutines * calls)
		closed := make(chan error, 1)
		for g := range goroutines {
			seed := rng.Uint64()
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(seed, 5))
				for i := range calls {
					ctx, cancel := context.WithCancel(context.Background())
					switch rng.IntN(6) {
					case 0:
						cancel() // ended before the call
					case 1:
						d := time.Duration(rng.IntN(50)) * time.Microsecond
						go func() { time.Sleep(d); cancel() }()
					case 2:
						go func() { runtime.Gosched(); cancel() }()
					}
					e := lazyEntry(g, i)
					seq, h, err := l.Append(ctx, e)
					cancel()
					if err == nil {
						if n := l.Stats().Entries; seq > n {
							t.Errorf("seq %d acknowledged with %d entries committed", seq, n)
						}
						amu.Lock()
						acks = append(acks, lazyAck{seq, h, e.Caps[0].Path})
						amu.Unlock()
					}
					if returned.Add(1) == int64(closeAt) {
						go func() { closed <- l.Close() }()
					}
				}
			})
		}
		all := make(chan struct{})
		go func() { wg.Wait(); close(all) }()
		select {
		case <-all:
		case <-time.After(time.Minute):
			t.Fatalf("iteration %d: an Append hangs (%d of %d returned)", it, returned.Load(), goroutines*calls)
		}
		select {
		case err := <-closed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("iteration %d: Close hangs", it)
		}
		if err := l.Close(); err != nil { // a second Close is a no-op
			t.Fatal(err)
		}
		rep, err := VerifyWith(dir, l.PublicKey(), &VerifyOptions{AllSignatures: true, Strict: true})
		if err != nil || rep.Truncated() {
			t.Fatalf("iteration %d: after Close: %+v %v", it, rep, err)
		}
		checkLazy(t, dir, acks)
		if t.Failed() {
			return
		}
	}
}

// TestLazyDoneOrders drives the waits on done one at a time, with the
// lead's fsync held: an appender that joins during it and gives up, one
// that joins and waits, and one that gives up before joining (a lead
// that leaves its batch to the writer). Each is answered, no channel is
// closed twice, and the entries of those that gave up after joining are
// committed all the same.
func TestLazyDoneOrders(t *testing.T) {
	dir := memTempDir(t)
	var armed atomic.Bool
	in, gate := make(chan struct{}), make(chan struct{})
	l := openT(t, dir, &Options{MaxBatch: 4, wrap: func(f segmentFile) segmentFile {
		return &gateFile{segmentFile: noSyncFile{f}, armed: &armed, in: in, gate: gate}
	}})
	wait := func(what string, c <-chan error) error {
		t.Helper()
		select {
		case err := <-c:
			return err
		case <-time.After(time.Minute):
			t.Fatalf("%s hangs", what)
			return nil
		}
	}
	appendC := func(ctx context.Context, g int) <-chan error {
		c := make(chan error, 1)
		go func() { _, _, err := l.Append(ctx, lazyEntry(g, 0)); c <- err }()
		return c
	}
	// A lead whose fsync is held.
	armed.Store(true)
	lead := appendC(context.Background(), 0)
	<-in
	// One joins the next batch and gives up while it waits.
	ctx, cancel := context.WithCancel(context.Background())
	quitter := appendC(ctx, 1)
	for l.pendingLen() < 1 {
		runtime.Gosched()
	}
	cancel()
	if err := wait("a joined appender that gave up", quitter); err != context.Canceled {
		t.Fatalf("joined appender that gave up: %v, want %v", err, context.Canceled)
	}
	// One joins the same batch and waits.
	waiter := appendC(context.Background(), 2)
	for l.pendingLen() < 2 {
		runtime.Gosched()
	}
	armed.Store(false)
	gate <- struct{}{} // the lead's fsync returns; the writer commits the rest
	if err := wait("the lead", lead); err != nil {
		t.Fatal(err)
	}
	if err := wait("a joined appender", waiter); err != nil {
		t.Fatal(err)
	}
	// An Append whose ctx ended before it joined an idle Log: it leads,
	// gives the batch to the writer, and waits on it as a joiner would.
	// (If the pending batch is full it gives up before joining.)
	told := 0
	for range 50 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		switch err := wait("a lead that gave up", appendC(ctx, 3)); err {
		case nil:
			told++
		case context.Canceled:
		default:
			t.Fatal(err)
		}
	}
	if err := wait("an Append after", appendC(context.Background(), 4)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := Scan(dir, func(e *record.Entry) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n < 1+1+1+told+1 || n > 1+1+1+50+1 {
		t.Errorf("%d entries in the chain, want %d to %d: every entry acknowledged or joined is committed", n, 1+1+1+told+1, 54)
	}
	t.Logf("%d entries; %d of 50 Appends that gave up before they began were told their entry", n, told)
}

// pendingLen is the number of entries in the pending batch.
func (l *Log) pendingLen() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending.res)
}

// TestAckerReused: an acker keeps its MAC's message and sum between calls;
// a MAC it returned is a copy, which its next call leaves alone, and one
// acker used many times makes the MACs a new acker makes each time.
func TestAckerReused(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	a := newAcker(priv)
	var kept []ack
	for i := range 20 {
		k := a.make(uint64(i), digestOf(fmt.Sprint(i)))
		if fresh := newAcker(priv).make(uint64(i), digestOf(fmt.Sprint(i))); k != fresh {
			t.Fatalf("seq %d: a reused acker's ack differs from a new one's", i)
		}
		kept = append(kept, k)
	}
	for i, k := range kept {
		if !a.check(&k) {
			t.Errorf("seq %d: the ack made earlier no longer checks", i)
		}
		if i > 0 && k.mac == kept[i-1].mac {
			t.Errorf("seq %d: same MAC as seq %d: the sum is shared", i, i-1)
		}
		bad := k
		bad.seq++
		if a.check(&bad) {
			t.Errorf("seq %d: an ack moved to another seq checks", i)
		}
	}
}
