package proxy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// readLogs returns the rotated log and the current one, concatenated, in
// the order they were written.
func readLogs(t *testing.T, path string) string {
	t.Helper()
	var out []byte
	for _, p := range []string{path + ".1", path} {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return string(out)
}

func TestStderrLogRotates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		max   int64
		lines int
		// want: the log keeps at most this many bytes; 0 means all.
		keeps int64
	}{
		{name: "under the size", max: 1 << 20, lines: 100},
		{name: "many times over", max: 1000, lines: 500, keeps: 2000},
		{name: "a line as large as the size", max: 12, lines: 50, keeps: 24},
		{name: "never rotated", max: -1, lines: 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "server.stderr.log")
			l, err := openStderrLog(path, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			var all bytes.Buffer
			for i := range tc.lines {
				line := fmt.Sprintf("line %06d\n", i) // 12 bytes
				all.WriteString(line)
				if err := l.Write([]byte(line)); err != nil {
					t.Fatal(err)
				}
			}
			l.Close()
			got := readLogs(t, path)
			// What is kept is whole lines, the newest, in order, with
			// nothing missing between them.
			if !strings.HasSuffix(all.String(), got) || len(got) == 0 || got[len(got)-1] != '\n' {
				t.Fatalf("the logs hold %q, not the end of what was written", got)
			}
			if tc.keeps == 0 && got != all.String() {
				t.Fatalf("kept %d bytes of %d, want all", len(got), all.Len())
			}
			if tc.keeps > 0 && int64(len(got)) > tc.keeps {
				t.Fatalf("kept %d bytes, want at most %d", len(got), tc.keeps)
			}
			for _, p := range []string{path, path + ".1"} {
				fi, err := os.Stat(p)
				if os.IsNotExist(err) && (tc.keeps == 0 || p == path) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if tc.max > 0 && fi.Size() > tc.max {
					t.Errorf("%s is %d bytes, over the size %d", p, fi.Size(), tc.max)
				}
				if fi.Mode().Perm() != 0o600 {
					t.Errorf("%s has mode %v, want 0600", p, fi.Mode().Perm())
				}
			}
		})
	}
}

// TestStderrLogTwoWriters has two writers append to one log by turns, as
// two aegis processes wrapping one server do: whichever finds the log full
// rotates it, the other follows it to the new file, and what the two
// files hold is still the newest lines, whole, in order, nothing between
// them missing: no line went to a file that was renamed twice.
func TestStderrLogTwoWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.stderr.log")
	a, err := openStderrLog(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := openStderrLog(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var all bytes.Buffer
	for i := range 2000 {
		w, name := a, "a"
		if i%3 == 0 { // not strictly alternating
			w, name = b, "b"
		}
		line := fmt.Sprintf("%s %06d\n", name, i)
		all.WriteString(line)
		if err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	got := readLogs(t, path)
	if !strings.HasSuffix(all.String(), got) || len(got) < 1000 {
		t.Fatalf("the logs hold %d bytes that are not the end of what was written:\n%s", len(got), got)
	}
}

// TestStderrLogConcurrent has writers append at once: every line kept is
// whole and kept once, each writer's lines in the order it wrote them,
// and neither file grows far past the size.
func TestStderrLogConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.stderr.log")
	const writers, lines = 4, 3000
	var wg sync.WaitGroup
	for w := range writers {
		l, err := openStderrLog(path, 4096)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer l.Close()
			for i := range lines {
				if err := l.Write(fmt.Appendf(nil, "w%d %06d\n", w, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkLogLines(t, path, 4096+64)
}

// checkLogLines checks what the log at path and its .1 keep of lines
// "wN NNNNNN\n" that several writers appended: each line whole and kept
// once, each writer's in the order it wrote them, some line kept, and
// neither file over limit bytes (0: any size).
func checkLogLines(t *testing.T, path string, limit int) {
	t.Helper()
	last := map[string]int{}
	seen := map[string]bool{}
	for _, p := range []string{path + ".1", path} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if limit > 0 && len(b) > limit {
			t.Errorf("%s is %d bytes, far over the size", p, len(b))
		}
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if line == "" {
				continue
			}
			var w string
			var i int
			if _, err := fmt.Sscanf(line, "%s %d\n", &w, &i); err != nil || len(line) != 10 {
				t.Fatalf("%s: a torn line %q", p, line)
			}
			if seen[line] {
				t.Fatalf("%s: line %q kept twice", p, line)
			}
			seen[line] = true
			if prev, ok := last[w]; ok && i <= prev {
				t.Fatalf("%s: %s's line %d after its line %d", p, w, i, prev)
			}
			last[w] = i
		}
	}
	if len(seen) == 0 {
		t.Fatal("no line kept")
	}
}

func TestStderrLogFollowsRemoval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.stderr.log")
	l, err := openStderrLog(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Write([]byte("before\n"))
	os.Remove(path) // a person, or logrotate, removed it
	l.Write([]byte("after\n"))
	if b, err := os.ReadFile(path); err != nil || string(b) != "after\n" {
		t.Fatalf("after the log was removed, it holds %q, %v; want the new line", b, err)
	}
}

// TestStderrLogFollowsRotation: once one writer has rotated the log, the
// other's next line goes to the new file, not to the renamed one, which
// the next rotation would delete.
func TestStderrLogFollowsRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.stderr.log")
	a, err := openStderrLog(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := openStderrLog(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Write([]byte("b before\n"))
	for i := range 12 { // 120 bytes: one rotation
		a.Write(fmt.Appendf(nil, "a line %d\n", i))
	}
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Fatalf("no rotation: %v", err)
	}
	b.Write([]byte("b after\n"))
	cur, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(cur), "b after\n") {
		t.Fatalf("after a's rotation, b's line is not in the new log, which holds %q", cur)
	}
}

// TestStderrLogCannotRotate: a log that cannot be renamed (a directory in
// the way of its .1) still takes every line, and says why it grows.
func TestStderrLogCannotRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.stderr.log")
	if err := os.MkdirAll(path+".1/x", 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := openStderrLog(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var errs int
	for i := range 5 {
		if l.Write(fmt.Appendf(nil, "line %d\n", i)) != nil {
			errs++
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "line 0\nline 1\nline 2\nline 3\nline 4\n" {
		t.Fatalf("the log holds %q, want every line", b)
	}
	if errs != 4 {
		t.Fatalf("%d writes said the log could not be rotated, want 4", errs)
	}
}
