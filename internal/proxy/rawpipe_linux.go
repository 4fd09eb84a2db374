package proxy

import (
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// A rawPipe reads or writes a non-blocking pipe, waiting for it through Go's
// poller as an *os.File does, but with raw system calls: a read or write of
// a non-blocking descriptor never blocks, and the runtime's own bookkeeping
// around a system call that might (entersyscall) wakes the runtime's monitor
// thread, sysmon, whenever the process had been idle, and sysmon then polls
// every 20 µs for as long as anything runs. A relay that is idle between
// messages pays that on every message it passes; a raw call does not.
type rawPipe struct {
	rc syscall.RawConn
}

// newRawPipe returns f as a rawPipe, or nil if f is not a pipe whose open
// file description is non-blocking and that Go's poller waits for (a file
// whose reads may block must go through the runtime's system calls).
func newRawPipe(f *os.File) *rawPipe {
	if f == nil || f.SetDeadline(time.Time{}) != nil { // not in the poller
		return nil
	}
	fd, _, ok := fdOfType(f, syscall.S_IFIFO)
	if !ok {
		return nil
	}
	if fl, err := fileFlags(fd); err != nil || fl&syscall.O_NONBLOCK == 0 {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	return &rawPipe{rc: rc}
}

func (p *rawPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var (
		n     int
		errno syscall.Errno
	)
	err := p.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the poller, then try again
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, err // closed, or a deadline passed
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (p *rawPipe) Write(b []byte) (int, error) {
	var (
		n     int
		errno syscall.Errno
	)
	err := p.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			chunk := b[n:min(len(b), n+1<<30)]
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&chunk[0])), uintptr(len(chunk)))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // the pipe is full: wait in the poller
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, err
	case errno != 0:
		return n, os.NewSyscallError("write", errno)
	}
	return n, nil
}
