package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/record"
)

// laneEntryN is a recordable entry, told apart by i.
func laneEntryN(i int, at time.Time) *record.Entry {
	return &record.Entry{
		Time:      at,
		Session:   "s",
		Principal: "user",
		Origin:    "interactive",
		Server:    "fs",
		Tool:      "read_file",
		Caps:      []record.Cap{{Kind: "fs.read", Path: fmt.Sprintf("/home/u/file-%d", i)}},
		Decision:  record.Allow,
		Mode:      record.Enforce,
		Rules:     []string{"r1"},
	}
}

// appendN appends n entries to l, the i-th at base+i seconds, and closes it.
func appendN(t *testing.T, l *chain.Log, n int, base time.Time) {
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
	logs := make([]*chain.Log, len(per))
	for i := range per {
		l, ln, err := chain.OpenLane(root, "fs", nil)
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

// lastSegment is the path of dir's last segment file.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "chain-*.jsonl"))
	if len(segs) == 0 {
		t.Fatalf("no segment in %s", dir)
	}
	return segs[len(segs)-1]
}

// truncateLane removes the lines after the last entry of dir's chain
// (its checkpoint, its ack): the entries are there, unsigned.
func truncateLane(t *testing.T, dir string) {
	t.Helper()
	p := lastSegment(t, dir)
	b, _ := os.ReadFile(p)
	lines := strings.SplitAfter(string(b), "\n")
	keep := 0
	for i, ln := range lines {
		if strings.HasPrefix(ln, `{"args_hash":`) {
			keep = i + 1
		}
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines[:keep], "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tamperLane alters the first entry of dir's chain.
func tamperLane(t *testing.T, dir string) {
	t.Helper()
	p := lastSegment(t, dir)
	b, _ := os.ReadFile(p)
	nb := bytes.Replace(b, []byte("file-0"), []byte("file-X"), 1)
	if bytes.Equal(b, nb) {
		t.Fatalf("nothing to tamper with in %s", p)
	}
	os.WriteFile(p, nb, 0o600)
}

// TestVerifyLaneStatuses: verify's exit status over a server's lanes is
// 4 if any lane is altered, else 3 if any is cut short at its tail, else
// 0, whatever the order of the lanes.
func TestVerifyLaneStatuses(t *testing.T) {
	ok, cut, bad := 0, 3, 4
	for _, tc := range []struct {
		lanes []int
		want  int
	}{
		{[]int{ok}, 0}, {[]int{cut}, 3}, {[]int{bad}, 4},
		{[]int{ok, ok}, 0},
		{[]int{ok, cut}, 3}, {[]int{cut, ok}, 3},
		{[]int{ok, bad}, 4}, {[]int{bad, ok}, 4},
		{[]int{cut, bad}, 4}, {[]int{bad, cut}, 4},
		{[]int{cut, cut}, 3}, {[]int{bad, bad}, 4},
		{[]int{ok, cut, bad}, 4}, {[]int{bad, cut, ok}, 4},
		{[]int{cut, ok, ok}, 3}, {[]int{ok, ok, cut}, 3},
		{[]int{cut, bad, cut}, 4}, {[]int{ok, bad, ok}, 4},
	} {
		t.Run(fmt.Sprint(tc.lanes), func(t *testing.T) {
			state := t.TempDir()
			t.Setenv("AEGIS_HOME", state)
			root := filepath.Join(state, "chain")
			per := make([]int, len(tc.lanes))
			for i := range per {
				per[i] = 3
			}
			openLanes(t, root, per...)
			for i, st := range tc.lanes {
				switch st {
				case cut:
					truncateLane(t, chain.LaneDir(root, "fs", i+1))
				case bad:
					tamperLane(t, chain.LaneDir(root, "fs", i+1))
				}
			}
			var out, errb bytes.Buffer
			if got := run([]string{"verify"}, nil, &out, &errb); got != tc.want {
				t.Errorf("verify = %d, want %d\n%s%s", got, tc.want, out.String(), errb.String())
			}
			// Every lane is reported, whatever another's state.
			if got := strings.Count(out.String(), "chain "+root); got != len(tc.lanes) {
				t.Errorf("verify reported %d lanes, want %d:\n%s", got, len(tc.lanes), out.String())
			}
		})
	}
}

// TestLogLanesMerged: log merges the lanes by time, keeps the last n of
// them all, and its --json lines are JSON objects with the lane of a
// later lane's entries.
func TestLogLanesMerged(t *testing.T) {
	state := t.TempDir()
	t.Setenv("AEGIS_HOME", state)
	root := filepath.Join(state, "chain")
	l1, _, _ := chain.OpenLane(root, "fs", nil)
	l2, _, err := chain.OpenLane(root, "fs", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	// Interleaved: lane 1 at even seconds, lane 2 at odd.
	for i := range 5 {
		if _, _, err := l1.Append(context.Background(), laneEntryN(i, base.Add(time.Duration(2*i)*time.Second))); err != nil {
			t.Fatal(err)
		}
		if _, _, err := l2.Append(context.Background(), laneEntryN(i, base.Add(time.Duration(2*i+1)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	l1.Close()
	l2.Close()

	var out bytes.Buffer
	if got := run([]string{"log", "-n", "3", "--json"}, nil, &out, os.Stderr); got != 0 {
		t.Fatalf("log = %d", got)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log --json line is not JSON: %v\n%s", err, line)
		}
		name := fmt.Sprint(m["seq"])
		if ln, ok := m["lane"]; ok {
			name += fmt.Sprintf("@%v", ln)
		}
		got = append(got, name)
	}
	if want := "4@2 5 5@2"; strings.Join(got, " ") != want {
		t.Errorf("log -n 3 = %v, want %s", got, want)
	}
	// -n 0 streams every entry, the lanes merged the same way as -n N
	// sorts them: the same bytes, text and JSON.
	for _, format := range [][]string{nil, {"--json"}} {
		var all, many bytes.Buffer
		if got := run(append([]string{"log", "-n", "0"}, format...), nil, &all, os.Stderr); got != 0 {
			t.Fatalf("log -n 0 = %d", got)
		}
		if got := run(append([]string{"log", "-n", "1000"}, format...), nil, &many, os.Stderr); got != 0 {
			t.Fatalf("log -n 1000 = %d", got)
		}
		if all.String() != many.String() || strings.Count(all.String(), "read_file") != 10 {
			t.Errorf("log -n 0 %v differs from -n 1000:\n%s\n---\n%s", format, all.String(), many.String())
		}
	}
}

// TestLaneThroughSymlink (chain.TestLanesThroughSymlink lists the lanes): a server's chain directory that is a symlink to
// one elsewhere (a chain moved to another disk) is where aegis run
// records, so it is a lane the commands that read chains read, the first
// lane as much as a later one. Before, the readers listed only real
// directories: with a lane 2 beside it, verify checked lane 2 alone, said
// OK, and log showed lane 2's entries only.
func TestLaneThroughSymlink(t *testing.T) {
	for _, linked := range []int{1, 2} {
		t.Run(fmt.Sprint("lane", linked), func(t *testing.T) {
			state := t.TempDir()
			t.Setenv("AEGIS_HOME", state)
			root := filepath.Join(state, "chain")
			os.MkdirAll(root, 0o700)
			elsewhere := filepath.Join(t.TempDir(), "moved")
			os.MkdirAll(elsewhere, 0o700)
			if err := os.Symlink(elsewhere, chain.LaneDir(root, "fs", linked)); err != nil {
				t.Fatal(err)
			}
			openLanes(t, root, 2, 3)
			segs, _ := filepath.Glob(filepath.Join(elsewhere, "chain-*.jsonl"))
			if len(segs) == 0 {
				t.Fatalf("aegis run did not record through the link to %s", elsewhere)
			}
			_, lanes, err := chainLanes("", "fs")
			if err != nil {
				t.Fatal(err)
			}
			if len(lanes) != 2 {
				t.Errorf("chainLanes(fs) = %v, want both lanes", lanes)
			}
			_, lanes, err = chainLanes("", "")
			if err != nil || len(lanes) != 2 {
				t.Errorf("chainLanes of the only server = %v, %v; want both lanes", lanes, err)
			}
			var out bytes.Buffer
			if got := run([]string{"log", "-n", "0"}, nil, &out, os.Stderr); got != 0 || strings.Count(out.String(), " allow fs/read_file ") != 5 {
				t.Errorf("log = %d:\n%s\nwant the 5 entries of both lanes", got, out.String())
			}
			tamperLane(t, elsewhere)
			out.Reset()
			if got := run([]string{"verify"}, nil, &out, os.Stderr); got != exitTampered {
				t.Errorf("verify with the linked lane altered = %d, want %d:\n%s", got, exitTampered, out.String())
			}
		})
	}
}
