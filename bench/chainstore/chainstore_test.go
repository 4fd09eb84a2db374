package chainstore

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/record"
	_ "modernc.org/sqlite"
)

func entry(i int) *record.Entry {
	d := func(s string) record.Digest { return sha256.Sum256([]byte(s)) }
	return &record.Entry{
		Session:        "0f8e6f4c-6a4b-4d61-9d9f-3b1f0c7c2e11",
		Principal:      "alice@example.com",
		Roles:          []string{"dev", "oncall"},
		Origin:         "interactive",
		Server:         "filesystem",
		Tool:           "read_text_file",
		Bound:          true,
		Tier:           "data-read",
		ToolSchemaHash: d("schema"),
		Caps:           []record.Cap{{Kind: "fs.read", Path: fmt.Sprintf("/home/alice/projects/aegis/internal/chain/file-%d.go", i)}},
		Decision:       record.Allow,
		Mode:           record.Enforce,
		Rules:          []string{"allow-project-reads", "deny-ssh"},
		Reason:         "allowed by allow-project-reads",
		PolicyHash:     d("policy"),
		ArgsHash:       d(fmt.Sprint(i)),
		Envelope:       d(fmt.Sprint("env", i)),
	}
}

// appender is the one method both stores offer.
type appender interface {
	Append(ctx context.Context, e *record.Entry) (uint64, [32]byte, error)
}

