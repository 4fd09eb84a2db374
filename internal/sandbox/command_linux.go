package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Command returns a command that starts argv (the server's program and
// arguments) in the sandbox spec describes, and the Sandbox that reports
// on it and serves its network. Starting, waiting for and relaying the
// command is the caller's (proxy.Run), which owns its standard input,
// output and error: they reach the server unchanged. The caller MUST call
// [Sandbox.Close] once the command has exited.
//
// In [Required] mode Command fails with an [*UnavailableError] if the
// kernel lacks a part. In [Off] mode the command is argv as it is, with
// aegis's environment.
func Command(spec *Spec, argv []string) (*exec.Cmd, *Sandbox, error) {
	if spec == nil {
		spec = &Spec{}
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, nil, errors.New("sandbox: no command to run")
	}
	if spec.Mode == Off {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = spec.Dir
		return cmd, &Sandbox{report: Report{Mode: Off}, done: closedChan()}, nil
	}
	probe := spec.Probe
	if probe == nil {
		p := ProbeKernel()
		probe = &p
	}
	missing := probe.missing()
	if spec.Mode == Required && len(missing) > 0 {
		return nil, nil, &UnavailableError{Missing: missing}
	}
	ns := probe.Namespaces()
	abi := probe.Landlock
	if !probe.Has(LandlockFS) {
		abi = 0
	}

	sb := &Sandbox{done: make(chan struct{})}
	netw := spec.Network
	if !ns {
		netw = NoNetwork // no namespace to reach a proxy in
	}
	var trust []tmpFile
	if netw == ProxyNetwork {
		trust = trustFilesFor(spec.CACert, os.LookupEnv, readFileMax)
	}
	env := spec.environ(os.LookupEnv, "/tmp", netw, trustOf("/tmp", trust))
	dir := spec.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	prog := argv[0]
	if !filepath.IsAbs(prog) && strings.Contains(prog, "/") {
		prog = filepath.Join(dir, prog)
	}
	path, err := lookPath(prog, getenv(env, "PATH"))
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: finding the server's program: %w", err)
	}
	home := getenv(env, "HOME")
	rtRead, rtWrite := runtimeGrants(path, argv, dir, home, getenv(env, "PATH"))

	tmp := "/tmp"
	// A private tmpfs on /tmp would hide a tree granted under /tmp (a
	// server whose files, or program, live there): then, as without a
	// mount namespace, the server's temp directory is one of its own and
	// Landlock keeps it out of the rest of /tmp.
	privateTmp := ns && !anyUnder(slices.Concat(spec.Read, spec.Write, spec.List, rtRead, rtWrite, []string{path}), "/tmp")
	if !privateTmp {
		// No private /tmp: a directory of its own, removed by Close.
		d, err := os.MkdirTemp("", "aegis-sandbox-")
		if err != nil {
			return nil, nil, fmt.Errorf("sandbox: making a private temp directory: %w", err)
		}
		tmp, sb.tmpDir = d, d
		for _, f := range trust {
			if err := os.WriteFile(filepath.Join(d, f.Name), f.Data, 0o444); err != nil {
				sb.Close()
				return nil, nil, fmt.Errorf("sandbox: writing the server's trusted certificates: %w", err)
			}
		}
		env = spec.environ(os.LookupEnv, tmp, netw, trustOf(tmp, trust))
	}

	p := &plan{
		Path: path, Argv: argv, Env: env, Dir: spec.Dir,
		Namespaces: ns, PrivateTmp: privateTmp,
		Landlock: abi,
		Required: spec.Mode == Required,
	}
	read, write := cleanAll(spec.Read), cleanAll(spec.Write)
	masked, readOnly := cleanAll(spec.Masked), cleanAll(spec.ReadOnly)
	runtimeRead := cleanAll(append(slices.Clone(systemRead), rtRead...))
	runtimeWrite := cleanAll(append(rtWrite, tmp))
	if !slices.ContainsFunc(slices.Concat(read, write, runtimeWrite), func(g string) bool { return within(g, "/run") }) {
		masked = cleanAll(append(masked, "/run"))
	}
	p.Read = cleanAll(slices.Concat(read, runtimeRead))
	p.List = cleanAll(spec.List)
	p.Write = cleanAll(slices.Concat(write, runtimeWrite))
	p.Devices = devices
	// A tree that does not exist has no place for a mount; inside a write
	// grant the server could create it. Landlock can keep it from doing
	// so only by granting around it.
	absent := absentIn(slices.Concat(masked, readOnly), p.Write)
	var frozenDirs []string
	if ns {
		p.Masked, p.ReadOnly = masked, readOnly
		if abi > 0 {
			frozenDirs = frozen(p.Write, absent)
			p.Write = carve(p.Write, absent)
		}
	} else if abi > 0 {
		// No mount to hide a tree inside a grant: grant around it.
		frozenDirs = frozen(p.Write, slices.Concat(masked, readOnly))
		p.Write = carve(carve(p.Write, masked), readOnly)
		p.Read = carve(p.Read, masked)
		p.List = carve(p.List, masked)
	}
	if netw == ProxyNetwork {
		p.ProxyPort = spec.proxyPort()
	}
	if privateTmp {
		p.TmpFiles = trust
	}

	sb.report = Report{
		Mode: spec.Mode, Applied: ns || abi > 0,
		Read: read, Write: write, List: p.List, Masked: masked, ReadOnly: readOnly,
		Absent: absent, Frozen: frozenDirs,
		Runtime: slices.Concat(runtimeRead, runtimeWrite, devices, []string{"/proc/self"}),
		Missing: missing,
	}
	if p.ProxyPort > 0 {
		sb.report.RuntimeHosts = RuntimeHosts(path)
	}
	r := &sb.report
	switch {
	case !ns && abi >= 4:
		r.Network = "no TCP (Landlock), no proxy; other protocols not isolated: no network namespace"
	case !ns:
		r.Network = "not isolated: no network namespace"
	case p.ProxyPort > 0:
		r.Network = "proxy only at 127.0.0.1:" + strconv.Itoa(p.ProxyPort)
	default:
		r.Network = "none"
	}
	if slices.Contains(read, "/") {
		r.Notes = append(r.Notes, "a rule grants fs.read with no path_under: every file is readable but the masked trees")
	}
	if slices.Contains(write, "/") {
		r.Notes = append(r.Notes, "a rule grants fs.write with no path_under: every file is writable but the masked and read-only trees")
	}
	if len(frozenDirs) > 0 {
		r.Notes = append(r.Notes, "the write grants stop at the existing entries of the frozen directories, so that the server cannot make the masked and read-only trees there (create an absent one, empty, to lift this for it)")
	}
	if len(absent) > 0 && abi == 0 {
		r.Notes = append(r.Notes, "the absent trees cannot be mounted over, and without Landlock nothing keeps the server from making them")
	}
	if len(spec.Conditional) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("deny rules that only some calls match stay visible to the server (the policy still denies those calls): %v", cleanAll(spec.Conditional)))
	}
	if !r.Applied {
		// Nothing the kernel offers: the server starts bare, with the
		// minimal environment.
		cmd := exec.Command(path, argv[1:]...)
		cmd.Args[0] = argv[0]
		cmd.Env, cmd.Dir = env, spec.Dir
		close(sb.done)
		return cmd, sb, nil
	}
	cmd, err := sb.initCommand(spec, p, ns)
	if err != nil {
		sb.Close()
		return nil, nil, err
	}
	return cmd, sb, nil
}

