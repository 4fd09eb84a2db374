//go:build windows

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// Supported reports whether locks exclude anyone on this system.
const Supported = true

// Windows byte-range locks are mandatory: a locked range cannot be read or
// written through another handle. Locking one byte at the far end of the
// offset space keeps the file's content usable while it is locked (the
// stderr log is written by other processes while one rotates it), as
// flock does; every holder locks the same byte, so they exclude each other.
const (
	offsetLow  = 0xFFFFFFFE
	offsetHigh = 0x7FFFFFFF
)

func lock(f *os.File, m mode, wait bool) error {
	var flags uint32
	if m == exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	if !wait {
		flags |= windows.LOCKFILE_FAIL_IMMEDIATELY
	}
	ol := windows.Overlapped{Offset: offsetLow, OffsetHigh: offsetHigh}
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, &ol)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return lockError(f, ErrLocked)
	default:
		return lockError(f, err)
	}
}

func unlock(f *os.File) error {
	ol := windows.Overlapped{Offset: offsetLow, OffsetHigh: offsetHigh}
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
