package chain

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// TestScanFromTampered holds ScanFrom to Scan on chains altered one line
// at a time (a line deleted, doubled, swapped with the next, or cut
// short), from every segment start: wherever the alteration lies in the
// segments ScanFrom reads, their first line included, it passes on the
// same entries Scan does from there and fails the same way. (No edit here
// changes an entry's prev, so the one link ScanFrom leaves to Verify, from
// the first entry it reads to the segment before, is never what broke.)
func TestScanFromTampered(t *testing.T) {
	src := t.TempDir()
	const n = 40
	logChain(t, src, &Options{SegmentSize: 4 << 10, MaxBatch: 3}, n)
	segs, err := listSegments(src)
	if err != nil || len(segs) < 3 {
		t.Fatalf("%d segments, %v; want several", len(segs), err)
	}
	var seqs []uint64
	for _, s := range segs {
		seqs = append(seqs, s.first)
	}
	seqs = append(seqs, n+1)
	type result struct {
		seqs []uint64
		err  error
	}
	run := func(dir string, from uint64, scan func(string, func(*record.Entry) error) error) result {
		var r result
		r.err = scan(dir, func(e *record.Entry) error {
			if e.Seq >= from {
				r.seqs = append(r.seqs, e.Seq)
			}
			return nil
		})
		return r
	}
	edits := []struct {
		name string
		edit func(lines [][]byte, i int) [][]byte
	}{
		{"deleted", func(ls [][]byte, i int) [][]byte { return append(ls[:i:i], ls[i+1:]...) }},
		{"doubled", func(ls [][]byte, i int) [][]byte { return append(ls[:i+1:i+1], ls[i:]...) }},
		{"swapped", func(ls [][]byte, i int) [][]byte {
			if i+1 < len(ls) {
				ls[i], ls[i+1] = ls[i+1], ls[i]
			}
			return ls
		}},
		{"cut", func(ls [][]byte, i int) [][]byte { return append(ls[:i:i], ls[i][:len(ls[i])/2]) }},
	}
	checked := 0
	for si, s := range segs {
		data, err := os.ReadFile(s.path)
		if err != nil {
			t.Fatal(err)
		}
		nlines := len(bytes.SplitAfter(data, []byte("\n"))) - 1
		for li := range nlines {
			for _, ed := range edits {
				dir := t.TempDir()
				copyDir(t, src, dir)
				lines := bytes.SplitAfter(bytes.Clone(data), []byte("\n"))
				lines = lines[:len(lines)-1]
				lines = ed.edit(lines, li)
				if err := os.WriteFile(filepath.Join(dir, s.name), bytes.Join(lines, nil), 0o600); err != nil {
					t.Fatal(err)
				}
				for _, seq := range seqs {
					k := 0
					for i, sg := range segs {
						if sg.first <= seq {
							k = i
						}
					}
					if si < k {
						continue // before what ScanFrom reads
					}
					want := run(dir, seq, Scan)
					got := run(dir, seq, func(d string, fn func(*record.Entry) error) error { return ScanFrom(d, seq, fn) })
					name := fmt.Sprintf("segment %d line %d %s, from %d", si, li, ed.name, seq)
					var wbe, gbe *BreakError
					errors.As(want.err, &wbe)
					errors.As(got.err, &gbe)
					if (wbe == nil) != (gbe == nil) || wbe != nil && (wbe.Kind != gbe.Kind || wbe.Seq != gbe.Seq) {
						t.Errorf("%s: ScanFrom gave %v, Scan %v", name, got.err, want.err)
						continue
					}
					if fmt.Sprint(want.seqs) != fmt.Sprint(got.seqs) {
						t.Errorf("%s: ScanFrom passed on %v, Scan %v", name, got.seqs, want.seqs)
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d alterations and starts compared", checked)
}

// TestScanFromGap: with a segment missing from the middle of a chain,
// ScanFrom from a seq before the gap fails as Scan does; from a seq after
// it, it reads only the segments after the gap and does not see it (the
// link to the segments before is Verify's to check).
func TestScanFromGap(t *testing.T) {
	dir := t.TempDir()
	const n = 40
	logChain(t, dir, &Options{SegmentSize: 4 << 10, MaxBatch: 3}, n)
	starts, err := SegmentStarts(dir)
	if err != nil || len(starts) < 4 {
		t.Fatalf("SegmentStarts = %v, %v; want several", starts, err)
	}
	// 1 -> [gone] -> later segments
	if err := os.Remove(filepath.Join(dir, segmentName(starts[1]))); err != nil {
		t.Fatal(err)
	}
	var be *BreakError
	if err := Scan(dir, func(*record.Entry) error { return nil }); !errors.As(err, &be) || be.Kind != BreakSeq {
		t.Fatalf("Scan over the gap = %v, want a sequence break", err)
	}
	for _, seq := range []uint64{1, starts[1] - 1, starts[1]} {
		if err := ScanFrom(dir, seq, func(*record.Entry) error { return nil }); !errors.As(err, &be) || be.Kind != BreakSeq || be.Seq != starts[1] {
			t.Errorf("ScanFrom(%d) over the gap = %v, want a sequence break at %d", seq, err, starts[1])
		}
	}
	var got []uint64
	if err := ScanFrom(dir, starts[2], func(e *record.Entry) error { got = append(got, e.Seq); return nil }); err != nil {
		t.Fatalf("ScanFrom(%d), after the gap: %v", starts[2], err)
	}
	if len(got) != n-int(starts[2])+1 || got[0] != starts[2] {
		t.Errorf("ScanFrom(%d) passed on %v", starts[2], got)
	}
}
