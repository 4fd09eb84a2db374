package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// IsInit reports whether this process is a sandbox's init: aegis
// re-exec'd by [Command] (argv is exactly [initArg0]). main MUST check it
// before anything else and then call [Init].
func IsInit() bool { return len(os.Args) == 1 && os.Args[0] == initArg0 }

// Init applies the plan it inherited and execve's the server. It returns
// only on failure, with the exit status to exit with; it has said why on
// stderr (the server's stderr, which aegis logs) and to aegis.
func Init() int {
	// Capabilities, no_new_privs and Landlock are per thread: everything
	// happens on the thread that execve's.
	runtime.LockOSThread()
	err := runInit()
	fmt.Fprintf(os.Stderr, "aegis sandbox: %v\n", err)
	if !errors.Is(err, errNotInit) {
		sendStatus(&status{Err: err.Error()}, -1)
	}
	return 126
}

// errNotInit says the process was not started by [Command].
var errNotInit = errors.New("not started by aegis as a sandbox's init")

func runInit() error {
	for _, fd := range []int{planFD, statusFD} {
		unix.CloseOnExec(fd)
	}
	// Only Command's descriptors make an init: a sealed memfd, and a
	// packet socket.
	const sealed = unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
	if seals, err := unix.FcntlInt(planFD, unix.F_GET_SEALS, 0); err != nil || seals&sealed != sealed {
		return fmt.Errorf("%w: no sealed plan on descriptor 3", errNotInit)
	}
	if typ, err := unix.GetsockoptInt(statusFD, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_SEQPACKET {
		return fmt.Errorf("%w: no status socket on descriptor 4", errNotInit)
	}
	f := os.NewFile(planFD, "plan")
	data, err := io.ReadAll(io.LimitReader(f, maxPlanBytes+1))
	f.Close()
	if err != nil {
		return fmt.Errorf("reading the plan: %w", err)
	}
	if len(data) > maxPlanBytes {
		return errors.New("the plan is too large")
	}
	var p plan
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("decoding the plan: %w", err)
	}
	if p.Path == "" || len(p.Argv) == 0 {
		return errors.New("the plan names no program")
	}
	var st status
	// fail makes a failure fatal in required mode, else a report.
	fail := func(part Part, err error) error {
		if p.Required {
			return fmt.Errorf("%s: %w", part, err)
		}
		st.Missing = append(st.Missing, Missing{part, err.Error()})
		return nil
	}
	proxyFD := -1
	if p.Namespaces {
		if err := mounts(&p); err != nil {
			if err := fail(MountNS, err); err != nil {
				return err
			}
		}
		if err := loopbackUp(); err != nil {
			if err := fail(NetNS, err); err != nil {
				return err
			}
		}
		if p.ProxyPort > 0 {
			if proxyFD, err = listenLoopback(p.ProxyPort); err != nil {
				return fmt.Errorf("listening for the proxy inside the namespace: %w", err)
			}
		}
	}
	if p.Landlock > 0 {
		if err := restrict(&p, fail); err != nil {
			return err
		}
	}
	// Landlock before ABI 9 does not govern connecting to a socket file,
	// and no grant is needed to reach one: the server could drive any
	// same-user daemon listening on one (tmux, an ssh or gpg agent,
	// docker) out of the sandbox. It may not make UNIX sockets at all
	// (socketpair, for its own children, stays).
	if err := denyUnixSockets(); err != nil {
		if err := fail(UnixSockets, err); err != nil {
			return err
		}
	}
	dropCapabilities()
	if p.Dir != "" {
		if err := os.Chdir(p.Dir); err != nil {
			return fmt.Errorf("the server's working directory: %w", err)
		}
	}
	if err := sendStatus(&st, proxyFD); err != nil {
		return fmt.Errorf("reporting to aegis: %w", err)
	}
	if proxyFD >= 0 {
		unix.Close(proxyFD)
	}
	unix.Close(statusFD)
	err = syscall.Exec(p.Path, p.Argv, p.Env)
	return fmt.Errorf("starting %s: %w", p.Path, err)
}

