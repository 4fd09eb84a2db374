package chain

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// TestTruncateEveryOffset plays a crash during the last batch at every
// byte: the chain must verify as truncated (never as tampered), Open must
// recover, and appending must continue from the last acknowledged entry.
func TestTruncateEveryOffset(t *testing.T) {
	for i, spec := range []string{
		"G -> A -> B -> C",   // the last batch is one entry and its checkpoint
		"G -> A -> B C D",    // the last batch is three entries and a checkpoint
		"G -> A | B -> C D",  // ... in a second segment
		"G -> A | B C D E F", // a second segment holding one batch only
	} {
		t.Run(spec, func(t *testing.T) {
			p := draw(t, spec)
			full, last, data := writeLastSegment(t, p)
			whole, err := Verify(full, p.pub)
			if err != nil {
				t.Fatal(err)
			}
			// The last batch starts after the second-to-last checkpoint.
			lines := splitLines(data)
			start, signedBefore := 0, uint64(0)
			for i := len(lines) - 2; i >= 0; i-- {
				if ck, err := decodeCheckpoint(lines[i].b); err == nil {
					start, signedBefore = lines[i].end, ck.seq
					break
				}
			}
			if start == 0 && last.first > 1 { // not the first segment
				signedBefore = last.first - 1
			}
			starts := map[int]bool{}
			for _, l := range lines {
				starts[l.end] = true
			}
			// Verify runs at every offset of the last batch; recovery, which
			// fsyncs, at every offset of the last line of the first picture
			// and around every line boundary of the others.
			recoverAt := func(cut int, lineStarts map[int]bool) bool {
				if i == 0 {
					return cut >= len(data)-lastLineLen(data)
				}
				return lineStarts[cut] || lineStarts[cut-1] || lineStarts[cut+1] || cut%41 == 0 || cut == len(data)
			}
			for cut := start; cut <= len(data); cut++ {
				dir := memTempDir(t)
				copyDir(t, full, dir)
				if err := os.Truncate(filepath.Join(dir, last.name), int64(cut)); err != nil {
					t.Fatal(err)
				}
				rep, err := Verify(dir, p.pub)
				if err != nil {
					t.Fatalf("cut at %d of %d: Verify = %v, want a truncation", cut, len(data), err)
				}
				wantSigned := signedBefore
				if cut == len(data) {
					wantSigned = whole.Signed
				}
				// A cut at a line boundary before the batch looks whole.
				if rep.Signed != wantSigned || (cut > start && cut < len(data)) != rep.Truncated() {
					t.Fatalf("cut at %d of %d: report %+v, want %d signed", cut, len(data), rep, wantSigned)
				}

				if !recoverAt(cut, starts) {
					continue
				}
				installKeyFast(t, dir, p)
				l, err := Open(dir, &Options{Logger: quiet, wrap: noSync})
				if err != nil {
					t.Fatalf("cut at %d: Open = %v", cut, err)
				}
				seq, _, err := l.Append(context.Background(), entryN(cut))
				l.Close()
				if err != nil || seq != wantSigned+1 {
					t.Fatalf("cut at %d: Append = %d, %v; want seq %d", cut, seq, err, wantSigned+1)
				}
				rep, err = Verify(dir, p.pub)
				if err != nil || rep.Truncated() || rep.Entries != wantSigned+1 {
					t.Fatalf("cut at %d: after recovery Verify = %+v, %v", cut, rep, err)
				}
			}
		})
	}
}

// TestTruncateEveryOffsetAcks cuts the last segment of chains with ack
// lines around every line boundary and at offsets between, as a power cut
// may: Verify passes; Open keeps
// exactly the entries up to the last complete checkpoint or ack line (the
// acknowledged ones), signs them, and continues the chain.
func TestTruncateEveryOffsetAcks(t *testing.T) {
	for _, spec := range []string{
		"G -> A ack B ack",         // acked batches, never signed
		"G -> A | B ack C ack ck",  // acked, then the timer's checkpoint
		"G -> A ack ck -> B C ack", // a checkpoint, then an acked batch
		"G -> A ack B C",           // acked, then a batch signed inline
	} {
		t.Run(spec, func(t *testing.T) {
			p := draw(t, spec)
			full, last, data := writeLastSegment(t, p)
			starts := map[int]bool{0: true, len(data): true}
			for _, l := range splitLines(data) {
				starts[l.end] = true
			}
			for cut := 0; cut <= len(data); cut++ {
				// Around each line boundary, and at every 17th offset
				// (TestTruncateEveryOffset takes every one of a batch).
				if !starts[cut] && !starts[cut-1] && !starts[cut+1] && cut%17 != 0 {
					continue
				}
				// The entries a Log acknowledged before this cut: up to
				// the last whole checkpoint or ack line.
				keep := last.first - 1
				for _, l := range splitLines(data[:cut]) {
					if ck, err := decodeCheckpoint(l.b); err == nil {
						keep = ck.seq
					} else if k, err := decodeAck(l.b); err == nil {
						keep = k.seq
					}
				}
				dir := memTempDir(t)
				copyDir(t, full, dir)
				if err := os.Truncate(filepath.Join(dir, last.name), int64(cut)); err != nil {
					t.Fatal(err)
				}
				rep, err := Verify(dir, p.pub)
				if err != nil || max(rep.Signed, rep.Acked) != keep {
					t.Fatalf("cut at %d of %d: Verify = %+v, %v; want %d signed or acked", cut, len(data), rep, err, keep)
				}
				installKeyFast(t, dir, p)
				l, err := Open(dir, &Options{Logger: quiet, wrap: noSync})
				if err != nil {
					t.Fatalf("cut at %d: Open = %v", cut, err)
				}
				if rep, err := Verify(dir, p.pub); err != nil || rep.Truncated() || rep.Entries != keep {
					t.Fatalf("cut at %d: after Open, Verify = %+v, %v; want %d entries, all signed", cut, rep, err, keep)
				}
				seq, _, err := l.Append(context.Background(), entryN(cut))
				l.Close()
				if err != nil || seq != keep+1 {
					t.Fatalf("cut at %d: Append = %d, %v; want seq %d", cut, seq, err, keep+1)
				}
				if rep, err := Verify(dir, p.pub); err != nil || rep.Truncated() || rep.Entries != keep+1 {
					t.Fatalf("cut at %d: after Close, Verify = %+v, %v", cut, rep, err)
				}
			}
		})
	}
}

