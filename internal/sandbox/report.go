package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// A Part is one piece of the sandbox that the kernel may lack.
type Part string

// The parts of a sandbox. [Required] needs every one.
const (
	UserNS        Part = "user namespace"
	MountNS       Part = "mount namespace"
	NetNS         Part = "network namespace"
	LandlockFS    Part = "Landlock file rules"
	LandlockNet   Part = "Landlock TCP rules (ABI 4)"
	UnixSockets   Part = "no UNIX sockets of its own (seccomp)"
	LandlockScope Part = "Landlock signal and abstract-socket scoping (ABI 6)"
)

// Parts lists every part, in the order they are applied.
var Parts = []Part{UserNS, MountNS, NetNS, LandlockFS, LandlockNet, LandlockScope, UnixSockets}

// Missing is a part the sandbox could not apply, and why.
type Missing struct {
	Part Part
	Why  string
}

func (m Missing) String() string { return string(m.Part) + ": " + m.Why }

// ErrUnavailable is the root of the errors [Command] returns in [Required]
// mode when the kernel lacks a part.
var ErrUnavailable = errors.New("sandbox: unavailable")

// An UnavailableError says which parts a required sandbox lacks.
type UnavailableError struct {
	Missing []Missing
}

func (e *UnavailableError) Error() string {
	parts := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		parts[i] = m.String()
	}
	return "sandbox: required, but the kernel does not allow it: " + strings.Join(parts, "; ")
}

// Unwrap returns [ErrUnavailable].
func (e *UnavailableError) Unwrap() error { return ErrUnavailable }

// Report says what a sandbox applies, for the log line at start
// (issue 16's diagnostics): a user whose server breaks under the sandbox
// reads from it why.
type Report struct {
	Mode Mode
	// Applied says the server runs in a sandbox at all.
	Applied bool
	// Read and Write are the trees granted from the policy; Runtime the
	// trees and files granted for the program to run (its executable,
	// interpreter, libraries, certificates, devices, /proc/self).
	Read, Write, Runtime []string
	// List are trees the server may list, names only (Spec.List).
	List []string
	// Masked are hidden (an empty mount over each); ReadOnly are mounted
	// read-only.
	Masked, ReadOnly []string
	// Absent are the masked and read-only trees inside a write grant that
	// did not exist when the server started: no mount can go there.
	Absent []string
	// Frozen are the directories on the way from a write grant to an
	// absent tree (to every masked and read-only tree without a mount
	// namespace): so that the server cannot make that tree, its write
	// grants stop at their existing entries, and it can make, remove or
	// rename nothing directly in them. Creating an absent tree (an empty
	// directory will do) lifts this for it at the next start.
	Frozen []string
	// RuntimeHosts are the hosts the program reaches through the proxy
	// to start, whatever the policy (a package runner's registry, on port
	// 443): [RuntimeHosts] of its program.
	RuntimeHosts []string
	// Network is "proxy only at 127.0.0.1:N", "none", or what is left
	// when the network namespace is missing.
	Network string
	// Missing are the parts that best-effort could not apply.
	Missing []Missing
	// Notes say what the grants mean where it is not obvious (a grant of
	// "/", conditional denials left visible).
	Notes []string
}

// Attrs returns the report as log attributes.
func (r *Report) Attrs() []slog.Attr {
	as := []slog.Attr{
		slog.String("mode", r.Mode.String()),
		slog.Bool("applied", r.Applied),
	}
	if !r.Applied {
		return as
	}
	as = append(as,
		slog.Any("read", r.Read), slog.Any("write", r.Write), slog.Any("list", r.List),
		slog.Any("masked", r.Masked), slog.Any("read_only", r.ReadOnly),
		slog.Any("runtime", r.Runtime),
		slog.String("network", r.Network))
	if len(r.Absent) > 0 {
		as = append(as, slog.Any("absent", r.Absent))
	}
	if len(r.Frozen) > 0 {
		as = append(as, slog.Any("frozen", r.Frozen))
	}
	if len(r.RuntimeHosts) > 0 {
		as = append(as, slog.Any("runtime_hosts", r.RuntimeHosts))
	}
	if len(r.Missing) > 0 {
		ms := make([]string, len(r.Missing))
		for i, m := range r.Missing {
			ms[i] = m.String()
		}
		as = append(as, slog.Any("not_applied", ms))
	}
	if len(r.Notes) > 0 {
		as = append(as, slog.Any("notes", r.Notes))
	}
	return as
}

// String returns the report on one line.
func (r *Report) String() string {
	var b strings.Builder
	for i, a := range r.Attrs() {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%v", a.Key, a.Value)
	}
	return b.String()
}

// Probe is what the kernel allows. [ProbeKernel] asks the running kernel;
// a test sets one by hand to force an answer ([Spec.Probe]).
type Probe struct {
	// Landlock is the Landlock ABI version; 0 means none.
	Landlock int
	// Missing maps each part the kernel lacks to why. A part not in it is
	// available.
	Missing map[Part]string
}

// Has reports whether the kernel offers part.
func (p *Probe) Has(part Part) bool {
	_, missing := p.Missing[part]
	return !missing
}

// Namespaces reports whether the kernel offers user, mount and network
// namespaces: the sandbox uses all three or none.
func (p *Probe) Namespaces() bool { return p.Has(UserNS) && p.Has(MountNS) && p.Has(NetNS) }

// missing lists the parts p lacks, in the order of [Parts].
func (p *Probe) missing() []Missing {
	var ms []Missing
	for _, part := range Parts {
		if why, ok := p.Missing[part]; ok {
			ms = append(ms, Missing{part, why})
		}
	}
	return ms
}

// landlockMissing fills in the Landlock parts an ABI version lacks.
func landlockMissing(abi int, why string, m map[Part]string) {
	switch {
	case abi < 1:
		m[LandlockFS] = why
		m[LandlockNet] = why
		m[LandlockScope] = why
	case abi < 4:
		m[LandlockNet] = fmt.Sprintf("the kernel has Landlock ABI %d; TCP rules need 4 (Linux 6.7)", abi)
		m[LandlockScope] = fmt.Sprintf("the kernel has Landlock ABI %d; scoping needs 6 (Linux 6.12)", abi)
	case abi < 6:
		m[LandlockScope] = fmt.Sprintf("the kernel has Landlock ABI %d; scoping needs 6 (Linux 6.12)", abi)
	}
}