// sendStatus sends st to aegis, with fd (if not negative) attached.
func sendStatus(st *status, fd int) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	return unix.Sendmsg(statusFD, data, oob, nil, 0)
}

// mounts makes the mount namespace private, gives the server its own /tmp,
// hides the masked trees and makes the read-only ones so.
func mounts(p *plan) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if p.PrivateTmp {
		if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("mounting a private /tmp: %w", err)
		}
		// Written only to the fresh tmpfs: without it, /tmp is the
		// host's, whose names others may hold, and the files are not
		// written (the server's TLS clients then trust no CA of aegis's,
		// and the hosts of its credentials fail, closed).
		for _, f := range p.TmpFiles {
			if err := writeTmpFile(f); err != nil {
				return err
			}
		}
	}
	for _, m := range p.Masked {
		if err := mask(m); err != nil {
			return err
		}
	}
	for _, r := range p.ReadOnly {
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue // nothing there to protect
		}
		if err := unix.Mount(real, real, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s: %w", r, err)
		}
		if err := remountReadOnly(real); err != nil {
			return fmt.Errorf("making %s read-only: %w", r, err)
		}
	}
	return nil
}

// writeTmpFile writes f to the private /tmp, read-only, as a new file.
func writeTmpFile(f tmpFile) error {
	if f.Name == "" || f.Name != filepath.Base(f.Name) || f.Name[0] == '.' {
		return fmt.Errorf("writing %q to /tmp: not a plain file name", f.Name)
	}
	w, err := os.OpenFile(filepath.Join("/tmp", f.Name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o444)
	if err != nil {
		return fmt.Errorf("writing %s to the private /tmp: %w", f.Name, err)
	}
	if _, err := w.Write(f.Data); err != nil {
		w.Close()
		return fmt.Errorf("writing %s to the private /tmp: %w", f.Name, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("writing %s to the private /tmp: %w", f.Name, err)
	}
	return nil
}

// mask hides the tree or file at m: an empty read-only tmpfs over a
// directory, the empty /dev/null, read-only, over a file.
func mask(m string) error {
	real, err := filepath.EvalSymlinks(m)
	if err != nil {
		return nil // nothing there to hide
	}
	var st unix.Stat_t
	if err := unix.Stat(real, &st); err != nil {
		return nil
	}
	const hidden = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := unix.Mount("tmpfs", real, "tmpfs", hidden, "mode=0555,size=4k,nr_inodes=1"); err != nil {
			return fmt.Errorf("masking %s: %w", m, err)
		}
		return nil
	}
	if err := unix.Mount("/dev/null", real, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("masking %s: %w", m, err)
	}
	if err := remountReadOnly(real); err != nil {
		return fmt.Errorf("masking %s: %w", m, err)
	}
	return nil
}

// remountReadOnly makes the bind mount at p read-only, keeping the flags
// the kernel locks in a user namespace (nosuid, nodev, noexec, atime).
func remountReadOnly(p string) error {
	var sfs unix.Statfs_t
	if err := unix.Statfs(p, &sfs); err != nil {
		return err
	}
	const kept = unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC | unix.ST_NOATIME | unix.ST_NODIRATIME | unix.ST_RELATIME
	flags := uintptr(unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY) | uintptr(sfs.Flags)&kept
	return unix.Mount("", p, "", flags, "")
}

// loopbackUp brings up lo, the namespace's only interface.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bringing up lo: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bringing up lo: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing up lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing up lo: %w", err)
	}
	return nil
}

// listenLoopback returns a socket listening on 127.0.0.1:port.
func listenLoopback(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// dropCapabilities leaves the server no capability, in the namespace or
// out: none ambient, none in the bounding set (so an execve as uid 0 in
// the namespace gains none), none at all.
func dropCapabilities() {
	unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err == unix.EINVAL {
			break // past the last capability
		}
	}
	// SECBIT_NOROOT | SECBIT_NOROOT_LOCKED: uid 0 is no one special.
	unix.Prctl(unix.PR_SET_SECUREBITS, 1<<0|1<<1, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	unix.Capset(&hdr, &data[0])
}
