package chain

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aegis-mcp/aegis/internal/filelock"
)

// lockFile keeps a second writer (another process, or a second Open in
// this one) off a chain directory: two writers would fork the chain.
const lockFile = "chain.lock"

func lockDir(dir string) (*os.File, error) {
	if !filelock.Supported {
		return createLock(dir)
	}
	f, err := filelock.TryOpenLocked(filepath.Join(dir, lockFile))
	if errors.Is(err, filelock.ErrLocked) {
		return nil, fmt.Errorf("chain: %s is %w", dir, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("chain: locking %s: %w", dir, err)
	}
	return f, nil
}

// createLock, where filelock has no lock, creates the lock file
// exclusively instead; a stale one left by a crash must be removed by hand.
func createLock(dir string) (*os.File, error) {
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

func unlockDir(f *os.File) {
	f.Close() // closing releases the lock
	if !filelock.Supported {
		os.Remove(f.Name())
	}
}

// keyLockFile is where the key lock is taken: a file of its own, because
// a directory cannot be opened for writing, which flock on NFS needs.
const keyLockFile = "key.lock"

// lockKey takes the key lock of dir and returns its release. Unlike the
// writer's lock it waits: it is held only while a key is read or created.
// Where filelock has no lock, writers that share a key and open their
// chains at the same moment may each create one, and the later Open
// refuses the chain.pub that does not match.
func lockKey(dir string) (func(), error) {
	f, err := filelock.OpenLocked(filepath.Join(dir, keyLockFile))
	if err != nil {
		return nil, fmt.Errorf("chain: locking the key in %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}
