package chain

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/record"
)

// crashFS tracks, for every segment file, how many bytes were written and
// how many were covered by a successful fsync, under one lock, so that a
// snapshot sees a consistent picture of what a power cut may leave.
type crashFS struct {
	mu    sync.Mutex
	files map[string]*trackedFile
}

type trackedFile struct {
	segmentFile
	fs      *crashFS
	name    string
	written int64
	synced  int64
}

func (c *crashFS) wrap(f segmentFile) segmentFile {
	name := f.(dataSyncFile).File.Name()
	c.mu.Lock()
	defer c.mu.Unlock()
	fi, _ := os.Stat(name)
	t := &trackedFile{segmentFile: f, fs: c, name: name, written: fi.Size(), synced: fi.Size()}
	c.files[name] = t
	return t
}

func (t *trackedFile) Write(b []byte) (int, error) {
	t.fs.mu.Lock()
	defer t.fs.mu.Unlock()
	n, err := t.segmentFile.Write(b)
	t.written += int64(n)
	return n, err
}

func (t *trackedFile) Sync() error {
	t.fs.mu.Lock()
	defer t.fs.mu.Unlock()
	err := t.segmentFile.Sync()
	if err == nil {
		t.synced = t.written
	}
	return err
}

// snapshot copies dir to a new directory as a power cut might leave it:
// each segment keeps its fsynced bytes and a random prefix of the rest.
func (c *crashFS) snapshot(t *testing.T, dir string, rng *rand.Rand) string {
	out := memTempDir(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if de.Name() == "chain.lock" {
			continue
		}
		p := filepath.Join(dir, de.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if tf := c.files[p]; tf != nil && int64(len(b)) > tf.synced {
			keep := tf.synced + rng.Int64N(int64(len(b))-tf.synced+1)
			b = b[:keep]
		}
		if err := os.WriteFile(filepath.Join(out, de.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

type acked struct {
	seq  uint64
	hash [32]byte
}

// TestCrashImages (from a review of the ack lines) appends from many
// goroutines with small batches,
// segments and sign delays, takes power-cut images at random moments, and
// checks that Open on each keeps and signs every entry acknowledged before
// the image was taken.
func TestCrashImages(t *testing.T) {
	defer func(d time.Duration) { signDelay = d }(signDelay)
	for _, d := range []time.Duration{0, 50 * time.Microsecond, time.Millisecond} {
		for _, mb := range []int{1, 3} {
			for _, ss := range []int64{1, 3000} {
				t.Run(fmt.Sprintf("delay=%v/batch=%d/seg=%d", d, mb, ss), func(t *testing.T) {
					signDelay = d
					rng := rand.New(rand.NewPCG(uint64(d)+uint64(mb), uint64(ss)))
					// On the disk: its fsyncs pace the appenders. crashFS,
					// not the disk, decides what an image keeps.
					dir := t.TempDir()
					cfs := &crashFS{files: map[string]*trackedFile{}}
					l := openT(t, dir, &Options{SegmentSize: ss, MaxBatch: mb, wrap: cfs.wrap})
					var amu sync.Mutex
					var got []acked
					stop := make(chan struct{})
					var wg sync.WaitGroup
					for g := range 6 {
						wg.Go(func() {
							grng := rand.New(rand.NewPCG(uint64(g), 7))
							for i := 0; ; i++ {
								select {
								case <-stop:
									return
								default:
								}
								ctx, cancel := context.WithCancel(context.Background())
								if i%17 == g {
									cancel()
								}
								seq, h, err := l.Append(ctx, entryN(g*100000+i))
								cancel()
								if err == nil {
									amu.Lock()
									got = append(got, acked{seq, h})
									amu.Unlock()
								}
								if i%5 == 0 {
									time.Sleep(time.Duration(grng.IntN(200)) * time.Microsecond)
								}
							}
						})
					}
					for range 8 {
						time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
						amu.Lock()
						before := append([]acked(nil), got...)
						amu.Unlock()
						img := cfs.snapshot(t, dir, rng)
						checkImage(t, img, l, before)
					}
					close(stop)
					wg.Wait()
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
					rep, err := VerifyWith(dir, l.PublicKey(), &VerifyOptions{AllSignatures: true, Strict: true})
					if err != nil || rep.Truncated() {
						t.Fatalf("after Close: %+v %v", rep, err)
					}
					checkAcked(t, dir, got)
				})
			}
		}
	}
}

func checkImage(t *testing.T, img string, l *Log, before []acked) {
	t.Helper()
	l2, err := Open(img, &Options{Logger: quiet})
	if err != nil {
		t.Fatalf("Open on a crash image: %v", err)
	}
	if err := l2.Close(); err != nil {
		t.Fatalf("Close on a crash image: %v", err)
	}
	rep, err := VerifyWith(img, l.PublicKey(), &VerifyOptions{AllSignatures: true, Strict: true})
	if err != nil || rep.Truncated() {
		t.Fatalf("crash image after Open: %+v %v", rep, err)
	}
	checkAcked(t, img, before)
}

func checkAcked(t *testing.T, dir string, want []acked) {
	t.Helper()
	have := map[uint64][32]byte{}
	if err := Scan(dir, func(e *record.Entry) error { have[e.Seq] = e.Hash; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, a := range want {
		if h, ok := have[a.seq]; !ok || h != a.hash {
			t.Fatalf("acknowledged seq %d lost (present %v) in %s", a.seq, ok, dir)
		}
	}
}

// TestCloseRaces opens, appends from a few goroutines (some giving
// up), and closes at once, many times, with tiny sign delays: Close must
// return, and the chain must end signed with every acknowledged entry.
func TestCloseRaces(t *testing.T) {
	defer func(d time.Duration) { signDelay = d }(signDelay)
	for it := range 150 {
		signDelay = []time.Duration{0, time.Microsecond, 10 * time.Microsecond, 200 * time.Microsecond}[it%4]
		dir := memTempDir(t)
		l := openT(t, dir, &Options{SegmentSize: int64(1 + (it%3)*1500), MaxBatch: 1 + it%3, wrap: noSync})
		var amu sync.Mutex
		var got []acked
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 20 {
					ctx, cancel := context.WithCancel(context.Background())
					if (i+g+it)%7 == 0 {
						cancel()
					}
					seq, h, err := l.Append(ctx, entryN(g*1000+i))
					cancel()
					if err == nil {
						amu.Lock()
						got = append(got, acked{seq, h})
						amu.Unlock()
					}
				}
			})
		}
		if it%2 == 0 {
			time.Sleep(time.Duration(it%5) * 100 * time.Microsecond)
		}
		done := make(chan error)
		go func() { done <- l.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("iteration %d: Close hangs", it)
		}
		wg.Wait()
		rep, err := VerifyWith(dir, l.PublicKey(), &VerifyOptions{AllSignatures: true, Strict: true})
		if err != nil || rep.Truncated() {
			t.Fatalf("iteration %d: after Close: %+v %v", it, rep, err)
		}
		checkAcked(t, dir, got)
	}
}

type randFault struct {
	segmentFile
	n              *atomic.Int64
	failAt         int64
	short, onWrite bool
}

func (f *randFault) Write(b []byte) (int, error) {
	if f.onWrite && f.n.Add(1) == f.failAt {
		if f.short {
			n, _ := f.segmentFile.Write(b[:len(b)*2/3])
			return n, errors.New("injected short write")
		}
		return 0, errors.New("injected write failure")
	}
	return f.segmentFile.Write(b)
}

func (f *randFault) Sync() error {
	if !f.onWrite && f.n.Add(1) == f.failAt {
		return errors.New("injected fsync failure")
	}
	return f.segmentFile.Sync()
}

// TestFaultAnywhere fails one write or fsync at a random point under
// concurrent appends: after a reopen, every acknowledged entry is there
// and signed.
func TestFaultAnywhere(t *testing.T) {
	defer func(d time.Duration) { signDelay = d }(signDelay)
	for it := range 120 {
		signDelay = []time.Duration{0, 5 * time.Microsecond, 100 * time.Microsecond, time.Hour}[it%4]
		dir := memTempDir(t)
		var n atomic.Int64
		failAt := int64(1 + it%23)
		l := openT(t, dir, &Options{SegmentSize: int64(1 + (it%3)*1200), MaxBatch: 1 + it%4, wrap: func(f segmentFile) segmentFile {
			return &randFault{segmentFile: noSyncFile{f}, n: &n, failAt: failAt, short: it%2 == 0, onWrite: it%3 != 0}
		}})
		var amu sync.Mutex
		var got []acked
		var wg sync.WaitGroup
		for g := range 5 {
			wg.Go(func() {
				for i := range 15 {
					seq, h, err := l.Append(context.Background(), entryN(g*1000+i))
					if err == nil {
						amu.Lock()
						got = append(got, acked{seq, h})
						amu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		l.Close()
		l2, err := Open(dir, &Options{Logger: quiet, wrap: noSync})
		if err != nil {
			t.Fatalf("iteration %d: reopen: %v", it, err)
		}
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
		rep, err := VerifyWith(dir, l.PublicKey(), &VerifyOptions{AllSignatures: true, Strict: true})
		if err != nil || rep.Truncated() {
			t.Fatalf("iteration %d: after reopen: %+v %v", it, rep, err)
		}
		checkAcked(t, dir, got)
	}
}
