//go:build unix

package proxy

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f, waiting for it, and returns its
// release.
func lockFile(f *os.File) (func(), error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, nil
	}
}
