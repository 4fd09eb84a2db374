package proxy

import (
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// A socketIO reads or writes a stream socket aegis was given as its standard
// input or output (Node's child_process, and so most MCP clients, connects
// its children with socket pairs), without changing the socket's open file
// description, which aegis may share: each call is non-blocking by itself
// (MSG_DONTWAIT), and aegis waits for the socket through an epoll instance
// of its own, which Go's poller waits for in turn. Like a rawPipe, it makes
// raw system calls, which do not wake sysmon.
type socketIO struct {
	f     *os.File        // the socket's File, held so that its finalizer cannot close fd
	fd    int             // the socket, not owned
	ep    *os.File        // the epoll instance watching fd, owned
	rc    syscall.RawConn // ep's
	waits int             // waits that found the socket ready, for tests
}

// newSocketIO returns f as a socketIO waiting for events (EPOLLIN or
// EPOLLOUT), or nil if f is not a stream socket or no epoll instance can
// watch it.
func newSocketIO(f *os.File, events uint32) *socketIO {
	fd, _, ok := fdOfType(f, syscall.S_IFSOCK)
	if !ok {
		return nil
	}
	if typ, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE); err != nil || typ != syscall.SOCK_STREAM {
		return nil // datagrams and packets have no place in a byte stream
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	// Level-triggered: the instance is readable while the socket is ready,
	// so that a readiness that came before the wait is not lost. Not
	// EPOLLRDHUP: the end of the peer's output makes the socket readable
	// anyway, and for a writer it would be ready for ever while the peer's
	// input is full, and the writer would spin.
	ev := syscall.EpollEvent{Events: events, Fd: int32(fd)}
	if syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &ev) != nil || syscall.SetNonblock(epfd, true) != nil {
		syscall.Close(epfd)
		return nil
	}
	ep := os.NewFile(uintptr(epfd), "epoll")
	rc, err := ep.SyscallConn()
	if err != nil || ep.SetDeadline(time.Time{}) != nil { // not in the poller
		ep.Close()
		return nil
	}
	return &socketIO{f: f, fd: fd, ep: ep, rc: rc}
}

// wait returns when the socket may be ready, or an error once s is closed.
func (s *socketIO) wait() error {
	var (
		events [1]syscall.EpollEvent
		errno  syscall.Errno
	)
	err := s.rc.Read(func(epfd uintptr) bool {
		for {
			n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, epfd, uintptr(unsafe.Pointer(&events[0])), 1, 0, 0, 0)
			switch {
			case e == syscall.EINTR:
				continue
			case e != 0:
				errno = e
				return true
			}
			return n > 0 // else wait in the poller for the instance
		}
	})
	if err == nil && errno != 0 {
		err = os.NewSyscallError("epoll_pwait", errno)
	}
	s.waits++
	return err
}

func (s *socketIO) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(s.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), syscall.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0:
			if n == 0 {
				return 0, io.EOF
			}
			return int(n), nil
		case syscall.EINTR:
		case syscall.EAGAIN:
			if err := s.wait(); err != nil {
				return 0, err
			}
		default:
			return 0, os.NewSyscallError("recvfrom", e)
		}
	}
}

func (s *socketIO) Write(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		chunk := b[n:min(len(b), n+1<<30)]
		// MSG_NOSIGNAL: a client that has gone is an EPIPE, as for a
		// reopened pipe, not a signal.
		r, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(s.fd), uintptr(unsafe.Pointer(&chunk[0])), uintptr(len(chunk)), syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL, 0, 0)
		switch e {
		case 0:
			n += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			if err := s.wait(); err != nil {
				return n, err
			}
		default:
			return n, os.NewSyscallError("sendto", e)
		}
	}
	return n, nil
}

// Close closes the epoll instance, which ends a wait in progress; the
// socket is left open, as it was given.
func (s *socketIO) Close() error { return s.ep.Close() }
