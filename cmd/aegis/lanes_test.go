package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/record"
)

func TestParseLaneName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server string
		n      int
		ok     bool
	}{
		{"fs", "fs", 1, true},
		{"fs@2", "fs", 2, true},
		{"my.server-1_x@64", "my.server-1_x", 64, true},
		{"fs@1", "", 0, false},   // lane 1 has one name: fs
		{"fs@02", "", 0, false},  // one lane, one name
		{"fs@65", "", 0, false},  // beyond maxLanes
		{"fs@", "", 0, false},    // no number
		{"fs@2@3", "", 0, false}, // servers cannot hold '@'
		{"fs@+2", "", 0, false},
		{"fs@-2", "", 0, false},
		{"fs@2x", "", 0, false},
		{"fs@٢", "", 0, false}, // Arabic-Indic two
		{"fs@1000", "", 0, false},
		{"@2", "", 0, false},
		{".fs@2", "", 0, false},
		{".hidden", "", 0, false},
		{"", "", 0, false},
	} {
		s, n, ok := parseLaneName(tc.name)
		if s != tc.server || n != tc.n || ok != tc.ok {
			t.Errorf("parseLaneName(%q) = %q, %d, %v; want %q, %d, %v", tc.name, s, n, ok, tc.server, tc.n, tc.ok)
		}
		if ok && filepath.Base(laneDir("/r", s, n)) != tc.name {
			t.Errorf("laneDir(%q, %d) = %q, want the name parsed", s, n, laneDir("/r", s, n))
		}
	}
}

func TestParseEntryName(t *testing.T) {
	for _, tc := range []struct {
		in  string
		seq uint64
		n   int
		ok  bool
	}{
		{"17", 17, 1, true},
		{"17@2", 17, 2, true},
		{"1@64", 1, 64, true},
		{"18446744073709551615", 1<<64 - 1, 1, true},
		{"0", 0, 0, false},
		{"0@2", 0, 0, false},
		{"17@1", 0, 0, false},
		{"17@65", 0, 0, false},
		{"17@", 0, 0, false},
		{"@2", 0, 0, false},
		{"-1", 0, 0, false},
		{"+1", 0, 0, false},
		{"18446744073709551616", 0, 0, false},
		{"1@2@3", 0, 0, false},
		{"", 0, 0, false},
	} {
		seq, n, ok := parseEntryName(tc.in)
		if ok != tc.ok || ok && (seq != tc.seq || n != tc.n) {
			t.Errorf("parseEntryName(%q) = %d, %d, %v; want %d, %d, %v", tc.in, seq, n, ok, tc.seq, tc.n, tc.ok)
		}
		if ok && (lane{n: n}).seq(seq) != tc.in {
			t.Errorf("lane %d names entry %d %q, want %q", n, seq, (lane{n: n}).seq(seq), tc.in)
		}
	}
}

func TestChainLanes(t *testing.T) {
	state := t.TempDir()
	t.Setenv("AEGIS_HOME", state)
	root := filepath.Join(state, "chain")
	for _, d := range []string{"fs@3", "fs", "fs@2", "fs@02", "fs@1", ".fs@4", "fsx@2"} {
		os.MkdirAll(filepath.Join(root, d), 0o700)
	}
	os.WriteFile(filepath.Join(root, "fs@5"), nil, 0o600) // a file, not a lane

	_, _, err := chainLanes("", "")
	if err == nil || !strings.Contains(err.Error(), "2 servers (fs, fsx)") {
		t.Errorf("chainLanes with two servers = %v, want them named", err)
	}
	name, lanes, err := chainLanes("", "fs")
	if err != nil || name != "fs" {
		t.Fatalf("chainLanes(fs) = %q, %v", name, err)
	}
	var got []string
	for _, ln := range lanes {
		got = append(got, filepath.Base(ln.dir)+"="+ln.seq(1))
	}
	if strings.Join(got, " ") != "fs=1 fs@2=1@2 fs@3=1@3" {
		t.Errorf("lanes of fs = %v", got)
	}
	if _, lanes, _ := chainLanes("", "new"); len(lanes) != 1 || lanes[0].dir != filepath.Join(root, "new") {
		t.Errorf("lanes of a server with no chain yet = %v, want its first, empty", lanes)
	}
	if _, _, err := chainLanes("", "fs@2"); err == nil {
		t.Error("chainLanes took a lane's name for a server's")
	}
	if _, lanes, _ := chainLanes("/some/dir", ""); len(lanes) != 1 || lanes[0].dir != "/some/dir" || lanes[0].seq(7) != "7" {
		t.Errorf("--chain DIR = %v, want that directory alone", lanes)
	}
	os.RemoveAll(filepath.Join(root, "fsx@2"))
	if name, lanes, err := chainLanes("", ""); err != nil || name != "fs" || len(lanes) != 3 {
		t.Errorf("the only server's lanes = %q, %d lanes, %v; want fs's three", name, len(lanes), err)
	}
}

