package chain

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/record"
)

// benchEntry is a typical entry: one fs capability, a few rules, every
// digest set. Its stored line is about 900 bytes.
func benchEntry(i int) *record.Entry {
	return &record.Entry{
		Time:           time.Date(2026, 11, 29, 12, 0, 0, i, time.UTC),
		Session:        "0f8e6f4c-6a4b-4d61-9d9f-3b1f0c7c2e11",
		Principal:      "alice@example.com",
		Roles:          []string{"dev", "oncall"},
		Origin:         "interactive",
		Server:         "filesystem",
		Tool:           "read_text_file",
		Bound:          true,
		Tier:           "data-read",
		ToolSchemaHash: digestOf("schema"),
		Caps:           []record.Cap{{Kind: "fs.read", Path: fmt.Sprintf("/home/alice/projects/aegis/internal/chain/file-%d.go", i)}},
		Decision:       record.Allow,
		Mode:           record.Enforce,
		Rules:          []string{"allow-project-reads", "deny-ssh"},
		Reason:         "allowed by allow-project-reads",
		PolicyHash:     digestOf("policy"),
		ArgsHash:       digestOf(fmt.Sprint(i)),
		Envelope:       digestOf(fmt.Sprint("env", i)),
	}
}

// writeBenchChain writes n entries in batches of batch, as a Log would
// under that many concurrent appenders, and returns the directory.
func writeBenchChain(b *testing.B, n, batch int) (string, *picture) {
	b.Helper()
	p := draw(b, "G")
	dir := b.TempDir()
	var out []byte
	prev, seq := p.prev, p.next
	reqs := make([]*request, 0, batch)
	flush := func() {
		out, _, prev, seq = appendBatch(out, nil, p.priv, prev, seq, reqs)
		reqs = reqs[:0]
	}
	for i := range n - 1 {
		e := benchEntry(i)
		r := newRequest(b, e)
		reqs = append(reqs, r)
		if len(reqs) == batch {
			flush()
		}
	}
	if len(reqs) > 0 {
		flush()
	}
	data := append([]byte(p.segs[0][0]+p.segs[0][1]), out...)
	if err := os.WriteFile(filepath.Join(dir, segmentName(1)), data, 0o600); err != nil {
		b.Fatal(err)
	}
	return dir, p
}

// BenchmarkVerify verifies a chain of 100,000 entries and reports its speed
// against SHA-256 of one big buffer of the same size, measured in the same
// run (x-sha256 is the ratio; the budget is 0.5).
func BenchmarkVerify(b *testing.B) {
	const n = 100_000
	for _, tc := range []struct {
		batch int
		all   bool
	}{{64, false}, {64, true}, {1, false}} {
		b.Run(fmt.Sprintf("batch=%d/all-signatures=%v", tc.batch, tc.all), func(b *testing.B) {
			dir, p := writeBenchChain(b, n, tc.batch)
			rep, err := Verify(dir, p.pub)
			if err != nil || rep.Entries != n {
				b.Fatal(rep, err)
			}
			// SHA-256 of one buffer of the same size runs between the
			// verifications, so both see the same machine.
			buf := make([]byte, rep.Bytes)
			// CPU time (which excludes time a busy host steals from this
			// machine) is reported beside wall time.
			var verifyTime, shaTime, verifyCPU, shaCPU time.Duration
			b.SetBytes(rep.Bytes)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				c0, t0 := cpuTime(), time.Now()
				if _, err := VerifyWith(dir, p.pub, &VerifyOptions{AllSignatures: tc.all}); err != nil {
					b.Fatal(err)
				}
				c1, t1 := cpuTime(), time.Now()
				b.StopTimer()
				sha256.Sum256(buf)
				shaTime += time.Since(t1)
				shaCPU += cpuTime() - c1
				b.StartTimer()
				verifyTime += t1.Sub(t0)
				verifyCPU += c1 - c0
			}
			b.ReportMetric(float64(rep.Bytes)*float64(b.N)/shaTime.Seconds()/1e6, "sha256-MB/s")
			b.ReportMetric(shaTime.Seconds()/verifyTime.Seconds(), "x-sha256")
			b.ReportMetric(shaCPU.Seconds()/verifyCPU.Seconds(), "x-sha256-cpu")
			b.ReportMetric(float64(rep.Bytes)/n, "B/entry")
		})
	}
}