// initCommand returns the command that runs the init with plan p, and
// sets up sb's end of the status socket (and its listener).
func (sb *Sandbox) initCommand(spec *Spec, p *plan, ns bool) (*exec.Cmd, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("sandbox: encoding the plan: %w", err)
	}
	planFile, err := memfd("aegis-sandbox-plan", data)
	if err != nil {
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		planFile.Close()
		return nil, fmt.Errorf("sandbox: making the status socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "sandbox-status"), os.NewFile(uintptr(pair[1]), "sandbox-status-init")
	sb.initFiles = []*os.File{planFile, theirs}
	if err := sb.watch(ours, p.ProxyPort); err != nil {
		return nil, err
	}
	self := spec.Self
	if self == "" {
		self = "/proc/self/exe"
	}
	cmd := &exec.Cmd{
		Path:       self,
		Args:       []string{initArg0},
		Env:        []string{}, // the init needs none, and the server gets the plan's
		ExtraFiles: []*os.File{planFile, theirs},
	}
	if ns {
		uid, gid := os.Getuid(), os.Getgid()
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			// The init keeps what it needs to mount, configure lo and
			// drop the rest, whatever its uid in the namespace.
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP},
		}
	}
	return cmd, nil
}

// memfd returns a sealed in-memory file holding data, positioned at its
// start.
func memfd(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("sandbox: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: writing the plan: %w", err)
	}
	// Sealed: what the init reads is what was written.
	unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL)
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return f, nil
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// anyUnder reports whether one of paths is dir or under it.
func anyUnder(paths []string, dir string) bool {
	for _, p := range paths {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// readFileMax reads at most max bytes of the file name.
func readFileMax(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}