func TestOpenLane(t *testing.T) {
	root := filepath.Join(t.TempDir(), "chain")
	var logs []*chain.Log
	defer func() {
		for _, l := range logs {
			l.Close()
		}
	}()
	for n := 1; n <= maxLanes; n++ {
		l, ln, err := openLane(root, "fs", chain.Options{})
		if err != nil {
			t.Fatalf("lane %d: %v", n, err)
		}
		logs = append(logs, l)
		if ln.n != n || ln.dir != laneDir(root, "fs", n) {
			t.Fatalf("open %d took lane %d (%s)", n, ln.n, ln.dir)
		}
		if !bytes.Equal(l.PublicKey(), logs[0].PublicKey()) {
			t.Fatalf("lane %d signs with its own key", n)
		}
	}
	if _, _, err := openLane(root, "fs", chain.Options{}); err == nil || !strings.Contains(err.Error(), "all in use") {
		t.Fatalf("open with every lane held = %v, want all in use", err)
	}
	// Another server's lanes are its own.
	l, ln, err := openLane(root, "other", chain.Options{})
	if err != nil || ln.n != 1 {
		t.Fatalf("another server = lane %d, %v", ln.n, err)
	}
	l.Close()
	// A lane let go is the next one taken.
	logs[4].Close()
	l, ln, err = openLane(root, "fs", chain.Options{})
	if err != nil || ln.n != 5 {
		t.Fatalf("after lane 5 closed, open took lane %d, %v", ln.n, err)
	}
	logs[4] = l
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
			if taken[lanes[i].n] || lanes[i].n < 1 || lanes[i].n > n {
				t.Fatalf("round %d: lane %d taken twice, or out of 1..%d", round, lanes[i].n, n)
			}
			taken[lanes[i].n] = true
			if !bytes.Equal(logs[i].PublicKey(), logs[0].PublicKey()) {
				t.Fatalf("round %d: lanes %d and %d sign with different keys", round, lanes[0].n, lanes[i].n)
			}
		}
	}
}

// openLanesAtOnce has n goroutines take a lane of server fs under root at
// the same moment, and returns their logs and lanes, in the goroutines'
// order.
func openLanesAtOnce(t *testing.T, root string, n int) ([]*chain.Log, []lane) {
	t.Helper()
	logs := make([]*chain.Log, n)
	lanes := make([]lane, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { logs[i], lanes[i], errs[i] = openLane(root, "fs", chain.Options{}) })
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
	var logs []*chain.Log
	for range 4 {
		l, _, err := openLane(root, "fs", chain.Options{})
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
		seg := filepath.Join(laneDir(root, "fs", n), "chain-00000000000000000001.jsonl")
		b, _ := os.ReadFile(seg)
		b = b[:bytes.LastIndexByte(b[:len(b)-1], '\n')+1] // the checkpoint
		if n == 4 {
			b = bytes.Replace(b, []byte(`"tool":"t"`), []byte(`"tool":"u"`), 1)
		}
		os.WriteFile(seg, b, 0o600)
	}
	held, err := chain.Open(laneDir(root, "fs", 2), &chain.Options{KeyDir: laneDir(root, "fs", 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// Lane 2 unsigned as its running writer leaves it between a batch and
	// its checkpoint: tidyLanes must find it held and leave it, silently.
	seg2 := filepath.Join(laneDir(root, "fs", 2), "chain-00000000000000000001.jsonl")
	b2, _ := os.ReadFile(seg2)
	os.WriteFile(seg2, b2[:bytes.LastIndexByte(b2[:len(b2)-1], '\n')+1], 0o600)
	if signed, _ := chain.TailSigned(laneDir(root, "fs", 2)); signed {
		t.Fatal("lane 2 still ends signed")
	}

	var warn bytes.Buffer
	tidyLanes(root, "fs", lane{n: 1, dir: laneDir(root, "fs", 1)}, chain.Options{}, &warn)
	if signed, _ := chain.TailSigned(laneDir(root, "fs", 3)); !signed {
		t.Error("lane 3, left unsigned by a crash, was not signed")
	}
	pub := logs[0].PublicKey()
	if rep, err := chain.Verify(laneDir(root, "fs", 3), pub); err != nil || rep.Truncated() || rep.Entries != 1 {
		t.Errorf("lane 3 after tidying: %+v, %v; want its entry, signed", rep, err)
	}
	if signed, _ := chain.TailSigned(laneDir(root, "fs", 4)); signed {
		t.Error("lane 4, altered in the middle, was signed")
	}
	if !strings.Contains(warn.String(), "lane 4 of server \"fs\"'s chain ends unsigned and could not be opened") || strings.Contains(warn.String(), "lane 2") || strings.Contains(warn.String(), "lane 3") {
		t.Errorf("warnings: %q; want lane 4's alone", warn.String())
	}
}

// FuzzLaneNames: the lane and entry names parse without panicking, and
// what parses names itself one way only: the name it is written back as.
func FuzzLaneNames(f *testing.F) {
	for _, s := range []string{"fs", "fs@2", "fs@64", "fs@02", "17", "17@2", "0@2", "a@b@c", "@", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if server, n, ok := parseLaneName(s); ok && filepath.Base(laneDir("/r", server, n)) != s {
			t.Fatalf("%q parses as lane %d of %q, written back as %q", s, n, server, laneDir("/r", server, n))
		}
		if seq, n, ok := parseEntryName(s); ok {
			back := (lane{n: n}).seq(seq)
			if again, n2, ok2 := parseEntryName(back); !ok2 || again != seq || n2 != n {
				t.Fatalf("%q parses as %d@%d, written back as %q, which parses as %d@%d (%v)", s, seq, n, back, again, n2, ok2)
			}
		}
	})
}