// run has appenders goroutines append b.N entries in all and reports the
// rates: entries and fsyncs per second, entries per fsync, the time of one
// fsync and of one round (the wall time between the starts of two fsyncs,
// so a round longer than an fsync shows the disk idle), and the CPU time
// per entry, which other jobs on a shared machine change less than the
// wall time.
func run(b *testing.B, s appender, appenders int, syncUnit string, stats func() (entries, batches uint64, sync time.Duration)) {
	b.ReportAllocs()
	var wg sync.WaitGroup
	var mu sync.Mutex
	left := b.N
	start, cpu0 := time.Now(), cpuTime()
	for g := range appenders {
		wg.Go(func() {
			e := entry(g)
			for {
				mu.Lock()
				if left == 0 {
					mu.Unlock()
					return
				}
				left--
				mu.Unlock()
				e.Time = time.Time{}
				if _, _, err := s.Append(context.Background(), e); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	el, cpu := time.Since(start), cpuTime()-cpu0
	n, batches, syncTime := stats()
	b.ReportMetric(float64(n)/el.Seconds(), "entries/s")
	b.ReportMetric(float64(batches)/el.Seconds(), "fsyncs/s")
	b.ReportMetric(float64(n)/float64(batches), "entries/batch")
	b.ReportMetric(float64(syncTime.Microseconds())/float64(batches), syncUnit)
	b.ReportMetric(float64(el.Microseconds())/float64(batches), "µs/round")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n)/1e3, "cpu-µs/entry")
}

// cpuTime returns the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// memDir returns a directory in memory (/dev/shm, where fsync costs
// nothing): there the stores show the ceiling of their own CPU path,
// which a shared, slow disk otherwise hides.
func memDir(b *testing.B) string {
	dir, err := os.MkdirTemp("/dev/shm", "chainstore")
	if err != nil {
		b.Skip("no /dev/shm")
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// cases are the disks and appender counts each store runs with.
var cases = []struct {
	disk      string
	appenders int
}{{"disk", 1}, {"disk", 64}, {"disk", 256}, {"memory", 64}, {"memory", 256}}

// segmentCases add 1024 appenders, a gateway under heavy load.
var segmentCases = append(cases[:len(cases):len(cases)], struct {
	disk      string
	appenders int
}{"disk", 1024}, struct {
	disk      string
	appenders int
}{"memory", 1024})

func dirFor(b *testing.B, disk string) string {
	if disk == "memory" {
		return memDir(b)
	}
	return b.TempDir()
}

func BenchmarkSegments(b *testing.B) {
	for _, tc := range segmentCases {
		appenders := tc.appenders
		b.Run(fmt.Sprintf("%s/appenders=%d", tc.disk, appenders), func(b *testing.B) {
			l, err := chain.Open(dirFor(b, tc.disk), &chain.Options{Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			run(b, l, appenders, "µs/fsync", func() (uint64, uint64, time.Duration) {
				st := l.Stats()
				return st.Entries, st.Batches, st.SyncTime
			})
		})
	}
}

func BenchmarkSQLite(b *testing.B) {
	for _, tc := range cases {
		appenders := tc.appenders
		b.Run(fmt.Sprintf("%s/appenders=%d", tc.disk, appenders), func(b *testing.B) {
			s, err := openSQLite(filepath.Join(dirFor(b, tc.disk), "chain.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			run(b, s, appenders, "µs/commit", s.stats)
		})
	}
}

// sqliteStore is the SQLite candidate at its best: the same group commit
// (one writer goroutine, one transaction and one fsync per batch, a signed
// checkpoint row per batch), WAL with synchronous=FULL so a commit is
// durable, one prepared INSERT per entry. It stores each entry as its
// stored line with the hash chained in; it skips the chain package's
// splicing of prev and seq into a pre-encoded entry, which only flatters it.
type sqliteStore struct {
	db    *sql.DB
	priv  ed25519.PrivateKey
	queue chan *sqlReq
	done  chan struct{}

	mu                sync.Mutex
	entries, batches  uint64
	syncTime          time.Duration
	next              uint64
	prev              record.Digest
	insEntry, insCkpt *sql.Stmt
}

type sqlReq struct {
	line []byte
	done chan sqlRes
}

type sqlRes struct {
	seq  uint64
	hash [32]byte
	err  error
}

func openSQLite(path string) (*sqliteStore, error) {
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE TABLE entries (seq INTEGER PRIMARY KEY, hash BLOB NOT NULL, line BLOB NOT NULL)`,
		`CREATE TABLE checkpoints (seq INTEGER PRIMARY KEY, hash BLOB NOT NULL, sig BLOB NOT NULL)`,
	} {
		if _, err := db.Exec(q); err != nil {
			return nil, err
		}
	}
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		return nil, fmt.Errorf("journal_mode %q, %v", mode, err)
	}
	var syncMode int
	if err := db.QueryRow(`PRAGMA synchronous`).Scan(&syncMode); err != nil || syncMode != 2 {
		return nil, fmt.Errorf("synchronous %d, %v; want 2 (FULL)", syncMode, err)
	}
	_, priv, _ := ed25519.GenerateKey(nil)
	s := &sqliteStore{db: db, priv: priv, queue: make(chan *sqlReq, 16384), done: make(chan struct{}), next: 1}
	// Prepared up front: the one connection is busy inside a transaction.
	if s.insEntry, err = db.Prepare(`INSERT INTO entries (seq, hash, line) VALUES (?, ?, ?)`); err != nil {
		return nil, err
	}
	if s.insCkpt, err = db.Prepare(`INSERT INTO checkpoints (seq, hash, sig) VALUES (?, ?, ?)`); err != nil {
		return nil, err
	}
	go s.run()
	return s, nil
}

func (s *sqliteStore) Append(ctx context.Context, e *record.Entry) (uint64, [32]byte, error) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	line, err := e.MarshalJSON() // encoded by the caller, as the Log does
	if err != nil {
		return 0, [32]byte{}, err
	}
	r := &sqlReq{line: line, done: make(chan sqlRes, 1)}
	s.queue <- r
	res := <-r.done
	return res.seq, res.hash, res.err
}

func (s *sqliteStore) run() {
	defer close(s.done)
	for r := range s.queue {
		batch := []*sqlReq{r}
	fill:
		for len(batch) < 4096 {
			select {
			case r, ok := <-s.queue:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.commit(batch)
	}
}

func (s *sqliteStore) commit(batch []*sqlReq) {
	fail := func(err error) {
		for _, r := range batch {
			r.done <- sqlRes{err: err}
		}
	}
	t0 := time.Now()
	tx, err := s.db.Begin()
	if err != nil {
		fail(err)
		return
	}
	ins := tx.Stmt(s.insEntry)
	res := make([]sqlRes, len(batch))
	h := sha256.New()
	prev, seq := s.prev, s.next
	for i, r := range batch {
		h.Reset()
		h.Write(prev[:])
		h.Write(r.line)
		var d record.Digest
		h.Sum(d[:0])
		if _, err := ins.Exec(int64(seq), d[:], r.line); err != nil {
			tx.Rollback()
			fail(err)
			return
		}
		res[i] = sqlRes{seq: seq, hash: d}
		prev = d
		seq++
	}
	sig := ed25519.Sign(s.priv, append(prev[:], byte(seq)))
	if _, err := tx.Stmt(s.insCkpt).Exec(int64(seq-1), prev[:], sig); err != nil {
		tx.Rollback()
		fail(err)
		return
	}
	if err := tx.Commit(); err != nil {
		fail(err)
		return
	}
	s.prev, s.next = prev, seq
	s.mu.Lock()
	s.entries += uint64(len(batch))
	s.batches++
	s.syncTime += time.Since(t0)
	s.mu.Unlock()
	for i, r := range batch {
		r.done <- res[i]
	}
}

func (s *sqliteStore) stats() (uint64, uint64, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries, s.batches, s.syncTime
}

func (s *sqliteStore) Close() error {
	close(s.queue)
	<-s.done
	return s.db.Close()
}

// BenchmarkFsync is the disk's reference: records of 1,000 bytes (about an
// entry's size) and of 256 bytes (DESIGN.md's reference figures) appended
// and fdatasynced one at a time, and 64, 256 and 1024 per fdatasync, as the
// Log's batches are.
func BenchmarkFsync(b *testing.B) {
	for _, c := range []struct{ size, per int }{{1000, 1}, {1000, 64}, {1000, 256}, {1000, 1024}, {256, 1}, {256, 64}, {256, 256}} {
		size, per := c.size, c.per
		b.Run(fmt.Sprintf("bytes=%d/records-per-fsync=%d", size, per), func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			rec := make([]byte, size*per)
			start := time.Now()
			syncs := 0
			for i := 0; i < b.N; i += per {
				if _, err := f.Write(rec); err != nil {
					b.Fatal(err)
				}
				if err := syscall.Fdatasync(int(f.Fd())); err != nil {
					b.Fatal(err)
				}
				syncs++
			}
			el := time.Since(start)
			b.ReportMetric(float64(b.N)/el.Seconds(), "records/s")
			b.ReportMetric(float64(el.Microseconds())/float64(syncs), "µs/fsync")
		})
	}
}
