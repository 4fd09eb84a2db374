package filelock_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/filelock"
)

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func skipUnsupported(t *testing.T) {
	if !filelock.Supported {
		t.Skip("no file locks on this system")
	}
}

// Two opens of one file are two holders, in one process as across two:
// that is what keeps a second chain.Open in the same process off a chain.
func TestExclusion(t *testing.T) {
	skipUnsupported(t)
	p := filepath.Join(t.TempDir(), "x.lock")
	tests := []struct {
		name        string
		first       func(*os.File) error
		second      func(*os.File) error
		wantBlocked bool
	}{
		{"exclusive then exclusive", filelock.Lock, filelock.TryLock, true},
		{"shared then exclusive", filelock.RLock, filelock.TryLock, true},
		{"exclusive then released", func(f *os.File) error {
			if err := filelock.Lock(f); err != nil {
				return err
			}
			return filelock.Unlock(f)
		}, filelock.TryLock, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := open(t, p), open(t, p)
			if err := tt.first(a); err != nil {
				t.Fatal(err)
			}
			err := tt.second(b)
			if got := errors.Is(err, filelock.ErrLocked); got != tt.wantBlocked {
				t.Fatalf("second lock = %v, want blocked %v", err, tt.wantBlocked)
			}
			filelock.Unlock(a)
			filelock.Unlock(b)
		})
	}
}

func TestSharedLocksCoexist(t *testing.T) {
	skipUnsupported(t)
	p := filepath.Join(t.TempDir(), "x.lock")
	a, b := open(t, p), open(t, p)
	if err := filelock.RLock(a); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- filelock.RLock(b) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second shared lock waited for the first")
	}
}

// Lock waits for the holder, and closing the holder's file releases it: a
// crashed holder never wedges the next.
func TestLockWaitsForClose(t *testing.T) {
	skipUnsupported(t)
	p := filepath.Join(t.TempDir(), "x.lock")
	a, err := filelock.OpenLocked(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := filelock.TryOpenLocked(p); !errors.Is(err, filelock.ErrLocked) {
		t.Fatalf("TryOpenLocked while held = %v, want ErrLocked", err)
	}
	got := make(chan *os.File, 1)
	go func() {
		f, err := filelock.OpenLocked(p)
		if err != nil {
			t.Error(err)
		}
		got <- f
	}()
	select {
	case <-got:
		t.Fatal("OpenLocked did not wait for the holder")
	case <-time.After(50 * time.Millisecond):
	}
	a.Close()
	select {
	case f := <-got:
		if f != nil {
			f.Close()
		}
	case <-time.After(10 * time.Second):
		t.Fatal("closing the holder did not release the lock")
	}
}

// The lock leaves the file's content alone: another handle reads and
// writes a locked file (the stderr log is written while one rotates it).
func TestContentStaysUsable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	a := open(t, p)
	if err := filelock.Lock(a); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("line\n"), 0o600); err != nil {
		t.Fatalf("writing a locked file: %v", err)
	}
	if data, err := os.ReadFile(p); err != nil || string(data) != "line\n" {
		t.Fatalf("reading a locked file = %q, %v", data, err)
	}
}

func TestOpenLockedError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing", "x.lock")
	if _, err := filelock.OpenLocked(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenLocked in a missing directory = %v, want ErrNotExist", err)
	}
}
