package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// denyUnixSockets installs a seccomp filter on this thread (inherited by
// the server it execve's) under which socket(AF_UNIX, ...) fails with
// EACCES and io_uring_setup with EPERM (io_uring's own socket and connect
// operations pass no seccomp filter). Every other call is allowed:
// socketpair(2) makes the UNIX sockets a runtime needs for its own
// children, and connect(2) to a socket file needs a socket first.
// PR_SET_NO_NEW_PRIVS must be set, as Landlock sets it; it is set here too.
func denyUnixSockets() error {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	const (
		offNr   = 0  // seccomp_data.nr
		offArch = 4  // seccomp_data.arch
		offArg0 = 16 // seccomp_data.args[0], its low 32 bits (little-endian)
		x32Bit  = 0x40000000
	)
	eacces := uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EACCES)
	eperm := uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EPERM)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	prog := []unix.SockFilter{
		/* 0 */ stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArch),
		/* 1 */ jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, arch, 1, 0),
		/* 2 */ stmt(unix.BPF_RET|unix.BPF_K, eperm), // another ABI's calls: refused
		/* 3 */ stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offNr),
		// x32's calls share x86_64's arch with this bit set: refused, or
		// its socket(2) would pass under another number.
		/* 4 */ jump(unix.BPF_JMP|unix.BPF_JGE|unix.BPF_K, x32Bit, 0, 1),
		/* 5 */ stmt(unix.BPF_RET|unix.BPF_K, eperm),
		/* 6 */ jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_IO_URING_SETUP, 0, 1),
		/* 7 */ stmt(unix.BPF_RET|unix.BPF_K, eperm),
		/* 8 */ jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_SOCKET, 0, 3),
		/* 9 */ stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArg0),
		/* 10 */ jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.AF_UNIX, 0, 1),
		/* 11 */ stmt(unix.BPF_RET|unix.BPF_K, eacces),
		/* 12 */ stmt(unix.BPF_RET|unix.BPF_K, allow),
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_SECCOMP): %w", err)
	}
	return nil
}

// auditArch is the seccomp architecture of each GOARCH this filter knows.
var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}
