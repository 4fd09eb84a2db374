//go:build !unix

package chain

import (
	"fmt"
	"os"
	"path/filepath"
)

const lockFile = "chain.lock"

// lockDir on systems without flock creates the lock file exclusively; a
// stale one left by a crash must be removed by hand.
func lockDir(dir string) (*os.File, error) {
	p := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("chain: %s is in use by another writer (or left by a crash: remove %s): %w", dir, p, err)
	}
	return f, nil
}

func unlockDir(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}
