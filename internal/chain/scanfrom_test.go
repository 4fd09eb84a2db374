package chain

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// logChain appends n entries (entryN) to a Log in dir opened with opts, and
// closes it: every entry signed.
func logChain(t *testing.T, dir string, opts *Options, n int) {
	t.Helper()
	l := openT(t, dir, opts)
	for i := range n {
		if _, _, err := l.Append(context.Background(), entryN(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestScanFrom holds ScanFrom to Scan: from every seq of a chain of many
// segments (and before and past it), it passes on exactly the entries
// Scan passes on from that seq, the same, in order.
func TestScanFrom(t *testing.T) {
	dir := t.TempDir()
	const n = 120
	logChain(t, dir, &Options{SegmentSize: 8 << 10, MaxBatch: 3}, n)
	starts, err := SegmentStarts(dir)
	if err != nil || len(starts) < 5 || starts[0] != 1 {
		t.Fatalf("SegmentStarts = %v, %v; want several segments from 1", starts, err)
	}
	var all []string
	if err := Scan(dir, func(e *record.Entry) error {
		c, err := e.Canonical()
		all = append(all, string(c))
		return err
	}); err != nil || len(all) != n {
		t.Fatalf("Scan: %d entries, %v", len(all), err)
	}
	for seq := uint64(0); seq <= n+2; seq++ {
		var got []string
		err := ScanFrom(dir, seq, func(e *record.Entry) error {
			c, err := e.Canonical()
			got = append(got, string(c))
			return err
		})
		if err != nil {
			t.Fatalf("ScanFrom(%d): %v", seq, err)
		}
		from := min(max(int(seq), 1)-1, n)
		if len(got) != n-from {
			t.Fatalf("ScanFrom(%d) passed %d entries, want %d", seq, len(got), n-from)
		}
		for i := range got {
			if got[i] != all[from+i] {
				t.Fatalf("ScanFrom(%d): entry %d is %s, want %s", seq, i, got[i], all[from+i])
			}
		}
	}
	stop := errors.New("stop")
	if err := ScanFrom(dir, 50, func(*record.Entry) error { return stop }); err != stop {
		t.Errorf("ScanFrom returned %v, want fn's error", err)
	}
	if err := ScanFrom(dir, 1, nil); err == nil {
		t.Error("ScanFrom accepted a nil fn")
	}
}

// TestScanFromChecksWhatItReads: an entry altered in a segment ScanFrom
// reads is a break; one in a segment before it is not read (Verify's
// business), and does not stop ScanFrom.
func TestScanFromChecksWhatItReads(t *testing.T) {
	dir := t.TempDir()
	logChain(t, dir, &Options{SegmentSize: 8 << 10, MaxBatch: 3}, 60)
	starts, _ := SegmentStarts(dir)
	last := starts[len(starts)-1]
	// Break the link between the last segment's second entry and its first.
	seg := filepath.Join(dir, segmentName(last))
	b, _ := os.ReadFile(seg)
	os.WriteFile(seg, flipPrev(t, b, 1), 0o600)
	var be *BreakError
	if err := ScanFrom(dir, last, func(*record.Entry) error { return nil }); !errors.As(err, &be) {
		t.Fatalf("ScanFrom over the broken link = %v, want a BreakError", err)
	}
	// The first segment altered: ScanFrom from the last does not read it.
	dir2 := t.TempDir()
	copyDir(t, dir, dir2)
	os.WriteFile(filepath.Join(dir2, segmentName(last)), b, 0o600) // the last segment intact again
	first := filepath.Join(dir2, segmentName(starts[0]))
	fb, _ := os.ReadFile(first)
	os.WriteFile(first, flipPrev(t, fb, 1), 0o600)
	if err := ScanFrom(dir2, last, func(*record.Entry) error { return nil }); err != nil {
		t.Fatalf("ScanFrom from the last segment read an earlier one: %v", err)
	}
	if err := Scan(dir2, func(*record.Entry) error { return nil }); !errors.As(err, &be) {
		t.Fatalf("Scan over the broken first segment = %v, want a BreakError", err)
	}
}

// flipPrev returns segment data with one hex digit of the prev of its
// i-th entry (from 0) changed.
func flipPrev(t *testing.T, data []byte, i int) []byte {
	t.Helper()
	lines := bytes.SplitAfter(bytes.Clone(data), []byte("\n"))
	const key = `"prev":"`
	for _, line := range lines {
		at := bytes.Index(line, []byte(key))
		if at < 0 || !bytes.HasPrefix(line, []byte(`{"args_hash":`)) {
			continue
		}
		if i--; i >= 0 {
			continue
		}
		d := &line[at+len(key)]
		if *d == '0' {
			*d = '1'
		} else {
			*d = '0'
		}
		return bytes.Join(lines, nil)
	}
	t.Fatal("no such entry")
	return nil
}
