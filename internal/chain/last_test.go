package chain

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// TestLastEntries holds LastEntries, which starts at a late
// segment, to the whole chain read from the start: for every n, the same
// last n entries, in order, whatever segment boundary n falls on.
func TestLastEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fs")
	const total = 90
	logChain(t, dir, &Options{SegmentSize: 6 << 10, MaxBatch: 2}, total)
	starts, _ := SegmentStarts(dir)
	if len(starts) < 4 {
		t.Fatalf("%d segments, want several", len(starts))
	}
	var all []uint64
	Scan(dir, func(e *record.Entry) error { all = append(all, e.Seq); return nil })
	ns := []int{0, 1, 2, total - 1, total, total + 5}
	for _, s := range starts { // every segment boundary, and either side
		for _, d := range []int{-1, 0, 1} {
			if n := total - int(s) + 1 + d; n > 0 {
				ns = append(ns, n)
			}
		}
	}
	for _, n := range ns {
		got, err := LastEntries(dir, n)
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
			if got[i].Seq != want[i] {
				t.Fatalf("n=%d: entry %d is seq %d, want %d", n, i, got[i].Seq, want[i])
			}
		}
	}
}

// TestLastEntriesCrashTail holds LastEntries to the whole read on
// what a crash or a running writer leaves at the end of a chain: a last
// segment just created and still empty, and a last segment that ends in a
// torn line. Every n, around every segment boundary, gives the same last n
// entries.
func TestLastEntriesCrashTail(t *testing.T) {
	build := func(t *testing.T) (string, int) {
		dir := filepath.Join(t.TempDir(), "fs")
		const total = 50
		logChain(t, dir, &Options{SegmentSize: 4 << 10, MaxBatch: 2}, total)
		return dir, total
	}
	for _, tc := range []struct {
		name string
		tail func(t *testing.T, dir string, total int)
	}{
		{"an empty last segment", func(t *testing.T, dir string, total int) {
			p := filepath.Join(dir, fmt.Sprintf("chain-%020d.jsonl", total+1))
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a torn last line", func(t *testing.T, dir string, total int) {
			starts, _ := SegmentStarts(dir)
			p := filepath.Join(dir, fmt.Sprintf("chain-%020d.jsonl", starts[len(starts)-1]))
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"args_hash":"`)
			f.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, total := build(t)
			tc.tail(t, dir, total)
			starts, _ := SegmentStarts(dir)
			if len(starts) < 3 {
				t.Fatalf("%d segments, want several", len(starts))
			}
			var all []uint64
			if err := Scan(dir, func(e *record.Entry) error { all = append(all, e.Seq); return nil }); err != nil {
				t.Fatal(err)
			}
			ns := []int{0, 1, total, total + 1}
			for _, s := range starts {
				for _, d := range []int{-1, 0, 1} {
					if n := total - int(s) + 1 + d; n > 0 {
						ns = append(ns, n)
					}
				}
			}
			for _, n := range ns {
				got, err := LastEntries(dir, n)
				if err != nil {
					t.Fatalf("n=%d: %v", n, err)
				}
				want := all
				if n > 0 && n < len(all) {
					want = all[len(all)-n:]
				}
				var gotSeqs []uint64
				for _, le := range got {
					gotSeqs = append(gotSeqs, le.Seq)
				}
				if fmt.Sprint(gotSeqs) != fmt.Sprint(want) {
					t.Fatalf("n=%d: got %v, want %v", n, gotSeqs, want)
				}
			}
		})
	}
}
