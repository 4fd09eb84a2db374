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
//
// Reads must not overlap one another, nor writes one another (the relay
// reads each pipe from one goroutine at a time and serialises its writes):
// the state of the read and of the write in progress is kept in the
// rawPipe, with the functions the poller runs, so that a read or a write
// allocates nothing.
type rawPipe struct {
	rc syscall.RawConn

	rb     []byte // the read in progress
	rn     int
	rerrno syscall.Errno
	readFn func(fd uintptr) bool

	ipool      *bufPool // readIdle's pool, and the buffer it reads into
	ib         *readBuf
	readIdleFn func(fd uintptr) bool

	wb      []byte // the write in progress
	wn      int
	werrno  syscall.Errno
	writeFn func(fd uintptr) bool
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
	p := &rawPipe{rc: rc}
	p.readFn, p.writeFn, p.readIdleFn = p.read, p.write, p.readInto
	return p
}

func (p *rawPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.rb, p.rn, p.rerrno = b, 0, 0
	err := p.rc.Read(p.readFn)
	n, errno := p.rn, p.rerrno
	p.rb = nil
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

// read makes one read of p.rb; false means wait in the poller, then try
// again.
func (p *rawPipe) read(fd uintptr) bool {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p.rb[0])), uintptr(len(p.rb)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		p.rn, p.rerrno = int(r), e
		return true
	}
}

// readIdle implements idleReader: a read that finds the pipe empty gives
// the buffer back before the poller waits (edge-triggered: it waits only
// after a read has found nothing), and the read after the wait takes one.
func (p *rawPipe) readIdle(pool *bufPool, rb *readBuf) (*readBuf, int, error) {
	p.ipool, p.ib, p.rn, p.rerrno = pool, rb, 0, 0
	err := p.rc.Read(p.readIdleFn)
	rb, n, errno := p.ib, p.rn, p.rerrno
	p.ipool, p.ib = nil, nil
	switch {
	case err != nil: // closed, or a deadline passed
	case errno != 0:
		err = os.NewSyscallError("read", errno)
	case n == 0:
		err = io.EOF
	default:
		return rb, n, nil
	}
	if rb != nil {
		pool.put(rb)
	}
	return nil, 0, err
}

// readInto makes one read into p.ib, taking a buffer first if it has
// none; false means wait in the poller (without the buffer), then try
// again.
func (p *rawPipe) readInto(fd uintptr) bool {
	if p.ib == nil {
		p.ib = p.ipool.get()
	}
	b := p.ib.b
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			p.ipool.put(p.ib)
			p.ib = nil
			return false
		}
		p.rn, p.rerrno = int(r), e
		return true
	}
}

func (p *rawPipe) Write(b []byte) (int, error) {
	p.wb, p.wn, p.werrno = b, 0, 0
	err := p.rc.Write(p.writeFn)
	n, errno := p.wn, p.werrno
	p.wb = nil
	switch {
	case err != nil:
		return n, err
	case errno != 0:
		return n, os.NewSyscallError("write", errno)
	}
	return n, nil
}

// write writes what is left of p.wb; false means the pipe is full: wait in
// the poller, then go on.
func (p *rawPipe) write(fd uintptr) bool {
	for p.wn < len(p.wb) {
		chunk := p.wb[p.wn:min(len(p.wb), p.wn+1<<30)]
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&chunk[0])), uintptr(len(chunk)))
		switch e {
		case 0:
			p.wn += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			p.werrno = e
			return true
		}
	}
	return true
}
