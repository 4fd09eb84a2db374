package sandbox

import (
	"slices"
	"strconv"
	"strings"
)

// Network is what network a sandboxed server has.
type Network uint8

const (
	// NoNetwork: only lo, with nothing listening.
	NoNetwork Network = iota
	// ProxyNetwork: aegis's egress proxy at 127.0.0.1:[Spec.ProxyPort],
	// and nothing else.
	ProxyNetwork
)

// DefaultProxyPort is the port the egress proxy listens on inside a
// server's network namespace when the Spec names none. The namespace is
// the server's own, so any port is free.
const DefaultProxyPort = 3128

// Spec describes one sandbox. The zero value is a best-effort sandbox with
// no file grants beyond the program's runtime and no network.
type Spec struct {
	// Mode is how much of the sandbox must apply. Zero is [Off]; use
	// [DefaultMode] for a server whose configuration names none.
	Mode Mode

	// Read and Write are the trees the server may read, and read and
	// write: [policy.FileReach]'s. Masked are hidden from the server
	// (FileReach's Masked, and aegis's protected paths: its
	// configuration, policy, bindings, state directory and binary);
	// ReadOnly are mounted read-only. A mask wins over a grant. Paths must
	// be absolute. A grant that does not exist is skipped; so is a masked
	// or read-only tree, which has no place for a mount, but inside a
	// write grant the grant stops short of it so that the server cannot
	// make it ([Report.Absent], [Report.Frozen]).
	Read, Write, Masked, ReadOnly []string
	// List are trees whose directories the server may list, names only
	// (no file's content): a server that walks its own allowed
	// directories (server-filesystem resolves a new file's parent from
	// them) needs it beyond the trees the policy could grant.
	List []string
	// Conditional are the deny trees a mount cannot express
	// (FileReach's Conditional), for the report.
	Conditional []string

	// Env lists what the server's environment holds beyond the minimal
	// one (PATH, HOME, LANG, TZ, TMPDIR and the proxy's variables): a
	// NAME takes its value from aegis's environment (and is skipped if
	// unset there), a NAME=VALUE is set as given.
	Env []string
	// Dir is the server's working directory; empty means aegis's own. It
	// is not granted by itself.
	Dir string

	// Network is what network the server has. With [ProxyNetwork],
	// [Sandbox.Listener] accepts the server's connections to the proxy.
	Network Network
	// ProxyPort is where the proxy listens inside the namespace; zero
	// means [DefaultProxyPort].
	ProxyPort int

	// Probe is what the kernel allows; nil means [ProbeKernel].
	Probe *Probe
	// Self is the aegis binary that the init runs from; empty means
	// /proc/self/exe. The binary MUST call [IsInit] and [Init] first
	// thing in main (tests: in TestMain).
	Self string
}

// Unbound returns the spec of the twin that runs a tool unbound (R29): no
// file authority beyond its program and runtime (not even the names in
// List), no network at all, the same masks, and nothing less than all of
// it: its Mode is [Required].
func (s *Spec) Unbound() *Spec {
	u := *s
	u.Mode = Required
	u.Read, u.Write, u.List, u.Conditional = nil, nil, nil, nil
	u.Network = NoNetwork
	u.Masked = slices.Clone(s.Masked)
	u.ReadOnly = slices.Clone(s.ReadOnly)
	return &u
}

func (s *Spec) proxyPort() int {
	if s.ProxyPort > 0 && s.ProxyPort < 65536 {
		return s.ProxyPort
	}
	return DefaultProxyPort
}

// environ returns the server's environment: the minimal one, the
// variables the spec lists, and the proxy's; lookup reads aegis's.
func (s *Spec) environ(lookup func(string) (string, bool), tmp string, netw Network) []string {
	env := map[string]string{}
	for _, name := range []string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME"} {
		if v, ok := lookup(name); ok {
			env[name] = v
		}
	}
	if env["PATH"] == "" {
		env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	env["TMPDIR"] = tmp
	for _, e := range s.Env {
		if name, v, ok := strings.Cut(e, "="); ok {
			env[name] = v
		} else if v, ok := lookup(e); ok {
			env[e] = v
		}
	}
	if netw == ProxyNetwork {
		url := "http://127.0.0.1:" + strconv.Itoa(s.proxyPort())
		for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
			env[name] = url
			env[strings.ToLower(name)] = url
		}
		env["NO_PROXY"], env["no_proxy"] = "", ""
		// Node's own fetch ignores the variables above unless told to
		// (Node 22.21 and 24.5 on); other runtimes read them as they are.
		if _, set := env["NODE_USE_ENV_PROXY"]; !set {
			env["NODE_USE_ENV_PROXY"] = "1"
		}
	} else {
		for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"} {
			delete(env, name)
			delete(env, strings.ToLower(name))
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// getenv returns the value of name in env (NAME=VALUE entries).
func getenv(env []string, name string) string {
	for _, e := range env {
		if k, v, ok := strings.Cut(e, "="); ok && k == name {
			return v
		}
	}
	return ""
}
