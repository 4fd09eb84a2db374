package chain

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/record"
)

// laneOpts are the options the lane tests open with: recovery logged
// nowhere.
var laneOpts = &Options{Logger: quiet}

func TestLanes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "chain")
	if lanes, err := Lanes(root, "fs"); err != nil || len(lanes) != 0 {
		t.Errorf("Lanes with no root = %v, %v; want none", lanes, err)
	}
	if names, err := Servers(root); err != nil || len(names) != 0 {
		t.Errorf("Servers with no root = %v, %v; want none", names, err)
	}
	for _, d := range []string{"fs@3", "fs", "fs@2", "fs@02", "fs@1", ".fs@4", "fsx@2"} {
		os.MkdirAll(filepath.Join(root, d), 0o700)
	}
	os.WriteFile(filepath.Join(root, "fs@5"), nil, 0o600) // a file, not a lane

	if names, err := Servers(root); err != nil || strings.Join(names, ", ") != "fs, fsx" {
		t.Errorf("Servers = %v, %v; want fs, fsx", names, err)
	}
	lanes, err := Lanes(root, "fs")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ln := range lanes {
		got = append(got, filepath.Base(ln.Dir)+"="+ln.EntryName(1))
		if ln.Dir != LaneDir(root, "fs", ln.N) {
			t.Errorf("lane %d is %s, want %s", ln.N, ln.Dir, LaneDir(root, "fs", ln.N))
		}
	}
	if strings.Join(got, " ") != "fs=1 fs@2=1@2 fs@3=1@3" {
		t.Errorf("lanes of fs = %v", got)
	}
	if lanes, err := Lanes(root, "new"); err != nil || len(lanes) != 0 {
		t.Errorf("lanes of a server with no chain yet = %v, %v; want none", lanes, err)
	}
	if lanes, _ := Lanes(root, "fs@2"); len(lanes) != 0 {
		t.Errorf("Lanes took a lane's name for a server's: %v", lanes)
	}
	os.RemoveAll(filepath.Join(root, "fsx@2"))
	if names, err := Servers(root); err != nil || len(names) != 1 || names[0] != "fs" {
		t.Errorf("Servers = %v, %v; want fs alone", names, err)
	}
}

func TestOpenLane(t *testing.T) {
	root := filepath.Join(t.TempDir(), "chain")
	var logs []*Log
	defer func() {
		for _, l := range logs {
			l.Close()
		}
	}()
	for n := 1; n <= MaxLanes; n++ {
		l, ln, err := OpenLane(root, "fs", laneOpts)
		if err != nil {
			t.Fatalf("lane %d: %v", n, err)
		}
		logs = append(logs, l)
		if ln.N != n || ln.Dir != LaneDir(root, "fs", n) {
			t.Fatalf("open %d took lane %d (%s)", n, ln.N, ln.Dir)
		}
		if !bytes.Equal(l.PublicKey(), logs[0].PublicKey()) {
			t.Fatalf("lane %d signs with its own key", n)
		}
	}
	if _, _, err := OpenLane(root, "fs", laneOpts); err == nil || !strings.Contains(err.Error(), "all in use") {
		t.Fatalf("open with every lane held = %v, want all in use", err)
	}
	// Another server's lanes are its own.
	l, ln, err := OpenLane(root, "other", nil)
	if err != nil || ln.N != 1 {
		t.Fatalf("another server = lane %d, %v", ln.N, err)
	}
	l.Close()
	// A lane let go is the next one taken.
	logs[4].Close()
	l, ln, err = OpenLane(root, "fs", laneOpts)
	if err != nil || ln.N != 5 {
		t.Fatalf("after lane 5 closed, open took lane %d, %v", ln.N, err)
	}
	logs[4] = l
	// A name that is not a server's names no lane: not one outside root,
	// nor a lane of another server.
	for _, bad := range []string{"", "../x", "fs@2", ".fs"} {
		if l, _, err := OpenLane(root, bad, laneOpts); err == nil {
			l.Close()
			t.Errorf("OpenLane(%q) opened a lane", bad)
		}
	}
}

// TestOpenLaneAtOnce opens lanes of a server that has no chain yet, all at
// the same moment, as two clients started together do: each takes a lane
// of its own, and all sign with one key.
func TestOpenLaneAtOnce(t *testing.T) {
	for round := range 10 {
		root := filepath.Join(t.TempDir(), "chain")
		const n = 8
		logs, lanes := openLanesAtOnce(t, root, n)
		taken := map[int]bool{}
		for i := range n {
			defer logs[i].Close()
			if taken[lanes[i].N] || lanes[i].N < 1 || lanes[i].N > n {
				t.Fatalf("round %d: lane %d taken twice, or out of 1..%d", round, lanes[i].N, n)
			}
			taken[lanes[i].N] = true
			if !bytes.Equal(logs[i].PublicKey(), logs[0].PublicKey()) {
				t.Fatalf("round %d: lanes %d and %d sign with different keys", round, lanes[0].N, lanes[i].N)
			}
		}
	}
}

