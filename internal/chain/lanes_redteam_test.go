package chain

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLanesThroughSymlink: a server's chain directory that is a symlink to
// one elsewhere (a chain moved to another disk) is where OpenLane records,
// so it is a lane that Lanes and Servers list, the first lane as much as a
// later one. Before, the readers listed only real directories: with a
// lane 2 beside it, aegis verify checked lane 2 alone and said OK.
func TestLanesThroughSymlink(t *testing.T) {
	for _, linked := range []int{1, 2} {
		t.Run(fmt.Sprint("lane", linked), func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "chain")
			os.MkdirAll(root, 0o700)
			elsewhere := filepath.Join(t.TempDir(), "moved")
			os.MkdirAll(elsewhere, 0o700)
			if err := os.Symlink(elsewhere, LaneDir(root, "fs", linked)); err != nil {
				t.Fatal(err)
			}
			openLanes(t, root, 2, 3)
			segs, _ := filepath.Glob(filepath.Join(elsewhere, "chain-*.jsonl"))
			if len(segs) == 0 {
				t.Fatalf("OpenLane did not record through the link to %s", elsewhere)
			}
			lanes, err := Lanes(root, "fs")
			if err != nil || len(lanes) != 2 {
				t.Errorf("Lanes(fs) = %v, %v; want both lanes", lanes, err)
			}
			if names, err := Servers(root); err != nil || len(names) != 1 || names[0] != "fs" {
				t.Errorf("Servers = %v, %v; want fs", names, err)
			}
		})
	}
}

// TestLaneOneKeyLost: lane 1 holds the key every lane is signed with. With
// lane 1 gone (or its key), while lane 2 holds a chain signed by that key,
// OpenLane MUST NOT start a new key in lane 1: it would sign lane 1 with
// a key lane 2's chain.pub is not the half of, so that verify called the
// lane 2 chain TAMPERED and the next writer to need lane 2 failed to open
// it. It refuses, as Open refuses a chain without its key.
func TestLaneOneKeyLost(t *testing.T) {
	for _, lost := range []string{"lane 1", "chain.key"} {
		t.Run(lost, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "chain")
			openLanes(t, root, 2, 2)
			if lost == "lane 1" {
				os.RemoveAll(LaneDir(root, "fs", 1))
			} else {
				os.Remove(filepath.Join(LaneDir(root, "fs", 1), PrivateKeyFile))
			}
			l, ln, err := OpenLane(root, "fs", laneOpts)
			if err == nil {
				defer l.Close()
				t.Fatalf("OpenLane made lane %d a new key with lane 2's chain signed by the lost one", ln.N)
			}
			if lost == "lane 1" && !strings.Contains(err.Error(), "fs@2") {
				t.Errorf("OpenLane = %v, want it to name the lane that holds a chain", err)
			}
			if _, err := os.Stat(filepath.Join(LaneDir(root, "fs", 1), PrivateKeyFile)); err == nil {
				t.Error("a new key was made in lane 1")
			}
		})
	}
}

// TestLaneKeyLostBeforeAnyChain: a later lane's directory with no chain in
// it (an open that failed before its first segment) does not keep lane 1
// from making the key.
func TestLaneKeyLostBeforeAnyChain(t *testing.T) {
	root := filepath.Join(t.TempDir(), "chain")
	os.MkdirAll(LaneDir(root, "fs", 2), 0o700)
	if (Lane{N: 2, Dir: LaneDir(root, "fs", 2)}).Written() {
		t.Error("an empty lane directory counts as written")
	}
	l, ln, err := OpenLane(root, "fs", laneOpts)
	if err != nil || ln.N != 1 {
		t.Fatalf("OpenLane = lane %d, %v", ln.N, err)
	}
	if !ln.Written() {
		t.Error("an opened lane does not count as written")
	}
	l.Close()
}

// TestOpenLaneAtOnceExisting opens lanes all at once on a root that
// already holds lanes (with chains, and one still held): each takes a lane
// of its own that no other holds, all sign with the key the chains were
// made with, and every lane verifies afterwards.
func TestOpenLaneAtOnceExisting(t *testing.T) {
	root := filepath.Join(t.TempDir(), "chain")
	openLanes(t, root, 2, 2, 2)
	held, ln, err := OpenLane(root, "fs", laneOpts)
	if err != nil || ln.N != 1 {
		t.Fatalf("OpenLane = lane %d, %v", ln.N, err)
	}
	key := held.PublicKey()
	const n = 12
	logs, lanes := openLanesAtOnce(t, root, n)
	taken := map[int]bool{1: true}
	for i := range n {
		if taken[lanes[i].N] {
			t.Fatalf("lane %d taken twice", lanes[i].N)
		}
		taken[lanes[i].N] = true
		if !bytes.Equal(logs[i].PublicKey(), key) {
			t.Fatalf("lane %d signs with another key", lanes[i].N)
		}
		appendN(t, logs[i], 1, time.Now())
	}
	appendN(t, held, 1, time.Now())
	all, err := Lanes(root, "fs")
	if err != nil || len(all) != n+1 {
		t.Fatalf("Lanes = %d lanes, %v; want %d", len(all), err, n+1)
	}
	for _, ln := range all {
		if rep, err := Verify(ln.Dir, key); err != nil || rep.Truncated() || rep.Entries == 0 {
			t.Errorf("lane %d: %+v, %v; want it whole and signed", ln.N, rep, err)
		}
	}
}
