//go:build !unix

package chain

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

const lockFile = "chain.lock"

// lockDir on systems without flock creates the lock file exclusively; a
// stale one left by a crash must be removed by hand.
func lockDir(dir string) (*os.File, error) {
	p := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("chain: %s is %w (or the lock was left by a crash: remove %s)", dir, ErrInUse, p)
	}
	if err != nil {
		return nil, fmt.Errorf("chain: locking %s: %w", dir, err)
	}
	return f, nil
}

// lockKey does nothing on systems without flock: writers that share a key
// and open their chains at the same moment may each create one, and the
// later Open refuses the chain.pub that does not match.
func lockKey(string) (func(), error) { return func() {}, nil }

func unlockDir(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}