// openLanesAtOnce has n goroutines take a lane of server fs under root at
// the same moment, and returns their logs and lanes, in the goroutines'
// order.
func openLanesAtOnce(t *testing.T, root string, n int) ([]*Log, []Lane) {
	t.Helper()
	logs := make([]*Log, n)
	lanes := make([]Lane, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { logs[i], lanes[i], errs[i] = OpenLane(root, "fs", laneOpts) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return logs, lanes
}

func TestTidyLanes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "chain")
	// Four lanes with an entry each, closed (signed); then lane 3 and 4
	// as a crash leaves them (the checkpoint after the last ack gone) and
	// lane 4 altered in the middle too; lane 2 held by a running writer.
	var logs []*Log
	for range 4 {
		l, _, err := OpenLane(root, "fs", laneOpts)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.Append(context.Background(), &record.Entry{Time: time.Unix(1, 0), Session: "s", Principal: "p", Server: "fs", Tool: "t", Decision: "allow", Mode: "enforce", Caps: []record.Cap{}, Rules: []string{"r"}, Reason: "ok", Origin: "interactive"}); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	for _, l := range logs {
		l.Close()
	}
	for _, n := range []int{3, 4} {
		seg := filepath.Join(LaneDir(root, "fs", n), "chain-00000000000000000001.jsonl")
		b, _ := os.ReadFile(seg)
		b = b[:bytes.LastIndexByte(b[:len(b)-1], '\n')+1] // the checkpoint
		if n == 4 {
			b = bytes.Replace(b, []byte(`"tool":"t"`), []byte(`"tool":"u"`), 1)
		}
		os.WriteFile(seg, b, 0o600)
	}
	held, err := Open(LaneDir(root, "fs", 2), &Options{Logger: quiet, KeyDir: LaneDir(root, "fs", 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// Lane 2 unsigned as its running writer leaves it between a batch and
	// its checkpoint: TidyLanes must find it held and leave it, silently.
	seg2 := filepath.Join(LaneDir(root, "fs", 2), "chain-00000000000000000001.jsonl")
	b2, _ := os.ReadFile(seg2)
	os.WriteFile(seg2, b2[:bytes.LastIndexByte(b2[:len(b2)-1], '\n')+1], 0o600)
	if signed, _ := TailSigned(LaneDir(root, "fs", 2)); signed {
		t.Fatal("lane 2 still ends signed")
	}

	err = TidyLanes(root, "fs", Lane{N: 1, Dir: LaneDir(root, "fs", 1)}, laneOpts)
	if signed, _ := TailSigned(LaneDir(root, "fs", 3)); !signed {
		t.Error("lane 3, left unsigned by a crash, was not signed")
	}
	pub := logs[0].PublicKey()
	if rep, err := Verify(LaneDir(root, "fs", 3), pub); err != nil || rep.Truncated() || rep.Entries != 1 {
		t.Errorf("lane 3 after tidying: %+v, %v; want its entry, signed", rep, err)
	}
	if signed, _ := TailSigned(LaneDir(root, "fs", 4)); signed {
		t.Error("lane 4, altered in the middle, was signed")
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "lane 4 of server \"fs\"'s chain ends unsigned and could not be opened") {
		t.Errorf("TidyLanes = %v; want lane 4's error alone", err)
	}
}

// laneEntryN is a recordable entry, told apart by i, at time at.
func laneEntryN(i int, at time.Time) *record.Entry {
	e := entryN(i)
	e.Time = at
	return e
}

// appendN appends n entries to l, the i-th at base+i seconds, and closes it.
func appendN(t *testing.T, l *Log, n int, base time.Time) {
	t.Helper()
	for i := range n {
		if _, _, err := l.Append(context.Background(), laneEntryN(i, base.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// openLanes opens k lanes of fs under root at once (each held while the
// next opens), appends per[i] entries to lane i+1, and closes them all.
func openLanes(t *testing.T, root string, per ...int) {
	t.Helper()
	logs := make([]*Log, len(per))
	for i := range per {
		l, ln, err := OpenLane(root, "fs", laneOpts)
		if err != nil || ln.N != i+1 {
			t.Fatalf("OpenLane %d = lane %d, %v", i+1, ln.N, err)
		}
		logs[i] = l
	}
	base := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for i, l := range logs {
		appendN(t, l, per[i], base.Add(time.Duration(i)*time.Hour))
	}
}
