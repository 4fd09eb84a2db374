package sandbox

import (
	"errors"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ProbeKernel returns what the running kernel allows. It reads a few
// sysctls and asks Landlock its ABI version, once per process; it does not
// try to create a namespace, so a restriction it cannot see (a seccomp
// filter of a container) shows when the server starts.
func ProbeKernel() Probe { return probeOnce() }

var probeOnce = sync.OnceValue(probeKernel)

func probeKernel() Probe {
	p := Probe{Missing: map[Part]string{}}
	abi, why := landlockABI()
	p.Landlock = abi
	landlockMissing(abi, why, p.Missing)

	if why := userNSMissing(); why != "" {
		p.Missing[UserNS] = why
		p.Missing[MountNS] = "needs a user namespace"
		p.Missing[NetNS] = "needs a user namespace"
		return p
	}
	if _, err := os.Stat("/proc/self/ns/mnt"); err != nil {
		p.Missing[MountNS] = "the kernel has no mount namespaces (/proc/self/ns/mnt)"
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		p.Missing[NetNS] = "the kernel has no network namespaces (CONFIG_NET_NS)"
	}
	return p
}

// landlockABI returns the kernel's Landlock ABI version, or 0 and why not.
func landlockABI() (int, string) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == unix.ENOSYS:
		return 0, "the kernel has no Landlock (Linux 5.13 and CONFIG_SECURITY_LANDLOCK needed)"
	case errno == unix.EOPNOTSUPP:
		return 0, "Landlock is not enabled at boot (add landlock to the lsm= kernel parameter)"
	case errno != 0:
		return 0, "asking Landlock its version: " + errno.Error()
	}
	return int(v), ""
}

// userNSMissing returns why this process cannot create a user namespace,
// or "" if the sysctls allow it.
func userNSMissing() string {
	if _, err := os.Stat("/proc/self/ns/user"); errors.Is(err, os.ErrNotExist) {
		return "the kernel has no user namespaces (CONFIG_USER_NS)"
	}
	if readSysctl("/proc/sys/user/max_user_namespaces") == "0" {
		return "user namespaces are disabled (user.max_user_namespaces = 0)"
	}
	if unix.Geteuid() == 0 {
		return "" // the restrictions below apply to unprivileged users
	}
	if readSysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0" {
		return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
	}
	if readSysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" {
		return "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)"
	}
	return ""
}

func readSysctl(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