// writeLastSegment lays p out in a directory and returns it, its last
// segment and that segment's bytes.
func writeLastSegment(t testing.TB, p *picture) (string, segment, []byte) {
	t.Helper()
	full := p.write()
	segs, err := listSegments(full)
	if err != nil {
		t.Fatal(err)
	}
	last := segs[len(segs)-1]
	data, err := os.ReadFile(last.path)
	if err != nil {
		t.Fatal(err)
	}
	return full, last, data
}

// memTempDir returns a temporary directory in memory (/dev/shm) where
// there is one: the offset tests check recovery logic, thousands of times,
// and need not wait for a disk.
func memTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "chaintest")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func lastLineLen(data []byte) int {
	lines := splitLines(data)
	return len(lines[len(lines)-1].b) + 1
}

// noSync skips the fdatasync of appends, for tests of logic, not of disks.
func noSync(f segmentFile) segmentFile { return noSyncFile{f} }

type noSyncFile struct{ segmentFile }

func (noSyncFile) Sync() error { return nil }

func installKeyFast(t testing.TB, dir string, p *picture) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, PublicKeyFile), MarshalPublicKey(p.pub), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, PrivateKeyFile), mustPKCS8(t, p), 0o600); err != nil {
		t.Fatal(err)
	}
}

type span struct {
	b   []byte
	end int // offset after the newline
}

func splitLines(data []byte) []span {
	var out []span
	start := 0
	for i, c := range data {
		if c == '\n' {
			out = append(out, span{data[start:i], i + 1})
			start = i + 1
		}
	}
	return out
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	des, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(from, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, de.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKillDuringLoad runs a writer in a child process, SIGKILLs it while
// 16 goroutines append, and checks that every seq the child reported as
// acknowledged is in a chain that verifies, and that Open continues it.
// A SIGKILL keeps what reached the page cache, so this tests the process
// side of R25; TestTruncateEveryOffset covers what a power cut can leave.
func TestKillDuringLoad(t *testing.T) {
	if os.Getenv("CHAIN_CRASH_CHILD") != "" {
		crashChild()
		return
	}
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillDuringLoad$")
	cmd.Env = append(os.Environ(), "CHAIN_CRASH_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pub ed25519.PublicKey
	acked := map[uint64]bool{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if pub == nil {
			b, err := os.ReadFile(filepath.Join(dir, PublicKeyFile))
			if err != nil {
				t.Fatal(err)
			}
			if pub, err = ParsePublicKey(b); err != nil {
				t.Fatal(err)
			}
		}
		seq, err := strconv.ParseUint(line, 10, 64)
		if err != nil {
			t.Fatalf("child said %q", line)
		}
		acked[seq] = true
		if len(acked) == 3000 {
			cmd.Process.Signal(syscall.SIGKILL)
			break
		}
	}
	cmd.Wait()
	var max uint64
	for s := range acked {
		max = maxU(max, s)
	}
	rep, err := Verify(dir, pub)
	if err != nil {
		t.Fatalf("after SIGKILL: Verify = %v", err)
	}
	// Acknowledged means signed, or marked by an ack line (signed within
	// signDelay, or by the next Open).
	kept := maxU(rep.Signed, rep.Acked)
	if kept < max {
		t.Fatalf("after SIGKILL: %d entries signed and %d acked, but seq %d was acknowledged", rep.Signed, rep.Acked, max)
	}
	l, err := Open(dir, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	seq, _, err := l.Append(context.Background(), entryN(0))
	l.Close()
	if err != nil || seq != kept+1 {
		t.Fatalf("Append after recovery = %d, %v; want %d", seq, err, kept+1)
	}
	if after, err := Verify(dir, pub); err != nil || after.Truncated() || after.Entries != kept+1 {
		t.Fatalf("after recovery, Verify = %+v, %v; want %d entries, all signed", after, err, kept+1)
	}
	seen := map[uint64]bool{}
	if err := Scan(dir, func(e *record.Entry) error { seen[e.Seq] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	for s := range acked {
		if !seen[s] {
			t.Errorf("acknowledged seq %d is missing", s)
		}
	}
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

func crashChild() {
	l, err := Open(os.Getenv("CHAIN_CRASH_CHILD"), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				seq, _, err := l.Append(context.Background(), entryN(g*1_000_000+i))
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Fprintln(w, seq)
				w.Flush()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
