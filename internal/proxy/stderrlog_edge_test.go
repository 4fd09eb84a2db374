package proxy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestStderrLogSymlinks: rotation renames names in the log's directory,
// never what they point to. A .1 that is a link to a file elsewhere is
// replaced, and the file is left as it was; a log that is a link has the
// link renamed, and its target is not moved.
func TestStderrLogSymlinks(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "server.stderr.log")
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path+".1"); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(outside, "target")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	l, err := openStderrLog(path, 20)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 10 {
		if err := l.Write(fmt.Appendf(nil, "line %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep me\n" {
		t.Errorf("the file .1 linked to holds %q, %v; want it untouched", b, err)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the file the log linked to was moved: %v", err)
	}
	for _, p := range []string{path, path + ".1"} {
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s after rotations: %v, %v; want a regular file", p, fi.Mode(), err)
		}
	}
}

// TestStderrLogDirectoryGone: a log whose directory is removed fails its
// writes (the tee reports that) rather than write to a file no one can
// read, and takes lines again once the directory is back.
func TestStderrLogDirectoryGone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	os.Mkdir(dir, 0o700)
	path := filepath.Join(dir, "server.stderr.log")
	l, err := openStderrLog(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := l.Write([]byte("two\n")); err == nil {
		t.Error("a write to a log whose directory is gone did not fail")
	}
	os.Mkdir(dir, 0o700)
	if err := l.Write([]byte("three\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "three\n" {
		t.Errorf("the log holds %q, want the line written after the directory came back", b)
	}
}

// TestStderrLogProcesses has separate processes (this test binary, run
// again) append to one small log at once, as aegis processes wrapping one
// server do: every line kept is whole and kept once, and each process's
// lines are in the order it wrote them.
func TestStderrLogProcesses(t *testing.T) {
	if p := os.Getenv("AEGIS_TEST_STDERRLOG"); p != "" {
		w := os.Getenv("AEGIS_TEST_STDERRLOG_WRITER")
		l, err := openStderrLog(p, 2048)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		for i := range 1500 {
			if err := l.Write(fmt.Appendf(nil, "p%s %06d\n", w, i)); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	path := filepath.Join(t.TempDir(), "server.stderr.log")
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for w := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStderrLogProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), "AEGIS_TEST_STDERRLOG="+path, "AEGIS_TEST_STDERRLOG_WRITER="+strconv.Itoa(w))
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		outs = append(outs, out)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer %d failed: %v\n%s", i, err, outs[i])
		}
	}
	checkLogLines(t, path, 0)
}

// TestStderrLogWriteAfterClose: Run closes the log when it returns, and the
// stderr copy it gave up waiting for (aegis's own stderr stuck) may write
// after that. Such a write fails; it does not reopen the log, which no one
// would close, when the path has moved on meanwhile (another aegis rotated
// it), and it does not race with Close.
func TestStderrLogWriteAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.stderr.log")
	l, err := openStderrLog(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write([]byte("before\n")); err != nil {
		t.Fatal(err)
	}
	// Close while a write that follows a rotation is under way.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- l.Write([]byte("during\n")) }()
	l.Close()
	<-done
	os.Remove(path)
	if err := l.Write([]byte("after\n")); err == nil {
		t.Error("a write after Close succeeded")
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a write after Close reopened the log")
	}
}
