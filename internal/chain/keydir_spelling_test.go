package chain

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestKeyDirSpelledOtherwise: a KeyDir that names the chain's own
// directory in another spelling (a trailing slash, a "./" or "..", a
// link) is that directory: the chain keeps its one key, takes no second,
// and a second writer is still told the chain is in use.
func TestKeyDirSpelledOtherwise(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "c")
	link := filepath.Join(root, "link")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	l := openT(t, dir, nil)
	pub := l.PublicKey()
	appendVerify(t, l, dir, dir, 2, 2)
	total := 2
	for _, kd := range []string{dir + "/", dir + "/.", filepath.Join(root, "c") + "/../c", link} {
		l := openT(t, dir, &Options{KeyDir: kd})
		if !bytes.Equal(l.PublicKey(), pub) {
			t.Fatalf("KeyDir %q: the chain signs with another key", kd)
		}
		// The writer's lock and the key lock are apart: a second writer
		// that spells the key's directory otherwise is refused, not held.
		if _, err := Open(dir, &Options{KeyDir: kd, Logger: quiet}); !errors.Is(err, ErrInUse) {
			t.Fatalf("KeyDir %q: second Open = %v, want ErrInUse", kd, err)
		}
		total += 3
		appendVerify(t, l, dir, dir, 3, total)
	}
	// Through the link, with the key named plainly.
	l = openT(t, link, &Options{KeyDir: dir})
	total += 1
	appendVerify(t, l, dir, dir, 1, total)
}
