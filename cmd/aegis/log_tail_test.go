package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/record"
)

// TestLastEntriesCrashTail holds the log's tail read to the whole read on
// what a crash or a running writer leaves at the end of a chain: a last
// segment just created and still empty, and a last segment that ends in a
// torn line. Every n, around every segment boundary, gives the same last n
// entries.
func TestLastEntriesCrashTail(t *testing.T) {
	build := func(t *testing.T) (string, int) {
		dir := filepath.Join(t.TempDir(), "fs")
		const total = 50
		logChain(t, dir, 4<<10, total)
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
			starts, _ := chain.SegmentStarts(dir)
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
			starts, _ := chain.SegmentStarts(dir)
			if len(starts) < 3 {
				t.Fatalf("%d segments, want several", len(starts))
			}
			var all []uint64
			if err := chain.Scan(dir, func(e *record.Entry) error { all = append(all, e.Seq); return nil }); err != nil {
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
				got, err := lastEntries(lane{n: 1, dir: dir}, n)
				if err != nil {
					t.Fatalf("n=%d: %v", n, err)
				}
				want := all
				if n > 0 && n < len(all) {
					want = all[len(all)-n:]
				}
				var gotSeqs []uint64
				for _, le := range got {
					gotSeqs = append(gotSeqs, le.e.Seq)
				}
				if fmt.Sprint(gotSeqs) != fmt.Sprint(want) {
					t.Fatalf("n=%d: got %v, want %v", n, gotSeqs, want)
				}
			}
		})
	}
}

// TestEnvelopeBrokenSegment: envelope SEQ reads the chain from the segment
// that holds SEQ. A link broken in that segment before SEQ is reported, as
// a whole-chain read reported it; one broken in a segment before it is not
// read (aegis verify's business), and SEQ is found.
func TestEnvelopeBrokenSegment(t *testing.T) {
	state := t.TempDir()
	t.Setenv("AEGIS_HOME", state)
	l, ln, err := openLane(filepath.Join(state, "chain"), "fs", chain.Options{SegmentSize: 4 << 10, MaxBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, _, err := l.Append(context.Background(), laneEntryN(i, time.Date(2026, 11, 30, 0, 0, i, 0, time.UTC))); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	starts, _ := chain.SegmentStarts(ln.dir)
	if len(starts) < 3 {
		t.Fatalf("%d segments, want several", len(starts))
	}
	// First -> [second, its second entry's prev altered] -> later
	broken := starts[1] + 1
	seg := filepath.Join(ln.dir, fmt.Sprintf("chain-%020d.jsonl", starts[1]))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	for _, line := range lines {
		if bytes.Contains(line, fmt.Appendf(nil, `"seq":%d,`, broken)) {
			at := bytes.Index(line, []byte(`"prev":"`)) + len(`"prev":"`)
			if line[at] == '0' {
				line[at] = '1'
			} else {
				line[at] = '0'
			}
		}
	}
	if err := os.WriteFile(seg, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		seq  uint64
		want string // in stderr
	}{
		{starts[1], "has no envelope"}, // before the break: found
		{broken, "broken link"},        // at it
		{starts[2] - 1, "broken link"}, // after it, in its segment
		{starts[2], "has no envelope"}, // in a later segment: found
		{starts[len(starts)-1] + 100, "no entry"},
	} {
		var out, errb bytes.Buffer
		got := run([]string{"envelope", fmt.Sprint(tc.seq)}, nil, &out, &errb)
		if got == 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("envelope %d = %d, %q; want an error saying %q", tc.seq, got, errb.String(), tc.want)
		}
	}
}
