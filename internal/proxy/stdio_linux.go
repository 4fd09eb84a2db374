package proxy

import (
	"io"
	"os"
	"strconv"
	"syscall"
)

// reopenPipe returns a new, non-blocking open file description of the pipe f
// reads or writes (mode os.O_RDONLY or os.O_WRONLY), or nil if f is not a
// pipe or cannot be reopened.
func reopenPipe(f *os.File, mode int) *os.File {
	fd, st, ok := fdOfType(f, syscall.S_IFIFO)
	if !ok {
		return nil
	}
	// The new description may do only what the old one could: a pipe's
	// read end reopened for writing would write into the pipe it reads.
	if fl, err := fileFlags(fd); err != nil || fl&syscall.O_ACCMODE != mode && fl&syscall.O_ACCMODE != syscall.O_RDWR {
		return nil
	}
	return reopen(fd, mode, &st)
}

// fileFlags returns the status flags of fd's open file description.
func fileFlags(fd int) (int, error) {
	fl, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(fl), nil
}

// fdOfType returns f's descriptor and its status when it is a file of type
// typ (syscall.S_IFIFO, S_IFSOCK, ...); ok is false otherwise, and for a nil f.
func fdOfType(f *os.File, typ uint32) (fd int, st syscall.Stat_t, ok bool) {
	if f == nil {
		return 0, st, false
	}
	if fd, ok = rawFD(f); !ok {
		return 0, st, false
	}
	if syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != typ {
		return 0, st, false
	}
	return fd, st, true
}

// rawFD returns f's descriptor without the side effect of (*os.File).Fd,
// which puts a non-blocking descriptor back into blocking mode.
func rawFD(f *os.File) (int, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	fd := -1
	if rc.Control(func(u uintptr) { fd = int(u) }) != nil || fd < 0 {
		return 0, false
	}
	return fd, true
}

// procFD is where a process's descriptors are; a variable for tests.
var procFD = "/proc/self/fd/"

// reopen opens /proc/self/fd/fd, a pipe whose status is st, again with mode
// and O_NONBLOCK, and returns it if it is the same pipe. On Linux, opening a
// pipe's /proc/self/fd link opens the pipe afresh: a new open file
// description, whose flags are its own. O_NONBLOCK also keeps the open
// itself from waiting for the other end, which a FIFO's open otherwise does.
func reopen(fd, mode int, st *syscall.Stat_t) *os.File {
	f, err := os.OpenFile(procFD+strconv.Itoa(fd), mode|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	nfd, ok := rawFD(f)
	var nst syscall.Stat_t
	if !ok || syscall.Fstat(nfd, &nst) != nil || nst.Dev != st.Dev || nst.Ino != st.Ino || nst.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		// Not the pipe it was a moment ago (a /proc that is not procfs?).
		f.Close()
		return nil
	}
	return f
}

// socketReader returns f as a socketIO to read, or nil.
func socketReader(f *os.File) io.ReadCloser {
	if s := newSocketIO(f, syscall.EPOLLIN); s != nil {
		return s
	}
	return nil
}

// socketWriter returns f as a socketIO to write, or nil.
func socketWriter(f *os.File) io.WriteCloser {
	if s := newSocketIO(f, syscall.EPOLLOUT); s != nil {
		return s
	}
	return nil
}
