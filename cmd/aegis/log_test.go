package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/record"
)

// logChain writes a chain of total entries into dir, in segments of
// segSize bytes, and closes it.
func logChain(t *testing.T, dir string, segSize int64, total int) {
	t.Helper()
	l, err := chain.Open(dir, &chain.Options{SegmentSize: segSize, MaxBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range total {
		e := &record.Entry{
			Time: time.Date(2026, 11, 30, 0, 0, i, 0, time.UTC), Session: "s", Principal: "p",
			Server: "fs", Tool: "read", Decision: "allow", Mode: "enforce",
			Rules: []string{"r"}, Caps: []record.Cap{{Kind: "fs.read", Path: fmt.Sprintf("/f/%d", i)}},
			Reason: "ok", Origin: "interactive",
		}
		if _, _, err := l.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLastEntries holds the log's tail read, which starts at a late
// segment, to the whole chain read from the start: for every n, the same
// last n entries, in order, whatever segment boundary n falls on.
func TestLastEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fs")
	const total = 90
	logChain(t, dir, 6<<10, total)
	starts, _ := chain.SegmentStarts(dir)
	if len(starts) < 4 {
		t.Fatalf("%d segments, want several", len(starts))
	}
	var all []uint64
	chain.Scan(dir, func(e *record.Entry) error { all = append(all, e.Seq); return nil })
	ns := []int{0, 1, 2, total - 1, total, total + 5}
	for _, s := range starts { // every segment boundary, and either side
		for _, d := range []int{-1, 0, 1} {
			if n := total - int(s) + 1 + d; n > 0 {
				ns = append(ns, n)
			}
		}
	}
	for _, n := range ns {
		got, err := lastEntries(lane{n: 1, dir: dir}, n)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		want := all
		if n > 0 && n < len(all) {
			want = all[len(all)-n:]
		}
		if len(got) != len(want) {
			t.Fatalf("n=%d: %d entries, want %d", n, len(got), len(want))
		}
		for i := range got {
			if got[i].e.Seq != want[i] {
				t.Fatalf("n=%d: entry %d is seq %d, want %d", n, i, got[i].e.Seq, want[i])
			}
		}
	}
}