// cpuTime returns the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScan reads a chain of 100,000 entries, decoding each fully, and
// reports the time per entry; recheck of 1,000,000 entries has 2 s in all,
// policy decisions included.
func BenchmarkScan(b *testing.B) {
	const n = 100_000
	dir, _ := writeBenchChain(b, n, 64)
	b.ReportAllocs()
	start, cpu := time.Now(), cpuTime()
	for b.Loop() {
		var count int
		if err := Scan(dir, func(e *record.Entry) error { count++; return nil }); err != nil || count != n {
			b.Fatal(count, err)
		}
	}
	per := time.Since(start).Seconds() / float64(b.N) / n
	b.ReportMetric(per*1e9, "ns/entry")
	b.ReportMetric(per*1e6, "s/1M-entries")
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N)/n, "cpu-ns/entry")
}

// BenchmarkAppend measures durable appends (written and fdatasynced) from
// concurrent appenders on this machine's disk, with the fsync figures of
// the same run: entries/s is the budget (200,000). µs/round is the wall
// time per batch; beyond µs/fsync it is the time the disk waits for the
// Log. bench/chainstore runs the same beside raw fsync figures.
func BenchmarkAppend(b *testing.B) {
	for _, appenders := range []int{1, 64, 256, 1024} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			benchAppend(b, b.TempDir(), appenders, nil)
		})
	}
}

// BenchmarkAppendMemory is BenchmarkAppend in /dev/shm, where fsync costs
// nothing: the Log's CPU ceiling.
func BenchmarkAppendMemory(b *testing.B) {
	for _, appenders := range []int{64, 256, 1024} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			dir, err := os.MkdirTemp("/dev/shm", "chainbench")
			if err != nil {
				b.Skip("no /dev/shm")
			}
			defer os.RemoveAll(dir)
			benchAppend(b, dir, appenders, nil)
		})
	}
}

// BenchmarkAppendSimulatedDisk is BenchmarkAppend on a disk whose fsync
// takes a fixed 140 µs, the latency implied by the reference figure (64
// records per fsync at 460,000 records/s), to see the Log's own limits when
// the real disk is shared and slow.
func BenchmarkAppendSimulatedDisk(b *testing.B) {
	for _, appenders := range []int{64, 256} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			benchAppend(b, b.TempDir(), appenders, func(f segmentFile) segmentFile { return slowSync{f, 140 * time.Microsecond} })
		})
	}
}

type slowSync struct {
	segmentFile
	d time.Duration
}

// Sync blocks its thread in the kernel for d, as an fsync does (with the
// thread's timer slack at 1 µs, it lasts d plus 10-25 µs here). time.Sleep
// would park the goroutine on the runtime's timers, which woke it a
// millisecond late on this machine: the figures of the 140 µs "fsync" were
// those of a 1.1 ms one.
func (s slowSync) Sync() error {
	blockFor(s.d)
	return nil
}

