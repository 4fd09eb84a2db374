package chain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/record"
	"github.com/google/go-cmp/cmp"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openT(t testing.TB, dir string, opts *Options) *Log {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func entryN(i int) *record.Entry {
	return &record.Entry{
		Session:   fmt.Sprintf("s%d", i%7),
		Principal: fmt.Sprintf("user%d", i%13),
		Origin:    "interactive",
		Server:    "fs",
		Tool:      "read_file",
		Caps:      []record.Cap{{Kind: "fs.read", Path: fmt.Sprintf("/home/u/file-%d", i)}},
		Decision:  record.Allow,
		Mode:      record.Enforce,
		Rules:     []string{"r1"},
		ArgsHash:  digestOf(fmt.Sprint(i)),
	}
}

// TestConcurrentAppend has many goroutines append at once, across several
// segment rotations, and checks that every acknowledged entry is in the
// chain with the seq and hash Append returned, in a chain that verifies.
func TestConcurrentAppend(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, &Options{SegmentSize: 16 << 10})
	const workers, each = 16, 50
	type ack struct {
		seq  uint64
		hash record.Digest
		path string
	}
	acks := make(chan ack, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				e := entryN(w*each + i)
				seq, h, err := l.Append(context.Background(), e)
				if err != nil {
					t.Error(err)
					return
				}
				if e.Seq != seq || e.Hash != h || e.V != record.Version {
					t.Errorf("Append returned %d %x but set e to %d %x", seq, h, e.Seq, e.Hash)
				}
				acks <- ack{seq, h, e.Caps[0].Path}
			}
		})
	}
	wg.Wait()
	close(acks)
	st := l.Stats()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	want := map[uint64]ack{}
	for a := range acks {
		if _, dup := want[a.seq]; dup {
			t.Fatalf("seq %d acknowledged twice", a.seq)
		}
		want[a.seq] = a
	}
	rep, err := VerifyWith(dir, l.PublicKey(), &VerifyOptions{AllSignatures: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Entries != workers*each || rep.Signed != rep.Entries || rep.Segments < 2 || rep.Checkpoints == 0 || rep.Checkpoints > st.Batches {
		t.Errorf("report %+v, stats %+v: want %d entries all signed over several segments, at most one checkpoint per batch", rep, st, workers*each)
	}
	var n uint64
	err = Scan(dir, func(e *record.Entry) error {
		n++
		a := want[e.Seq]
		if e.Hash != a.hash || e.Caps[0].Path != a.path {
			return fmt.Errorf("seq %d: got %v %s, acknowledged %v %s", e.Seq, e.Hash, e.Caps[0].Path, a.hash, a.path)
		}
		return nil
	})
	if err != nil || n != workers*each {
		t.Errorf("Scan: %v after %d entries", err, n)
	}
}

func TestReopenContinues(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, nil)
	pub := l.PublicKey()
	for i := range 3 {
		if _, _, err := l.Append(context.Background(), entryN(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	l = openT(t, dir, nil)
	if !pub.Equal(l.PublicKey()) {
		t.Fatal("reopening changed the key")
	}
	seq, _, err := l.Append(context.Background(), entryN(3))
	if err != nil || seq != 4 {
		t.Fatalf("Append after reopen = %d, %v; want seq 4", seq, err)
	}
	l.Close()
	pemBytes, err := os.ReadFile(filepath.Join(dir, PublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	filePub, err := ParsePublicKey(pemBytes)
	if err != nil || !filePub.Equal(pub) {
		t.Fatalf("chain.pub = %v, %v; want the Log's key", filePub, err)
	}
	if rep, err := Verify(dir, filePub); err != nil || rep.Entries != 4 || rep.Signed != 4 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, nil)
	l.Close()
	fi, err := os.Stat(filepath.Join(dir, PrivateKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("chain.key: %v, mode %v; want 0600", err, fi.Mode())
	}

	t.Run("key readable by others", func(t *testing.T) {
		d := t.TempDir()
		openT(t, d, nil).Close()
		os.Chmod(filepath.Join(d, PrivateKeyFile), 0o644)
		if _, err := Open(d, &Options{Logger: quiet}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("Open = %v, want a refusal of the mode", err)
		}
	})
	t.Run("key missing beside a chain", func(t *testing.T) {
		d := t.TempDir()
		l := openT(t, d, nil)
		l.Append(context.Background(), entryN(0))
		l.Close()
		os.Remove(filepath.Join(d, PrivateKeyFile))
		if _, err := Open(d, &Options{Logger: quiet}); err == nil || !strings.Contains(err.Error(), "second key") {
			t.Errorf("Open = %v, want a refusal to start a second key", err)
		}
	})
	t.Run("chain.pub of another key", func(t *testing.T) {
		d := t.TempDir()
		openT(t, d, nil).Close()
		other, _ := testKey(t, 3)
		os.WriteFile(filepath.Join(d, PublicKeyFile), MarshalPublicKey(other), 0o644)
		if _, err := Open(d, &Options{Logger: quiet}); err == nil || !strings.Contains(err.Error(), "not the public key") {
			t.Errorf("Open = %v, want a refusal", err)
		}
	})
	t.Run("chain.pub missing is restored", func(t *testing.T) {
		d := t.TempDir()
		l := openT(t, d, nil)
		l.Close()
		os.Remove(filepath.Join(d, PublicKeyFile))
		openT(t, d, nil).Close()
		b, err := os.ReadFile(filepath.Join(d, PublicKeyFile))
		if pub, perr := ParsePublicKey(b); err != nil || perr != nil || !pub.Equal(l.PublicKey()) {
			t.Errorf("chain.pub not restored: %v %v", err, perr)
		}
	})
	t.Run("garbage key", func(t *testing.T) {
		d := t.TempDir()
		openT(t, d, nil).Close()
		os.WriteFile(filepath.Join(d, PrivateKeyFile), []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600)
		if _, err := Open(d, &Options{Logger: quiet}); err == nil {
			t.Error("Open accepted a garbage key")
		}
	})
	for _, bad := range []string{"", "hello", string(MarshalPublicKey(l.PublicKey())) + "junk", strings.Replace(string(MarshalPublicKey(l.PublicKey())), "PUBLIC", "PRIVATE", 2)} {
		if _, err := ParsePublicKey([]byte(bad)); err == nil {
			t.Errorf("ParsePublicKey accepted %q", bad)
		}
	}
}

func TestSecondWriterRefused(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, nil)
	if _, err := Open(dir, &Options{Logger: quiet}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("second Open = %v, want in use", err)
	}
	l.Close()
	openT(t, dir, nil).Close() // released by Close
}

func TestAppendRejects(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, nil)
	defer l.Close()
	bad := entryN(0)
	bad.Decision = "permit"
	if _, _, err := l.Append(context.Background(), bad); err == nil {
		t.Error("Append accepted decision permit")
	}
	if _, _, err := l.Append(context.Background(), &record.Entry{Decision: record.Deny, Mode: record.Enforce, Principal: "\xff"}); err == nil {
		t.Error("Append accepted a principal that is not UTF-8")
	}
	// Nothing was recorded by the failures.
	seq, _, err := l.Append(context.Background(), entryN(1))
	if err != nil || seq != 1 {
		t.Errorf("Append after rejections = %d, %v; want seq 1", seq, err)
	}
}

func TestClose(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, nil)
	var wg, warm sync.WaitGroup
	var acked, closed atomic.Int64
	warm.Add(8)
	for i := range 8 {
		wg.Go(func() {
			var once sync.Once
			defer once.Do(warm.Done)
			for j := 0; ; j++ {
				_, _, err := l.Append(context.Background(), entryN(i*1000+j))
				if j == 10 {
					once.Do(warm.Done)
				}
				switch {
				case err == nil:
					acked.Add(1)
				case errors.Is(err, ErrClosed):
					closed.Add(1)
					return
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	warm.Wait() // every appender is under way
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	rep, err := Verify(dir, l.PublicKey())
	if err != nil || rep.Entries != uint64(acked.Load()) || rep.Truncated() || closed.Load() != 8 {
		t.Errorf("after Close: %+v, %v; acked %d, closed %d", rep, err, acked.Load(), closed.Load())
	}
}

func TestAppendContext(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, nil)
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// With ctx already done Append may win either select; it must never
	// report success for an entry it did not make durable, and the chain
	// must stay whole.
	for i := range 50 {
		seq, _, err := l.Append(ctx, entryN(i))
		if err == nil && seq == 0 {
			t.Fatal("success without a seq")
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	if _, _, err := l.Append(context.Background(), entryN(99)); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(dir, l.PublicKey()); err != nil {
		t.Fatal(err)
	}
}

// faultyFile fails the write of a batch, or the fsync, numbered failWrite
// or failSync (from 1). Writes of a checkpoint alone (the writer's, after a
// lone Append's ack) are not counted: when they come is up to the writer.
type faultyFile struct {
	segmentFile
	writes, syncs *atomic.Int64
	failWrite     int64
	failSync      int64
	short         bool // fail the write after writing half of it
}

func (f *faultyFile) Write(b []byte) (int, error) {
	if !bytes.HasPrefix(b, checkpointPrefix) && f.writes.Add(1) == f.failWrite {
		if f.short {
			n, _ := f.segmentFile.Write(b[:len(b)/2])
			return n, errors.New("injected short write")
		}
		return 0, errors.New("injected write failure")
	}
	return f.segmentFile.Write(b)
}

func (f *faultyFile) Sync() error {
	if f.syncs.Add(1) == f.failSync {
		return errors.New("injected fsync failure")
	}
	return f.segmentFile.Sync()
}

// TestFailClosed injects write and fsync failures: the batch that hit one
// fails, every later Append fails, nothing unacknowledged survives a
// reopen, and the chain verifies.
func TestFailClosed(t *testing.T) {
	tests := []struct {
		name            string
		write, sync     int64
		short           bool
		wantAfterReopen uint64 // entries that verify after reopening
	}{
		{name: "write fails", write: 3, wantAfterReopen: 2},
		{name: "short write", write: 3, short: true, wantAfterReopen: 2},
		// The fsync failed but the page cache still holds the batch and the
		// machine did not crash, so it reaches the disk: an entry whose
		// Append failed is recorded, which errs on the side of the record.
		{name: "fsync fails", sync: 3, wantAfterReopen: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var writes, syncs atomic.Int64
			l := openT(t, dir, &Options{wrap: func(f segmentFile) segmentFile {
				return &faultyFile{segmentFile: f, writes: &writes, syncs: &syncs, failWrite: tt.write, failSync: tt.sync, short: tt.short}
			}})
			var errs []error
			for i := range 5 {
				_, _, err := l.Append(context.Background(), entryN(i))
				errs = append(errs, err)
			}
			for i, err := range errs {
				if (i < 2) != (err == nil) {
					t.Errorf("Append %d: %v; want success only before the failure", i+1, err)
				}
			}
			if err := l.Close(); err == nil || !strings.Contains(err.Error(), "injected") {
				t.Errorf("Close = %v, want the injected failure", err)
			}
			l = openT(t, dir, nil)
			seq, _, err := l.Append(context.Background(), entryN(9))
			if err != nil || seq != tt.wantAfterReopen+1 {
				t.Errorf("Append after reopen = %d, %v; want %d", seq, err, tt.wantAfterReopen+1)
			}
			l.Close()
			rep, err := Verify(dir, l.PublicKey())
			if err != nil || rep.Truncated() || rep.Entries != tt.wantAfterReopen+1 {
				t.Errorf("Verify = %+v, %v", rep, err)
			}
		})
	}
}

// TestOpenRefusesBrokenTail: recovery cuts only what a crash can leave,
// and keeps and signs what was acknowledged.
func TestOpenRefusesBrokenTail(t *testing.T) {
	tests := []struct {
		name   string
		chain  string // "" is "G -> A -> B -> C"
		alter  func(p *picture)
		want   BreakKind // 0: Open recovers
		refuse string    // Open fails with this in its error
		next   uint64    // the seq the next Append gets when it recovers
	}{
		{name: "whole", alter: func(p *picture) {}, next: 5},
		{name: "torn last entry", alter: func(p *picture) { p.remove("C", true); l := p.line("C", false); *l = (*l)[:20] }, next: 4},
		{name: "unsigned last entry", alter: func(p *picture) { p.remove("C", true) }, next: 4},
		{name: "torn checkpoint", alter: func(p *picture) { l := p.line("C", true); *l = (*l)[:len(*l)-1] }, next: 4},
		// Open reads from the entry the last checkpoint signs (C): an
		// edit before it, of B, is Verify's to find (TestOpenReadsTheTail).
		{name: "edited C", alter: func(p *picture) { p.edit("C", false, func(e *record.Entry) { e.Reason = "x" }) }, want: BreakHash},
		{name: "garbage line at the end", alter: func(p *picture) { *p.line("C", true) += "garbage\n" }, want: BreakMalformed},
		{name: "last checkpoint by another key", alter: func(p *picture) { _, k := testKey(t, 5); p.resign("C", k) }, want: BreakSignature},
		{name: "last signature flipped", alter: func(p *picture) { flipSig(p.line("C", true)) }, want: BreakSignature},

		// Acknowledged before signed (ack.go): kept, and signed at Open.
		{name: "acked tail", chain: "G -> A -> B C ack", alter: func(p *picture) {}, next: 5},
		{name: "acked tail, then an unacked batch", chain: "G -> A ack B C ack", alter: func(p *picture) { p.segs[0] = p.segs[0][:len(p.segs[0])-1] }, next: 3},
		{name: "acked tail, then a torn line", chain: "G -> A ack B ack", alter: func(p *picture) {
			p.segs[0] = p.segs[0][:len(p.segs[0])-1]
			l := p.line("B", false)
			*l = (*l)[:33]
		}, next: 3},
		{name: "acked, alone in the last segment", chain: "G -> A | B C ack", alter: func(p *picture) {}, next: 5},
		{name: "acked, then its checkpoint torn", chain: "G -> A B ack ck", alter: func(p *picture) {
			l := &p.segs[0][len(p.segs[0])-1]
			*l = (*l)[:50]
		}, next: 4},
		{name: "ack made with another key", chain: "G -> A", alter: func(p *picture) { _, k := testKey(t, 5); p.ackBatch(k, "B") }, refuse: "was not made with this chain's key"},
		{name: "ack forged after a valid one", chain: "G -> A ack", alter: func(p *picture) { _, k := testKey(t, 5); p.ackBatch(k, "B") }, refuse: "was not made with this chain's key"},
		{name: "ack with a flipped mac", chain: "G -> A ack", alter: func(p *picture) {
			l := &p.segs[0][len(p.segs[0])-1]
			i := strings.Index(*l, `"mac":"`) + 7
			d := byte('0')
			if (*l)[i] == '0' {
				d = '1'
			}
			*l = (*l)[:i] + string(d) + (*l)[i+1:]
		}, refuse: "was not made with this chain's key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chain := tt.chain
			if chain == "" {
				chain = "G -> A -> B -> C"
			}
			p := draw(t, chain)
			tt.alter(p)
			dir := p.write()
			installKey(t, dir, p)
			l, err := Open(dir, &Options{Logger: quiet})
			if tt.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refuse) {
					if err == nil {
						l.Close()
					}
					t.Fatalf("Open = %v, want an error saying %q", err, tt.refuse)
				}
				return
			}
			if err == nil {
				// Open signs an acknowledged tail before it appends.
				rep, verr := Verify(dir, p.pub)
				if verr != nil || rep.Signed != tt.next-1 || rep.Entries != tt.next-1 {
					t.Fatalf("after Open, Verify = %+v, %v; want %d entries, all signed", rep, verr, tt.next-1)
				}
			}
			if tt.want != 0 {
				var be *BreakError
				if !errors.As(err, &be) || be.Kind != tt.want {
					t.Fatalf("Open = %v, want a %v", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			seq, _, err := l.Append(context.Background(), entryN(0))
			l.Close()
			if err != nil || seq != tt.next {
				t.Fatalf("Append = %d, %v; want %d", seq, err, tt.next)
			}
			if rep, err := Verify(dir, p.pub); err != nil || rep.Truncated() {
				t.Fatalf("Verify = %+v, %v", rep, err)
			}
		})
	}
}

// installKey writes the picture's key files, as Open would have.
func installKey(t *testing.T, dir string, p *picture) {
	t.Helper()
	if err := writeFileSync(dir, PublicKeyFile, MarshalPublicKey(p.pub), 0o644); err != nil {
		t.Fatal(err)
	}
	der := mustPKCS8(t, p)
	if err := writeFileSync(dir, PrivateKeyFile, der, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRecoverEmptyLastSegment(t *testing.T) {
	p := draw(t, "G -> A | B")
	p.remove("B", true)
	p.remove("B", false) // the second segment holds nothing signed
	p.segs[1] = []string{}
	dir := p.write()
	installKey(t, dir, p)
	l := openT(t, dir, nil)
	seq, _, err := l.Append(context.Background(), entryN(0))
	l.Close()
	if err != nil || seq != 3 {
		t.Fatalf("Append = %d, %v", seq, err)
	}
	segs, _ := listSegments(dir)
	var names []string
	for _, s := range segs {
		names = append(names, s.name)
	}
	// The batch went to the recreated segment 3 or the previous one;
	// either way the chain verifies.
	if rep, err := Verify(dir, p.pub); err != nil || rep.Entries != 3 || rep.Truncated() {
		t.Fatalf("Verify = %+v, %v (segments %v)", rep, err, names)
	}
	if diff := cmp.Diff([]string{segmentName(1)}, names); diff != "" {
		t.Errorf("segments (-want +got):\n%s", diff)
	}
}

// gatedFile holds every fsync until gate is closed, and reports each write.
type gatedFile struct {
	segmentFile
	wrote chan int // the bytes of each write
	gate  chan struct{}
}

func (f *gatedFile) Write(b []byte) (int, error) {
	n, err := f.segmentFile.Write(b)
	f.wrote <- n
	return n, err
}

func (f *gatedFile) Sync() error {
	<-f.gate
	return f.segmentFile.Sync()
}

// TestAnsweredAfterFsync holds the first batch's fsync: its appender must
// not be answered, the next appenders fill the pending batch up to
// MaxBatch, the ones after wait for room (or give up, with nothing
// recorded, when their context ends), and once the fsync returns every
// entry is acknowledged, each batch one write with its own checkpoint.
func TestAnsweredAfterFsync(t *testing.T) {
	dir := t.TempDir()
	gf := &gatedFile{wrote: make(chan int, 100), gate: make(chan struct{})}
	l := openT(t, dir, &Options{MaxBatch: 2, wrap: func(f segmentFile) segmentFile {
		gf.segmentFile = f
		return gf
	}})
	type ack struct {
		seq uint64
		err error
	}
	acks := make(chan ack, 10)
	appendAsync := func(ctx context.Context, i int) {
		go func() {
			seq, _, err := l.Append(ctx, entryN(i))
			acks <- ack{seq, err}
		}()
	}
	// waitFor waits until cond holds of the Log's pending batch.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for range 1_000_000 {
			l.mu.Lock()
			ok := cond()
			l.mu.Unlock()
			if ok {
				return
			}
			runtime.Gosched()
		}
		t.Fatalf("gave up waiting for %s", what)
	}

	appendAsync(context.Background(), 0)
	<-gf.wrote // the first batch is written; its fsync is held
	for i := 1; i <= 4; i++ {
		appendAsync(context.Background(), i)
	}
	waitFor("a full pending batch and Appends waiting for room", func() bool {
		return len(l.pending.res) == 2 && l.waiting
	})
	ctx, cancel := context.WithCancel(context.Background())
	appendAsync(ctx, 5)
	cancel()
	if a := <-acks; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("Append waiting for room with its context ended = %d, %v; want context.Canceled", a.seq, a.err)
	}
	select {
	case a := <-acks:
		t.Fatalf("an Append returned (%d, %v) before the fsync covering the first batch", a.seq, a.err)
	default:
	}
	close(gf.gate)
	seen := map[uint64]bool{}
	for range 5 {
		a := <-acks
		if a.err != nil || a.seq < 1 || a.seq > 5 || seen[a.seq] {
			t.Fatalf("Append = %d, %v; want each of seq 1-5 once", a.seq, a.err)
		}
		seen[a.seq] = true
	}
	st := l.Stats()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyWith(dir, l.PublicKey(), &VerifyOptions{AllSignatures: true})
	if err != nil || rep.Entries != 5 || rep.Signed != 5 || rep.Checkpoints == 0 || rep.Checkpoints > st.Batches || st.Largest > 2 || st.Batches < 3 {
		t.Errorf("Verify = %+v, %v; stats %+v: want 5 entries in batches of at most 2, at most one checkpoint each", rep, err, st)
	}
}

// TestAppendPastMaxSeq: the entry numbered MaxSeq is the last; the Append
// after it fails, and so does every later one, with nothing written.
func TestAppendPastMaxSeq(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, &Options{wrap: noSync})
	defer l.Close()
	l.mu.Lock()
	l.next = record.MaxSeq // as if the chain held MaxSeq-1 entries
	l.mu.Unlock()
	if seq, _, err := l.Append(context.Background(), entryN(1)); err != nil || seq != record.MaxSeq {
		t.Fatalf("Append of entry MaxSeq = %d, %v", seq, err)
	}
	for i := range 2 {
		if seq, _, err := l.Append(context.Background(), entryN(2+i)); err == nil || !strings.Contains(err.Error(), "seq would pass") {
			t.Errorf("Append past MaxSeq = %d, %v; want the seq refused", seq, err)
		}
	}
	if st := l.Stats(); st.Entries != 1 {
		t.Errorf("stats %+v: want the one entry", st)
	}
}

// closeRecorder is a gatedFile that records whether the segment was closed
// while a write or an fsync was still under way on it.
type closeRecorder struct {
	gatedFile
	busy         atomic.Int32
	closedInUse  atomic.Bool
	closedBefore atomic.Bool // Close came before any Sync finished
	synced       atomic.Int32
}

func (f *closeRecorder) Sync() error {
	f.busy.Add(1)
	defer f.busy.Add(-1)
	err := f.gatedFile.Sync()
	f.synced.Add(1)
	return err
}

func (f *closeRecorder) Close() error {
	if f.busy.Load() != 0 {
		f.closedInUse.Store(true)
	}
	if f.synced.Load() == 0 {
		f.closedBefore.Store(true)
	}
	return f.gatedFile.Close()
}

// TestCloseDuringCommit: an Append alone commits its entry itself, on its
// own goroutine. Close called while that commit's fsync is held must wait
// for it: the entry is acknowledged, the segment is closed only after the
// fsync, and the appenders that joined meanwhile are committed too (by the
// writer, which the first appender hands them to) or refused with
// ErrClosed — never lost and never acknowledged unwritten.
func TestCloseDuringCommit(t *testing.T) {
	dir := t.TempDir()
	cr := &closeRecorder{gatedFile: gatedFile{wrote: make(chan int, 100), gate: make(chan struct{})}}
	l := openT(t, dir, &Options{wrap: func(f segmentFile) segmentFile {
		cr.segmentFile = f
		return cr
	}})
	type ack struct {
		seq uint64
		err error
	}
	acks := make(chan ack, 10)
	for i := range 4 {
		go func() {
			seq, _, err := l.Append(context.Background(), entryN(i))
			acks <- ack{seq, err}
		}()
		if i == 0 {
			<-cr.wrote // the first entry is written; its fsync is held
		}
	}
	for {
		l.mu.Lock()
		n := len(l.pending.res)
		l.mu.Unlock()
		if n == 3 {
			break
		}
		runtime.Gosched()
	}
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	for range 1000 {
		runtime.Gosched()
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a commit's fsync was held", err)
	default:
	}
	close(cr.gate)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	var acked uint64
	for range 4 {
		a := <-acks
		switch {
		case a.err == nil:
			acked++
		case errors.Is(a.err, ErrClosed):
		default:
			t.Errorf("Append: %v", a.err)
		}
	}
	if cr.closedInUse.Load() || cr.closedBefore.Load() {
		t.Errorf("segment closed while in use (%v) or before the first fsync returned (%v)", cr.closedInUse.Load(), cr.closedBefore.Load())
	}
	rep, err := Verify(dir, l.PublicKey())
	if err != nil || rep.Entries != acked || acked != 4 || rep.Truncated() {
		t.Errorf("after Close: %+v, %v; acked %d, want all 4 (they joined before Close)", rep, err, acked)
	}
}

// TestAppendGivenUpLeaves: an Append whose context has ended by the time it
// joins an empty batch does not commit it itself — it returns ctx.Err() at
// once and the writer commits the entry; an Append with a live context that
// finds nobody committing commits its batch and is answered after the
// fsync, even though its context ends meanwhile (Append's documented
// exception); and a commit that panics fails the log instead of leaving
// later Appends waiting.
func TestAppendGivenUpLeaves(t *testing.T) {
	dir := t.TempDir()
	gf := &gatedFile{wrote: make(chan int, 100), gate: make(chan struct{})}
	l := openT(t, dir, &Options{wrap: func(f segmentFile) segmentFile {
		gf.segmentFile = f
		return gf
	}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := l.Append(ctx, entryN(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with its context ended = %v; want context.Canceled", err)
	}
	<-gf.wrote // the writer wrote the entry; its fsync is held

	ctx2, cancel2 := context.WithCancel(context.Background())
	acked := make(chan error, 1)
	go func() {
		_, _, err := l.Append(ctx2, entryN(2))
		acked <- err
	}()
	close(gf.gate)
	cancel2() // may come before or after the second entry's own commit starts
	if err := <-acked; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("second Append = %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(dir, l.PublicKey())
	if err != nil || rep.Entries < 1 || rep.Truncated() {
		t.Errorf("Verify = %+v, %v; want the given-up entry committed by the writer", rep, err)
	}
}

// panicFile panics in Sync.
type panicFile struct{ segmentFile }

func (panicFile) Sync() error { panic("disk on fire") }

// TestLeadPanicFailsLog: a commit that panics on an appender's goroutine
// fails the log, so the next Append gets an error instead of waiting for
// a committer that is gone, and Close returns.
func TestLeadPanicFailsLog(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, &Options{wrap: func(f segmentFile) segmentFile { return panicFile{f} }})
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the commit's panic did not reach the appender")
			}
		}()
		l.Append(context.Background(), entryN(1))
	}()
	done := make(chan error, 1)
	go func() {
		_, _, err := l.Append(context.Background(), entryN(2))
		done <- err
	}()
	if err := <-done; err == nil {
		t.Fatal("Append after a panicked commit succeeded")
	}
	if err := l.Close(); err == nil {
		t.Error("Close after a panicked commit = nil; want the failure")
	}
}

// TestLongLines: with small blocks and a small line cap, entries whose
// lines span many blocks are read back and verify; an entry too long to be
// read back is refused by Append with nothing written; and a segment with
// a line over the cap (written there by hand) is a malformed line at the
// line's offset, found after reading about the cap, not the whole line.
func TestLongLines(t *testing.T) {
	defer func(b, m int) { blockSize, maxLine = b, m }(blockSize, maxLine)
	blockSize, maxLine = 64, 4096
	dir := t.TempDir()
	l := openT(t, dir, nil)
	for _, n := range []int{10, 300, 1000, 3000} {
		e := entryN(n)
		e.Caps[0].Path = "/home/u/" + strings.Repeat("x", n)
		if _, _, err := l.Append(context.Background(), e); err != nil {
			t.Fatalf("Append of a %d-byte path: %v", n, err)
		}
	}
	big := entryN(1)
	big.Caps[0].Path = "/home/u/" + strings.Repeat("y", 4096)
	if _, _, err := l.Append(context.Background(), big); err == nil || !strings.Contains(err.Error(), "longer than a chain line may be") {
		t.Fatalf("Append of an entry over the line cap = %v; want it refused", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(dir, l.PublicKey())
	if err != nil || rep.Entries != 4 {
		t.Fatalf("Verify = %+v, %v; want the 4 long entries", rep, err)
	}
	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(segs[len(segs)-1].path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	f.Write(bytes.Repeat([]byte{'{'}, 1<<20)) // a megabyte without a newline
	f.Close()
	_, err = Verify(dir, l.PublicKey())
	var be *BreakError
	if !errors.As(err, &be) || be.Kind != BreakMalformed || be.Offset != fi.Size() || !strings.Contains(be.Got, "without a newline") {
		t.Fatalf("Verify of a segment with an overlong line = %v; want a malformed line at offset %d", err, fi.Size())
	}
	if _, err := Open(dir, nil); !errors.As(err, &be) {
		t.Errorf("Open of a chain with an overlong line = %v; want the break", err)
	}
}

// ckGate holds every write that holds only a checkpoint (the writer's
// deferred signature) until release is closed, and reports what it holds.
type ckGate struct {
	segmentFile
	held    chan struct{}
	release chan struct{}
	writes  chan string // the kind of each write's last line
}

func (f *ckGate) Write(b []byte) (int, error) {
	last := b[:len(b)-1]
	if i := bytes.LastIndexByte(last, '\n'); i >= 0 {
		last = last[i+1:]
	}
	kind := string(last[:bytes.IndexByte(last, ':')])
	select {
	case f.writes <- kind:
	default:
	}
	if bytes.HasPrefix(b, checkpointPrefix) {
		f.held <- struct{}{}
		<-f.release
	}
	return f.segmentFile.Write(b)
}

// TestLoneAppendAckedThenSigned: an Append alone is acknowledged after its
// entry and an ack line are fsynced, before any checkpoint is written; a
// crash then leaves an acknowledged, unsigned entry, which Open keeps and
// signs; and the writer signs it right after, without another Append.
func TestLoneAppendAckedThenSigned(t *testing.T) {
	dir := t.TempDir()
	g := &ckGate{held: make(chan struct{}), release: make(chan struct{}), writes: make(chan string, 16)}
	l := openT(t, dir, &Options{wrap: func(f segmentFile) segmentFile { g.segmentFile = f; return g }})
	pub := l.PublicKey()
	seq, _, err := l.Append(context.Background(), entryN(1))
	if err != nil || seq != 1 {
		t.Fatalf("Append = %d, %v", seq, err)
	}
	if kind := <-g.writes; kind != `{"ack"` {
		t.Fatalf("the lone Append's write ends with %s, want an ack line", kind)
	}
	<-g.held // the writer is about to write the checkpoint: crash here
	rep, err := Verify(dir, pub)
	if err != nil || rep.Entries != 1 || rep.Signed != 0 || rep.Acked != 1 {
		t.Fatalf("before the checkpoint, Verify = %+v, %v; want one entry, acked, unsigned", rep, err)
	}
	crashed := t.TempDir()
	copyDir(t, dir, crashed)
	os.Remove(filepath.Join(crashed, "chain.lock"))

	close(g.release)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := Verify(dir, pub); err != nil || rep.Entries != 1 || rep.Signed != 1 || rep.Truncated() {
		t.Fatalf("after Close, Verify = %+v, %v; want the entry signed", rep, err)
	}

	l2 := openT(t, crashed, nil)
	if rep, err := Verify(crashed, pub); err != nil || rep.Entries != 1 || rep.Signed != 1 || rep.Truncated() {
		t.Fatalf("after reopening the crashed copy, Verify = %+v, %v; want the acked entry kept and signed", rep, err)
	}
	seq, _, err = l2.Append(context.Background(), entryN(2))
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	if err != nil || seq != 2 {
		t.Fatalf("Append after recovery = %d, %v; want seq 2", seq, err)
	}
	if rep, err := Verify(crashed, pub); err != nil || rep.Entries != 2 || rep.Signed != 2 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

// TestLoneAppendsRollSegments: appends one at a time, each acknowledged
// before it is signed, across segment rolls: every segment but the last
// still ends with a checkpoint, and everything is signed after Close.
func TestLoneAppendsRollSegments(t *testing.T) {
	for _, size := range []int64{1, 3000} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dir := t.TempDir()
			l := openT(t, dir, &Options{SegmentSize: size, wrap: noSync})
			for i := range 30 {
				if _, _, err := l.Append(context.Background(), entryN(i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			rep, err := VerifyWith(dir, l.PublicKey(), &VerifyOptions{AllSignatures: true, Strict: true})
			if err != nil || rep.Entries != 30 || rep.Signed != 30 || rep.Segments < 5 {
				t.Fatalf("Verify = %+v, %v; want 30 entries, all signed, in several segments", rep, err)
			}
		})
	}
}

// ckFails fails every write of a checkpoint alone, and says when it has.
type ckFails struct {
	segmentFile
	failed chan struct{}
	once   sync.Once
}

func (f *ckFails) Write(b []byte) (int, error) {
	if bytes.HasPrefix(b, checkpointPrefix) {
		f.once.Do(func() { close(f.failed) })
		return 0, errors.New("injected checkpoint write failure")
	}
	return f.segmentFile.Write(b)
}

// TestDeferredCheckpointFails: when the checkpoint after a lone Append's
// ack cannot be written, the Append stays acknowledged (its entry and ack
// are durable), the log fails closed, and a reopen keeps and signs it.
func TestDeferredCheckpointFails(t *testing.T) {
	dir := t.TempDir()
	f := &ckFails{failed: make(chan struct{})}
	l := openT(t, dir, &Options{wrap: func(sf segmentFile) segmentFile { f.segmentFile = sf; return f }})
	if seq, _, err := l.Append(context.Background(), entryN(1)); err != nil || seq != 1 {
		t.Fatalf("Append = %d, %v", seq, err)
	}
	<-f.failed
	// The writer fails the log right after the failed write.
	for l.failed.Load() == nil {
		runtime.Gosched()
	}
	if _, _, err := l.Append(context.Background(), entryN(2)); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("Append after the failure = %v, want the injected failure", err)
	}
	if err := l.Close(); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Errorf("Close = %v, want the injected failure", err)
	}
	l = openT(t, dir, nil)
	seq, _, err := l.Append(context.Background(), entryN(3))
	l.Close()
	if err != nil || seq != 2 {
		t.Fatalf("Append after reopen = %d, %v; want 2", seq, err)
	}
	if rep, err := Verify(dir, l.PublicKey()); err != nil || rep.Entries != 2 || rep.Signed != 2 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

// TestSignaturesShared: batches that come faster than signDelay end with
// ack lines and share one checkpoint, written by the commit after the
// delay, the sign timer, or Close.
func TestSignaturesShared(t *testing.T) {
	defer func(d time.Duration) { signDelay = d }(signDelay)
	signDelay = time.Hour
	dir := t.TempDir()
	l := openT(t, dir, &Options{wrap: noSync})
	for i := range 10 {
		if _, _, err := l.Append(context.Background(), entryN(i)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Verify(dir, l.PublicKey())
	if err != nil || rep.Entries != 10 || rep.Signed != 0 || rep.Acked != 10 || rep.Checkpoints != 0 {
		t.Fatalf("within signDelay, Verify = %+v, %v; want 10 entries acked, none signed", rep, err)
	}
	signDelay = 0 // the next commit finds the delay passed: it signs inline
	if _, _, err := l.Append(context.Background(), entryN(10)); err != nil {
		t.Fatal(err)
	}
	rep, err = Verify(dir, l.PublicKey())
	if err != nil || rep.Entries != 11 || rep.Signed != 11 || rep.Checkpoints != 1 {
		t.Fatalf("after the delay, Verify = %+v, %v; want 11 entries signed by one checkpoint", rep, err)
	}
	signDelay = time.Millisecond // now the timer signs, with no Append to do it
	if _, _, err := l.Append(context.Background(), entryN(11)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		rep, err = Verify(dir, l.PublicKey())
		if err != nil || rep.Signed == 12 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil || rep.Signed != 12 || rep.Checkpoints != 2 {
		t.Fatalf("after the sign timer, Verify = %+v, %v; want 12 entries signed by two checkpoints", rep, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAckedTailAlwaysSigned: however commits, the sign timer and the
// writer interleave, an acknowledged tail is signed within signDelay of
// quiet, without Close: no path leaves it to the next Append.
func TestAckedTailAlwaysSigned(t *testing.T) {
	defer func(d time.Duration) { signDelay = d }(signDelay)
	for _, d := range []time.Duration{0, 20 * time.Microsecond, 300 * time.Microsecond} {
		t.Run(d.String(), func(t *testing.T) {
			signDelay = d
			dir := t.TempDir()
			l := openT(t, dir, &Options{SegmentSize: 20000, MaxBatch: 5, wrap: noSync})
			defer l.Close()
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 100 {
						if _, _, err := l.Append(context.Background(), entryN(g*1000+i)); err != nil {
							t.Error(err)
							return
						}
						if i%10 == g {
							time.Sleep(d)
						}
					}
				})
			}
			wg.Wait()
			var rep Report
			var err error
			for deadline := time.Now().Add(30 * time.Second); ; {
				rep, err = Verify(dir, l.PublicKey())
				if err != nil || rep.Signed == 800 || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
			if err != nil || rep.Entries != 800 || rep.Signed != 800 {
				t.Fatalf("Verify = %+v, %v; want 800 entries, all signed, without Close", rep, err)
			}
		})
	}
}

// slowSyncVar is a segment file whose fsync takes *d.
type slowSyncVar struct {
	segmentFile
	d *atomic.Int64
}

func (f slowSyncVar) Sync() error {
	time.Sleep(time.Duration(f.d.Load()))
	return f.segmentFile.Sync()
}

// TestSignRequestClearedBySignature: the sign timer fires during a commit
// that signs inline (the review's trace): that signature answers the
// timer's request, so the next lone Append's batch waits for signDelay
// instead of being signed at once by a writer woken for a stale request.
func TestSignRequestClearedBySignature(t *testing.T) {
	defer func(d time.Duration) { signDelay = d }(signDelay)
	signDelay = 5 * time.Millisecond
	var d atomic.Int64
	dir := t.TempDir()
	l := openT(t, dir, &Options{wrap: func(f segmentFile) segmentFile { return slowSyncVar{f, &d} }})
	defer l.Close()
	d.Store(int64(10 * time.Millisecond))
	var wg sync.WaitGroup
	wg.Go(func() { l.Append(context.Background(), entryN(1)) })
	time.Sleep(2 * time.Millisecond)
	wg.Go(func() { l.Append(context.Background(), entryN(2)) })
	wg.Wait()
	time.Sleep(20 * time.Millisecond) // let the writer finish
	d.Store(0)
	signDelay = time.Hour
	if _, _, err := l.Append(context.Background(), entryN(3)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // time for a wrongly woken writer to sign
	rep, err := Verify(dir, l.PublicKey())
	if err == nil && rep.Signed == 3 {
		t.Errorf("C was signed at once (checkpoints %d), with signDelay an hour: a stale signWanted woke the writer", rep.Checkpoints)
	}
}

// TestCloseDuringTimerSign: Close while the sign timer's checkpoint
// write is held: Close waits for it, writes no second checkpoint, and the
// chain ends signed.
func TestCloseDuringTimerSign(t *testing.T) {
	defer func(d time.Duration) { signDelay = d }(signDelay)
	signDelay = time.Millisecond
	dir := t.TempDir()
	g := &ckGate{held: make(chan struct{}), release: make(chan struct{}), writes: make(chan string, 16)}
	l := openT(t, dir, &Options{wrap: func(f segmentFile) segmentFile { g.segmentFile = f; return g }})
	if _, _, err := l.Append(context.Background(), entryN(1)); err != nil {
		t.Fatal(err)
	}
	<-g.held // the timer's signTip is writing
	closed := make(chan error)
	go func() { closed <- l.Close() }()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v while the timer's checkpoint was being written", err)
	default:
	}
	close(g.release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyWith(dir, l.PublicKey(), &VerifyOptions{AllSignatures: true, Strict: true})
	if err != nil || rep.Signed != 1 || rep.Checkpoints != 1 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}
