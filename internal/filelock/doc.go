// Package filelock owns advisory locks on files, the one way aegis keeps
// two processes (or two opens in one process) from writing the same state
// at once: the chain's writer and key locks, the pin store's lock, the
// stderr log's rotation.
//
// A lock belongs to an open file and is released by [Unlock] or by closing
// the file; a crash releases it. Locks are advisory: they exclude only
// other holders of a filelock lock, never a plain read or write.
//
// # Platforms
//
// On Linux, macOS and the BSDs a lock is flock(2) on the whole file. On
// Windows it is LockFileEx on one byte far past any real end of file, so
// that, as with flock, the file's content stays readable and writable
// while it is locked. Elsewhere (AIX, Solaris, Plan 9, WASI, js) there is
// no lock: every call succeeds at once and [Supported] is false, so a
// caller that needs exclusion can refuse to run or say what it risks.
//
// # Example
//
//	f, err := filelock.OpenLocked(filepath.Join(dir, "pins.lock"))
//	if err != nil {
//		return err
//	}
//	defer f.Close() // releases the lock
package filelock
