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
)

// TestEnvelopeBrokenSegment: envelope SEQ reads the chain from the segment
// that holds SEQ. A link broken in that segment before SEQ is reported, as
// a whole-chain read reported it; one broken in a segment before it is not
// read (aegis verify's business), and SEQ is found.
func TestEnvelopeBrokenSegment(t *testing.T) {
	state := t.TempDir()
	t.Setenv("AEGIS_HOME", state)
	l, ln, err := chain.OpenLane(filepath.Join(state, "chain"), "fs", &chain.Options{SegmentSize: 4 << 10, MaxBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, _, err := l.Append(context.Background(), laneEntryN(i, time.Date(2026, 11, 30, 0, 0, i, 0, time.UTC))); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	starts, _ := chain.SegmentStarts(ln.Dir)
	if len(starts) < 3 {
		t.Fatalf("%d segments, want several", len(starts))
	}
	// First -> [second, its second entry's prev altered] -> later
	broken := starts[1] + 1
	seg := filepath.Join(ln.Dir, fmt.Sprintf("chain-%020d.jsonl", starts[1]))
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
