package proxy

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// awaitExit returns once process pid, a child not yet waited for, has
// exited, having waited in Go's poller, through a pidfd of the process;
// exec.Cmd.Wait then finds it exited and returns at once. Wait alone
// blocks an OS thread in waitid(2) for as long as the process lives, and
// aegis serve has a server per session. It returns false, at once, where
// it cannot wait so (no pidfd): Wait then waits as before.
func awaitExit(pid int) bool {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil || f.SetDeadline(time.Time{}) != nil { // not in the poller
		return false
	}
	// A pidfd is readable once its process has exited. Edge-triggered:
	// the poller waits only after a look has found it still running.
	return rc.Read(exited) == nil
}

// exited reports whether the process of pidfd fd has exited (or cannot
// be told: Wait will say).
func exited(fd uintptr) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err != nil || n > 0
	}
}
