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

	// CACert holds PEM certificates the server's TLS clients are to trust
	// beyond the system's roots: the egress proxy's CA (its certificate,
	// never its key), with which the proxy intercepts the TLS of the hosts
	// whose credentials it holds. With [ProxyNetwork], Command writes it to
	// the server's private temp directory, alone as aegis-ca.pem and after
	// the system's roots as aegis-ca-bundle.pem, and names the first in
	// NODE_EXTRA_CA_CERTS (Node adds it to its own roots) and the second in
	// SSL_CERT_FILE (OpenSSL, Go, Ruby), REQUESTS_CA_BUNDLE (Python's
	// requests) and CURL_CA_BUNDLE, unless Env gives that variable a
	// value. Without a system bundle to start from (none of the usual
	// files) only NODE_EXTRA_CA_CERTS is set. Nil means none.
	CACert []byte

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
// variables the spec lists, the proxy's, and those naming trust, the
// files the server is to trust; lookup reads aegis's.
func (s *Spec) environ(lookup func(string) (string, bool), tmp string, netw Network, trust trustFiles) []string {
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
		for name, path := range trust.vars() {
			if _, set := env[name]; !set && path != "" {
				env[name] = path
			}
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

// The files of Spec.CACert, in the server's temp directory.
const (
	caFile       = "aegis-ca.pem"
	caBundleFile = "aegis-ca-bundle.pem"
)

// trustFiles are the paths, as the server sees them, of the files it is
// to trust: the CA alone and the bundle (empty: none).
type trustFiles struct{ ca, bundle string }

// vars maps each variable that names a trust file to the file.
func (t trustFiles) vars() map[string]string {
	return map[string]string{
		"NODE_EXTRA_CA_CERTS": t.ca,
		"SSL_CERT_FILE":       t.bundle,
		"REQUESTS_CA_BUNDLE":  t.bundle,
		"CURL_CA_BUNDLE":      t.bundle,
	}
}

// tmpFile is a file the server finds in its temp directory.
type tmpFile struct {
	Name string `json:"name"` // a base name
	Data []byte `json:"data"`
}

// systemBundles are the system's bundles of trusted roots, the first that
// exists used: Go's list (crypto/x509, root_linux.go).
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo, Arch
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL 6
	"/etc/ssl/ca-bundle.pem",                            // OpenSUSE
	"/etc/pki/tls/cacert.pem",                           // OpenELEC
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine
}

// maxBundleBytes bounds the system bundle copied into the plan, which is
// itself bounded (maxPlanBytes).
const maxBundleBytes = 2 << 20

// trustFilesFor returns the files of ca for the server's temp directory:
// ca alone, and after the system's roots (aegis's SSL_CERT_FILE, else the
// first of systemBundles), unless there are none or they are too large.
// readFile reads a file, at most max bytes.
func trustFilesFor(ca []byte, lookup func(string) (string, bool), readFile func(name string, max int64) ([]byte, error)) []tmpFile {
	if len(ca) == 0 {
		return nil
	}
	files := []tmpFile{{Name: caFile, Data: ca}}
	candidates := systemBundles
	if f, ok := lookup("SSL_CERT_FILE"); ok && f != "" {
		candidates = []string{f}
	}
	for _, f := range candidates {
		sys, err := readFile(f, maxBundleBytes+1)
		if err != nil || len(sys) == 0 {
			continue
		}
		if len(sys) > maxBundleBytes {
			break
		}
		bundle := make([]byte, 0, len(sys)+1+len(ca))
		bundle = append(append(bundle, sys...), '\n')
		files = append(files, tmpFile{Name: caBundleFile, Data: append(bundle, ca...)})
		break
	}
	return files
}

// trustOf returns where the server finds files in its temp directory tmp.
func trustOf(tmp string, files []tmpFile) trustFiles {
	var t trustFiles
	for _, f := range files {
		switch f.Name {
		case caFile:
			t.ca = tmp + "/" + caFile
		case caBundleFile:
			t.bundle = tmp + "/" + caBundleFile
		}
	}
	return t
}
