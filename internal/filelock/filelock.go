package filelock

import (
	"errors"
	"fmt"
	"os"
)

// ErrLocked is what [TryLock] and [TryOpenLocked] return when another
// holder has the lock.
var ErrLocked = errors.New("locked by another holder")

// Lock takes an exclusive lock on f, waiting for it.
func Lock(f *os.File) error { return lock(f, exclusive, true) }

// RLock takes a shared lock on f, waiting for it: shared locks exclude
// only exclusive ones.
func RLock(f *os.File) error { return lock(f, shared, true) }

// TryLock takes an exclusive lock on f if no one holds a lock on it, and
// returns an error wrapping [ErrLocked] if someone does.
func TryLock(f *os.File) error { return lock(f, exclusive, false) }

// Unlock releases the lock f holds. Closing f releases it too.
func Unlock(f *os.File) error { return unlock(f) }

// OpenLocked opens path for writing, creating it (mode 0600) if it does
// not exist, and takes an exclusive lock on it, waiting for it. Closing the
// file releases the lock.
func OpenLocked(path string) (*os.File, error) { return openLocked(path, true) }

// TryOpenLocked is [OpenLocked] without the wait: if another holder has
// the lock its error wraps [ErrLocked].
func TryOpenLocked(path string) (*os.File, error) { return openLocked(path, false) }

type mode int

const (
	shared mode = iota
	exclusive
)

func openLocked(path string, wait bool) (*os.File, error) {
	// Opened for writing: flock on NFS is emulated with byte-range locks,
	// which need a file open for writing.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lock(f, exclusive, wait); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func lockError(f *os.File, err error) error {
	return fmt.Errorf("locking %s: %w", f.Name(), err)
}
