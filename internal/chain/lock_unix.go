//go:build unix

package chain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile keeps a second writer (another process, or a second Open in
// this one) off a chain directory: two writers would fork the chain.
const lockFile = "chain.lock"

func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("chain: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("chain: %s is %w", dir, ErrInUse)
		}
		return nil, fmt.Errorf("chain: locking %s: %w", dir, err)
	}
	return f, nil
}

func unlockDir(f *os.File) { f.Close() } // closing releases the flock

// keyLockFile is where the key lock is taken: a file of its own, opened
// for writing, because flock on NFS is emulated with byte-range locks,
// which need a file open for writing (a directory cannot be).
const keyLockFile = "key.lock"

// lockKey takes the key lock of dir and returns its release. Unlike the
// writer's lock it waits: it is held only while a key is read or created.
func lockKey(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, keyLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("chain: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("chain: locking the key in %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}
