package chain

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestSecondWriterIsErrInUse(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, nil)
	defer l.Close()
	_, err := Open(dir, &Options{Logger: quiet})
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open = %v, want ErrInUse naming %s", err, dir)
	}
}

// appendVerify appends n entries to l, closes it and verifies its chain,
// which must then hold total entries, with the public key in keyDir.
func appendVerify(t *testing.T, l *Log, dir, keyDir string, n, total int) {
	t.Helper()
	for i := range n {
		if _, _, err := l.Append(context.Background(), entryN(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(filepath.Join(keyDir, PublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParsePublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(dir, k)
	if err != nil || rep.Entries != uint64(total) || rep.Truncated() {
		t.Fatalf("Verify(%s) with %s's key = %+v, %v; want %d entries, signed", dir, keyDir, rep, err, total)
	}
}

func TestSharedKey(t *testing.T) {
	root := t.TempDir()
	one, two := filepath.Join(root, "one"), filepath.Join(root, "two")
	l1 := openT(t, one, nil)
	l2 := openT(t, two, &Options{KeyDir: one})
	if !bytes.Equal(l1.PublicKey(), l2.PublicKey()) {
		t.Fatal("a chain opened with KeyDir signs with another key")
	}
	if _, err := os.Stat(filepath.Join(two, PrivateKeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the private key was copied beside the sharing chain (%v)", err)
	}
	a, _ := os.ReadFile(filepath.Join(one, PublicKeyFile))
	b, _ := os.ReadFile(filepath.Join(two, PublicKeyFile))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("chain.pub beside the sharing chain = %q, want the key's %q", b, a)
	}
	appendVerify(t, l2, two, one, 5, 5)
	appendVerify(t, l1, one, one, 3, 3)
	// Reopened, the sharing chain keeps the key and its acks are its own.
	appendVerify(t, openT(t, two, &Options{KeyDir: one}), two, one, 8, 13)
}

func TestSharedKeyRefusals(t *testing.T) {
	t.Run("the key's own chain has lost its key", func(t *testing.T) {
		root := t.TempDir()
		one, two := filepath.Join(root, "one"), filepath.Join(root, "two")
		appendVerify(t, openT(t, one, nil), one, one, 2, 2)
		os.Remove(filepath.Join(one, PrivateKeyFile))
		_, err := Open(two, &Options{Logger: quiet, KeyDir: one})
		if err == nil || !strings.Contains(err.Error(), "refusing to start a second key") {
			t.Fatalf("Open = %v, want a refusal to make a new key for a chain that has one", err)
		}
		if _, err := os.Stat(filepath.Join(one, PrivateKeyFile)); !errors.Is(err, os.ErrNotExist) {
			t.Error("a new key was written beside a chain signed by another")
		}
	})
	t.Run("the sharing chain exists but the key does not", func(t *testing.T) {
		root := t.TempDir()
		one, two := filepath.Join(root, "one"), filepath.Join(root, "two")
		appendVerify(t, openT(t, two, &Options{KeyDir: one}), two, one, 2, 2)
		os.RemoveAll(one)
		_, err := Open(two, &Options{Logger: quiet, KeyDir: one})
		if err == nil || !strings.Contains(err.Error(), two+" holds a chain") {
			t.Fatalf("Open = %v, want a refusal naming %s", err, two)
		}
	})
	t.Run("chain.pub of another key beside the sharing chain", func(t *testing.T) {
		root := t.TempDir()
		one, two, other := filepath.Join(root, "one"), filepath.Join(root, "two"), filepath.Join(root, "other")
		openT(t, one, nil).Close()
		openT(t, other, nil).Close()
		os.MkdirAll(two, 0o700)
		pub, _ := os.ReadFile(filepath.Join(other, PublicKeyFile))
		os.WriteFile(filepath.Join(two, PublicKeyFile), pub, 0o644)
		_, err := Open(two, &Options{Logger: quiet, KeyDir: one})
		if err == nil || !strings.Contains(err.Error(), "is not the public key of") {
			t.Fatalf("Open = %v, want a refusal of the mismatched chain.pub", err)
		}
	})
	t.Run("a key others can read", func(t *testing.T) {
		root := t.TempDir()
		one, two := filepath.Join(root, "one"), filepath.Join(root, "two")
		openT(t, one, nil).Close()
		os.Chmod(filepath.Join(one, PrivateKeyFile), 0o644)
		if _, err := Open(two, &Options{Logger: quiet, KeyDir: one}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("Open = %v, want the key's mode refused", err)
		}
	})
}

// TestSharedKeyCreatedOnce opens chains that share a key that does not
// exist yet, all at once, the key's own chain among them: each must sign
// with the one key that ends up in the key directory. Without the key lock
// two of them create a key each, and the chain of the one whose key was
// replaced no longer verifies.
func TestSharedKeyCreatedOnce(t *testing.T) {
	for round := range 20 {
		root := t.TempDir()
		keyDir := filepath.Join(root, "lane1")
		dirs := []string{keyDir}
		for i := 2; i <= 6; i++ {
			dirs = append(dirs, filepath.Join(root, "lane"+string(rune('0'+i))))
		}
		logs := make([]*Log, len(dirs))
		errs := make([]error, len(dirs))
		var wg sync.WaitGroup
		for i, d := range dirs {
			wg.Go(func() {
				opts := &Options{Logger: quiet}
				if d != keyDir {
					opts.KeyDir = keyDir
				}
				logs[i], errs[i] = Open(d, opts)
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: Open(%s): %v", round, dirs[i], err)
			}
		}
		for i, l := range logs {
			appendVerify(t, l, dirs[i], keyDir, 2, 2)
		}
	}
}