func benchAppend(b *testing.B, dir string, appenders int, wrap func(segmentFile) segmentFile) {
	l := openT(b, dir, &Options{wrap: wrap})
	defer l.Close()
	b.ReportAllocs()
	var wg sync.WaitGroup
	// The appenders take the b.N entries from one counter, an atomic one so
	// that a contended mutex of the benchmark's does not weigh on the Log's
	// figures at 1024 appenders.
	var left atomic.Int64
	left.Store(int64(b.N))
	start, cpu := time.Now(), cpuTime()
	for g := range appenders {
		wg.Go(func() {
			e := benchEntry(g)
			for left.Add(-1) >= 0 {
				e.Time = time.Time{}
				if _, _, err := l.Append(context.Background(), e); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	cpuPer := float64((cpuTime() - cpu).Nanoseconds())
	st := l.Stats()
	b.ReportMetric(float64(st.Entries)/el.Seconds(), "entries/s")
	b.ReportMetric(float64(st.Batches)/el.Seconds(), "fsyncs/s")
	b.ReportMetric(float64(st.Entries)/float64(st.Batches), "entries/batch")
	b.ReportMetric(float64(st.SyncTime.Microseconds())/float64(st.Batches), "µs/fsync")
	b.ReportMetric(float64(el.Microseconds())/float64(st.Batches), "µs/round")
	b.ReportMetric(cpuPer/float64(st.Entries)/1e3, "cpu-µs/entry")
}

// BenchmarkOpen opens (and closes) a chain whose last segment holds about
// 1 MiB and one whose last segment holds about 64 MiB, in turn in each
// round, so both see the same machine, and reports each Open's time and
// their ratio (x-64MiB/1MiB): start-up must not grow with the size of the
// last segment (what aegis run does first is open its lane). Between the
// Opens, off the timer, it times the walk of each whole last segment that
// Open's recovery did before it read only the tail (µs/whole-…,
// x-whole-64MiB/1MiB): the figures of before, in the same run.
func BenchmarkOpen(b *testing.B) {
	const perEntry = 1000 // bytes of a benchEntry line with its share of checkpoints, about
	sizes := []struct {
		name string
		n    int
	}{{"1MiB", 1 << 20 / perEntry}, {"64MiB", 64 << 20 / perEntry}}
	dirs := make([]string, len(sizes))
	mib := make([]float64, len(sizes))
	var pub ed25519.PublicKey
	for i, s := range sizes {
		dir, p := writeBenchChain(b, s.n, 64)
		installKeyFast(b, dir, p)
		fi, err := os.Stat(filepath.Join(dir, segmentName(1)))
		if err != nil {
			b.Fatal(err)
		}
		mib[i] = float64(fi.Size()) / (1 << 20)
		dirs[i], pub = dir, p.pub
	}
	open := func(dir string) time.Duration {
		t0 := time.Now()
		l, err := Open(dir, &Options{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	whole := func(dir string) time.Duration {
		t0 := time.Now()
		s := segment{first: 1, name: segmentName(1), path: filepath.Join(dir, segmentName(1))}
		if _, err := walkWhole(&Log{pub: pub}, s); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	for _, dir := range dirs {
		open(dir) // warm the page cache
	}
	took := make([]time.Duration, len(sizes))
	tookWhole := make([]time.Duration, len(sizes))
	b.ReportAllocs()
	round := 0
	for b.Loop() {
		// In turn, each first every other round, so that neither pays
		// more for what the round before left (its garbage, the caches).
		for k := range dirs {
			i := (k + round) % len(dirs)
			took[i] += open(dirs[i])
		}
		b.StopTimer()
		for k := range dirs {
			i := (k + round) % len(dirs)
			tookWhole[i] += whole(dirs[i])
		}
		runtime.GC()
		round++
		b.StartTimer()
	}
	for i, s := range sizes {
		b.ReportMetric(mib[i], "MiB-"+s.name)
		b.ReportMetric(float64(took[i].Microseconds())/float64(b.N), "µs/open-"+s.name)
		b.ReportMetric(float64(tookWhole[i].Microseconds())/float64(b.N), "µs/whole-"+s.name)
	}
	b.ReportMetric(took[1].Seconds()/took[0].Seconds(), "x-64MiB/1MiB")
	b.ReportMetric(tookWhole[1].Seconds()/tookWhole[0].Seconds(), "x-whole-64MiB/1MiB")
}
