package sandbox

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock is applied with its system calls directly rather than through
// go-landlock: go-landlock restricts every thread of a process through
// libpsx, which links a C constructor, a signal handler and a
// pthread_create wrapper into every aegis process. The init needs none of
// it: it restricts the one thread that execve's, and the server inherits
// that thread's domain.

// rulesetAttr is struct landlock_ruleset_attr up to ABI 6.
type rulesetAttr struct {
	fs, net, scoped uint64
}

// pathBeneathAttr is struct landlock_path_beneath_attr (packed: 12 bytes).
type pathBeneathAttr struct {
	allowed  uint64
	parentFD int32
}

// ruleNetPort is LANDLOCK_RULE_NET_PORT.
const ruleNetPort = 2

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowed, port uint64
}

const (
	llRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// llFile are the rights that apply to a file that is not a directory.
	llFile = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	llDevice = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// handledFS returns the file system rights Landlock ABI abi knows.
func handledFS(abi int) uint64 {
	h := uint64(1<<13 - 1) // ABI 1: execute .. make_sym
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 9 {
		h |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	return h
}

// restrict applies the plan's Landlock domain to this thread. A part the
// kernel refuses goes to fail (an error in required mode, a report in
// best-effort); a part the plan's ABI lacks was reported outside already.
func restrict(p *plan, fail func(Part, error) error) error {
	attr := rulesetAttr{fs: handledFS(p.Landlock)}
	size := unsafe.Sizeof(attr.fs)
	if p.Landlock >= 4 {
		attr.net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size += unsafe.Sizeof(attr.net)
	}
	if p.Landlock >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size += unsafe.Sizeof(attr.scoped)
	}
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fail(LandlockFS, fmt.Errorf("landlock_create_ruleset: %w", errno))
	}
	ruleset := int(r)
	defer unix.Close(ruleset)

	add := func(path string, rights uint64) error {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EACCES) {
				return nil // nothing there to grant
			}
			return fmt.Errorf("opening %s: %w", path, err)
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rights &= attr.fs
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			rights &= llFile
		}
		if rights == 0 {
			return nil
		}
		rule := pathBeneathAttr{allowed: rights, parentFD: int32(fd)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("granting %s: %w", path, errno)
		}
		return nil
	}
	for _, path := range p.Read {
		if err := add(path, llRead); err != nil {
			return fail(LandlockFS, err)
		}
	}
	for _, path := range p.List {
		if err := add(path, unix.LANDLOCK_ACCESS_FS_READ_DIR); err != nil {
			return fail(LandlockFS, err)
		}
	}
	for _, path := range p.Write {
		if err := add(path, attr.fs); err != nil {
			return fail(LandlockFS, err)
		}
	}
	for _, path := range p.Devices {
		if err := add(path, llDevice); err != nil {
			return fail(LandlockFS, err)
		}
	}
	// /proc/self resolves to this process, which the server will be.
	if err := add("/proc/self", llRead); err != nil {
		return fail(LandlockFS, err)
	}
	if attr.net != 0 && p.ProxyPort > 0 {
		rule := netPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(p.ProxyPort)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), ruleNetPort, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return fail(LandlockNet, fmt.Errorf("allowing the proxy's port: %w", errno))
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail(LandlockFS, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err))
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fail(LandlockFS, fmt.Errorf("landlock_restrict_self: %w", errno))
	}
	return nil
}
