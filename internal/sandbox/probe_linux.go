package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// ProbeKernel returns what the running kernel allows. It reads a few
// sysctls, asks Landlock its ABI version and, when the sysctls allow user
// namespaces, starts /bin/true in the namespaces a sandbox uses, once per
// process: a restriction the sysctls do not show (a container's seccomp
// filter) is then a missing part, which best-effort does without, rather
// than a server that fails to start.
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
	if why := tryNamespaces(); why != "" {
		// The sysctls allow it, yet it fails: a filter they do not show
		// (a container's seccomp profile). Without this, best-effort
		// would fail at the server's start instead of doing without.
		p.Missing[UserNS] = why
		p.Missing[MountNS] = "needs a user namespace"
		p.Missing[NetNS] = "needs a user namespace"
	}
	return p
}

// tryNamespaces starts /bin/true in new user, mount and network
// namespaces, as the sandbox starts a server, and returns why that fails,
// or "" if it works (or there is no /bin/true to try with).
func tryNamespaces() string {
	const prog = "/bin/true"
	if _, err := os.Stat(prog); err != nil {
		return ""
	}
	cmd := exec.Command(prog)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
	}
	if err := cmd.Run(); err != nil {
		return "creating user, mount and network namespaces failed (" + err.Error() + "): a filter the sysctls do not show, such as a container's seccomp profile"
	}
	return ""
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
