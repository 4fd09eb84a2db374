package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Package chain owns the lanes and tests them (internal/chain/lanes*_test.go);
// these test how the commands resolve and report them.

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
		got = append(got, filepath.Base(ln.Dir)+"="+ln.EntryName(1))
	}
	if strings.Join(got, " ") != "fs=1 fs@2=1@2 fs@3=1@3" {
		t.Errorf("lanes of fs = %v", got)
	}
	if _, lanes, _ := chainLanes("", "new"); len(lanes) != 1 || lanes[0].Dir != filepath.Join(root, "new") {
		t.Errorf("lanes of a server with no chain yet = %v, want its first, empty", lanes)
	}
	if _, _, err := chainLanes("", "fs@2"); err == nil {
		t.Error("chainLanes took a lane's name for a server's")
	}
	if _, lanes, _ := chainLanes("/some/dir", ""); len(lanes) != 1 || lanes[0].Dir != "/some/dir" || lanes[0].EntryName(7) != "7" {
		t.Errorf("--chain DIR = %v, want that directory alone", lanes)
	}
	os.RemoveAll(filepath.Join(root, "fsx@2"))
	if name, lanes, err := chainLanes("", ""); err != nil || name != "fs" || len(lanes) != 3 {
		t.Errorf("the only server's lanes = %q, %d lanes, %v; want fs's three", name, len(lanes), err)
	}
}

func TestWarnEach(t *testing.T) {
	var b bytes.Buffer
	warnEach(&b, errors.Join(errors.New("lane 3: x"), errors.New("lane 4: y")))
	warnEach(&b, errors.New("listing: z"))
	if want := "aegis: lane 3: x\naegis: lane 4: y\naegis: listing: z\n"; b.String() != want {
		t.Errorf("warnEach wrote %q, want %q", b.String(), want)
	}
}
