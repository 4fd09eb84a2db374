package proxy

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// A bell is an eventfd in Go's poller: ringing it is one raw write, and the
// goroutine waiting for it is woken by the poller, not by the ringer.
//
// ring and silence use the descriptor directly (a wait holds the file's
// read lock while it is parked); the handoff calls them, and close, under
// its mutex, so that neither runs on a closed descriptor.
type bell struct {
	f      *os.File
	rc     syscall.RawConn
	fd     uintptr
	waitFn func(fd uintptr) bool
	failed bool // the last wait's read failed; only the waiter uses it
}

func newBell() *bell {
	fd, _, e := syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if e != 0 {
		return nil
	}
	f := os.NewFile(fd, "aegis-handoff")
	rc, err := f.SyscallConn()
	if err != nil || f.SetDeadline(time.Time{}) != nil { // not in the poller
		f.Close()
		return nil
	}
	b := &bell{f: f, rc: rc, fd: fd}
	b.waitFn = b.take
	return b
}

// ring makes the bell readable; false if it could not.
func (b *bell) ring() bool {
	one := uint64(1)
	for {
		_, _, e := syscall.RawSyscall(syscall.SYS_WRITE, b.fd, uintptr(unsafe.Pointer(&one)), 8)
		if e != syscall.EINTR {
			return e == 0
		}
	}
}

// silence makes the bell unreadable again.
func (b *bell) silence() {
	var n uint64
	for {
		_, _, e := syscall.RawSyscall(syscall.SYS_READ, b.fd, uintptr(unsafe.Pointer(&n)), 8)
		if e != syscall.EINTR {
			return
		}
	}
}

// wait returns true once the bell has rung (silencing it), false once it
// is closed or fails.
func (b *bell) wait() bool {
	b.failed = false
	return b.rc.Read(b.waitFn) == nil && !b.failed
}

// take silences the bell if it has rung; false means wait in the poller.
func (b *bell) take(fd uintptr) bool {
	var n uint64
	for {
		_, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&n)), 8)
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		case 0:
		default:
			b.failed = true
		}
		return true
	}
}

func (b *bell) close() { b.f.Close() }
