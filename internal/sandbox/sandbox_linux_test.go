package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"
)

// needKernel skips the test when the kernel lacks a part of the sandbox,
// and fails it instead on CI, where every part must be there.
func needKernel(t *testing.T) {
	t.Helper()
	p := ProbeKernel()
	if ms := p.missing(); len(ms) > 0 {
		e := &UnavailableError{Missing: ms}
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI runs the sandbox tests on a kernel with every part: %v", e)
		}
		t.Skipf("the kernel lacks a part of the sandbox: %v", e)
	}
}

// fixture is one test's world: a root outside /tmp (the sandbox gives the
// server a private /tmp), holding testdata/tree.txtar and the stand-in.
type fixture struct {
	root, home, standin string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := "/var/tmp"
	if _, err := os.Stat(base); err != nil {
		base, _ = os.Getwd()
	}
	root, err := os.MkdirTemp(base, "aegis-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	ar, err := txtar.ParseFile("testdata/tree.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		p := filepath.Join(root, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(string(f.Data), "-> "); ok {
			if err := os.Symlink(filepath.Join(root, strings.TrimSpace(target)), p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The stand-in is this test binary, copied where the sandbox lets it
	// run from (the build directory is in the host's /tmp).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	os.Mkdir(bin, 0o755)
	standin := filepath.Join(bin, "standin")
	copyFile(t, self, standin)
	return &fixture{root: root, home: filepath.Join(root, "home"), standin: standin}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) path(rel string) string { return filepath.Join(f.root, rel) }

// spec is the sandbox of the tests: the home directory readable, its work
// directory writable, ~/.ssh and the state directory masked.
func (f *fixture) spec(mode Mode) *Spec {
	return &Spec{
		Mode:    mode,
		Read:    []string{f.home},
		Write:   []string{f.path("home/work")},
		Masked:  []string{f.path("home/.ssh"), f.path("state")},
		Network: ProxyNetwork,
		Env:     []string{"HOME=" + f.home},
	}
}

// run starts the stand-in in the sandbox with probes, serves its proxy
// port (each connection gets "proxy"), and returns the outcome of each
// probe and the sandbox's report.
func (f *fixture) run(t *testing.T, spec *Spec, probes ...string) (map[string]string, Report) {
	t.Helper()
	argv := append([]string{f.standin}, probes...)
	cmd, sb, err := Command(spec, argv)
	if err != nil {
		t.Fatalf("Command: %v", err)
	}
	defer sb.Close()
	if ln := sb.Listener(); ln != nil {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				io.WriteString(c, "proxy\n")
				c.Close()
			}
		}()
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the stand-in: %v\nstderr:\n%s", err, stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rep, err := sb.Ready(ctx)
	if err != nil {
		t.Fatalf("Ready: %v\nstderr:\n%s", err, stderr.String())
	}
	got := map[string]string{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		probe, res, _ := strings.Cut(sc.Text(), "\t")
		got[probe] = res
	}
	return got, rep
}

// TestSandbox runs the stand-in, which tries on its own what a server
// must not do, under the full sandbox.
func TestSandbox(t *testing.T) {
	needKernel(t)
	f := newFixture(t)
	// A listener in the root network namespace, which the stand-in must
	// not reach.
	outside, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()
	reached := make(chan struct{}, 1)
	go func() {
		if c, err := outside.Accept(); err == nil {
			reached <- struct{}{}
			c.Close()
		}
	}()
	t.Setenv("AEGIS_SECRET_TOKEN", "s3cret")
	// A same-user daemon's socket file outside every grant (a tmux, an
	// ssh-agent): connecting needs no grant under Landlock before ABI 9.
	sock, err := net.Listen("unix", f.path("outside/agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	go func() {
		for {
			c, err := sock.Accept()
			if err != nil {
				return
			}
			reached <- struct{}{}
			c.Write([]byte("daemon\n"))
			c.Close()
		}
	}()

	spec := f.spec(Required)
	proxy := "127.0.0.1:" + strconv.Itoa(DefaultProxyPort)
	tests := []struct {
		name, probe, want string
	}{
		{"an allowed tree reads", "read:" + f.path("home/notes.txt"), "ok allowed notes"},
		{"a masked file is not there", "read:" + f.path("home/.ssh/id_rsa"), "ENOENT"},
		{"a symlink into a masked tree reaches nothing", "read:" + f.path("home/link-to-ssh/id_rsa"), "ENOENT"},
		{"the state directory is not there", "read:" + f.path("state/chain.log"), "ENOENT"},
		{"a symlink to the state directory reaches nothing", "read:" + f.path("home/link-to-state"), "ENOENT"},
		{"outside the grants", "read:" + f.path("outside/secret.txt"), "EACCES"},
		{"a write tree writes", "write:" + f.path("home/work/out.txt"), "ok "},
		{"a read tree does not write", "write:" + f.path("home/new.txt"), "EACCES"},
		{"no write outside the grants", "write:" + f.path("outside/new.txt"), "EACCES"},
		{"a masked tree does not write", "write:" + f.path("home/.ssh/authorized_keys"), "EROFS"},
		{"the private /tmp writes", "write:/tmp/scratch", "ok "},
		{"the program's runtime reads", "read:/etc/passwd", "ok"},
		{"its own /proc reads", "read:/proc/self/comm", "ok standin"},
		{"another process's /proc does not", "read:/proc/1/environ", "EACCES"},
		{"aegis's environment does not reach the server", "env:AEGIS_SECRET_TOKEN", "error unset"},
		{"the proxy variables do", "env:HTTPS_PROXY", "ok http://" + proxy},
		{"the proxy answers", "tcp:" + proxy, "ok proxy"},
		{"a loopback port outside the namespace", "tcp:" + outside.Addr().String(), "EACCES"},
		{"another port inside the namespace", "tcp:127.0.0.1:1", "EACCES"},
		{"the outside world", "tcp:192.0.2.1:80", "EACCES"},
		{"a daemon's socket file outside the grants", "unix:" + f.path("outside/agent.sock"), "EACCES"},
	}
	var probes []string
	for _, tc := range tests {
		probes = append(probes, tc.probe)
	}
	got, rep := f.run(t, spec, probes...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if g := got[tc.probe]; !strings.HasPrefix(g, tc.want) || g == "" {
				t.Errorf("%s: got %q, want %q", tc.probe, g, tc.want)
			}
		})
	}
	select {
	case <-reached:
		t.Error("the listener outside the sandbox received a connection")
	case <-time.After(100 * time.Millisecond):
	}
	if diff := cmp.Diff([]Missing(nil), rep.Missing); diff != "" {
		t.Errorf("report.Missing (-want +got):\n%s", diff)
	}
	if want := "proxy only at " + proxy; rep.Network != want {
		t.Errorf("report.Network = %q, want %q", rep.Network, want)
	}
	t.Logf("report: %s", rep.String())
}

// forced returns the kernel's probe with parts taken away.
func forced(parts ...Part) *Probe {
	p := ProbeKernel()
	m := map[Part]string{}
	for k, v := range p.Missing {
		m[k] = v
	}
	for _, part := range parts {
		m[part] = "forced off by the test"
		if part == LandlockFS {
			p.Landlock = 0
		}
	}
	p.Missing = m
	return &p
}

// TestForcedProbe: a kernel without Landlock or user namespaces, forced by
// the probe. Required refuses and says which part; best-effort runs what
// is left and reports the rest.
func TestForcedProbe(t *testing.T) {
	needKernel(t)
	f := newFixture(t)
	noLandlock := []Part{LandlockFS, LandlockNet, LandlockScope}
	noUserNS := []Part{UserNS, MountNS, NetNS}
	for _, tc := range []struct {
		name        string
		without     []Part
		wantMissing []Part
		want        map[string]string // probe → outcome prefix
	}{
		{
			name: "no Landlock: the mounts and the namespace still hold", without: noLandlock,
			wantMissing: noLandlock,
			want: map[string]string{
				"read:" + f.path("home/.ssh/id_rsa"): "ENOENT",
				"read:" + f.path("state/chain.log"):  "ENOENT",
				"read:" + f.path("home/notes.txt"):   "ok allowed notes",
				"tcp:192.0.2.1:80":                   "ENETUNREACH",
			},
		},
		{
			name: "no user namespace: Landlock alone, grants carved around the masks", without: noUserNS,
			wantMissing: noUserNS,
			want: map[string]string{
				"read:" + f.path("home/.ssh/id_rsa"):        "EACCES",
				"read:" + f.path("home/link-to-ssh/id_rsa"): "EACCES",
				"read:" + f.path("state/chain.log"):         "EACCES",
				"read:" + f.path("home/notes.txt"):          "ok allowed notes",
				"read:" + f.path("outside/secret.txt"):      "EACCES",
				"write:" + f.path("home/work/out.txt"):      "ok",
				"write:" + f.path("outside/new.txt"):        "EACCES",
				"tcp:127.0.0.1:1":                           "EACCES",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := f.spec(Required)
			spec.Probe = forced(tc.without...)
			_, _, err := Command(spec, []string{f.standin})
			var ue *UnavailableError
			if !errors.As(err, &ue) || !errors.Is(err, ErrUnavailable) {
				t.Fatalf("required: Command error = %v, want an UnavailableError", err)
			}
			for _, part := range tc.without {
				if !strings.Contains(err.Error(), string(part)+": forced off by the test") {
					t.Errorf("required: %q does not name %q and why", err, part)
				}
			}

			spec.Mode = BestEffort
			var probes []string
			for p := range tc.want {
				probes = append(probes, p)
			}
			got, rep := f.run(t, spec, probes...)
			for p, want := range tc.want {
				if g := got[p]; !strings.HasPrefix(g, want) || g == "" {
					t.Errorf("%s: got %q, want %q", p, g, want)
				}
			}
			var parts []Part
			for _, m := range rep.Missing {
				parts = append(parts, m.Part)
			}
			if diff := cmp.Diff(tc.wantMissing, parts); diff != "" {
				t.Errorf("report.Missing (-want +got):\n%s", diff)
			}
			t.Logf("report: %s", rep.String())
		})
	}
}

// TestUnbound: the twin that runs a tool unbound can neither read a file
// the policy grants nor open a socket.
func TestUnbound(t *testing.T) {
	needKernel(t)
	f := newFixture(t)
	spec := f.spec(Required).Unbound()
	if spec.Network != NoNetwork || spec.Read != nil || spec.Write != nil {
		t.Fatalf("Unbound() = %+v; want no grants and no network", spec)
	}
	want := map[string]string{
		"read:" + f.path("home/notes.txt"):     "EACCES",
		"read:" + f.path("home/.ssh/id_rsa"):   "ENOENT",
		"write:" + f.path("home/work/out.txt"): "EACCES",
		"tcp:127.0.0.1:3128":                   "EACCES",
		"env:HTTPS_PROXY":                      "error unset",
		"read:/etc/passwd":                     "ok",
	}
	var probes []string
	for p := range want {
		probes = append(probes, p)
	}
	got, rep := f.run(t, spec, probes...)
	for p, w := range want {
		if g := got[p]; !strings.HasPrefix(g, w) || g == "" {
			t.Errorf("%s: got %q, want %q", p, g, w)
		}
	}
	if rep.Network != "none" {
		t.Errorf("report.Network = %q, want none", rep.Network)
	}
}

// TestRuntimeHosts: a package runner reaches its registry; no other
// program reaches anything by being what it is.
func TestRuntimeHosts(t *testing.T) {
	for path, want := range map[string][]string{
		"/usr/bin/npx":           {"registry.npmjs.org"},
		"/home/u/.local/bin/uvx": {"pypi.org", "files.pythonhosted.org"},
		"/usr/bin/node":          nil,
		"/usr/bin/npx-evil":      nil,
	} {
		if got := RuntimeHosts(path); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
}

// TestAbsentMasks: a masked or read-only tree that does not exist when the
// server starts has no place for a mount. Inside a write grant, a server
// must still not create it: not by making the directory, the file, or a
// parent on the way, nor by renaming something into its place. The write
// grants stop at the existing entries of the directories on the way (the
// cost, asserted too); the rest of the grant is as before.
func TestAbsentMasks(t *testing.T) {
	needKernel(t)
	for _, tc := range []struct {
		name    string
		without []Part // parts the probe is forced to lack
	}{
		{name: "namespaces and Landlock"},
		{name: "Landlock alone", without: []Part{UserNS, MountNS, NetNS}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			spec := &Spec{
				Mode:  Required,
				Read:  []string{f.home},
				Write: []string{f.home},
				// .aws, .netrc and work/deep do not exist; .ssh does.
				Masked:   []string{f.path("home/.ssh"), f.path("home/.aws"), f.path("home/.netrc"), f.path("home/work/deep/.env"), f.path("state")},
				ReadOnly: []string{f.path("home/.bashrc")},
				Env:      []string{"HOME=" + f.home},
			}
			if tc.without != nil {
				spec.Mode = BestEffort
				spec.Probe = forced(tc.without...)
			}
			tests := []struct {
				name, probe, want string
			}{
				{"an absent masked directory is not made", "mkdir:" + f.path("home/.aws"), "EACCES"},
				{"nor a file in it", "write:" + f.path("home/.aws/credentials"), "ENOENT"},
				{"an absent masked file is not made", "write:" + f.path("home/.netrc"), "EACCES"},
				{"an absent read-only file is not made", "write:" + f.path("home/.bashrc"), "EACCES"},
				{"nor the parent of an absent masked tree", "mkdir:" + f.path("home/work/deep/.env"), "EACCES"},
				{"nor is a directory renamed into its place", "rename:" + f.path("home/docs") + ">" + f.path("home/.aws"), "EACCES"},
				{"nor is a parent on the way renamed away", "rename:" + f.path("home/work") + ">" + f.path("home/work2"), "EACCES"},
				{"an existing masked tree is still hidden", "read:" + f.path("home/.ssh/id_rsa"), "E"},
				// What the grant keeps, and what it costs.
				{"an existing file in the home writes", "write:" + f.path("home/notes.txt"), "ok"},
				{"a directory off the way writes", "write:" + f.path("home/docs/new.txt"), "ok"},
				{"and makes directories", "mkdir:" + f.path("home/docs/a/b"), "ok"},
				{"the cost: nothing new directly in the home", "write:" + f.path("home/new.txt"), "EACCES"},
			}
			var probes []string
			for _, tt := range tests {
				probes = append(probes, tt.probe)
			}
			got, rep := f.run(t, spec, probes...)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					if g := got[tt.probe]; !strings.HasPrefix(g, tt.want) || g == "" {
						t.Errorf("%s: got %q, want %q", tt.probe, g, tt.want)
					}
				})
			}
			for _, p := range []string{"home/.aws", "home/.netrc", "home/.bashrc", "home/work/deep", "home/work2"} {
				if _, err := os.Lstat(f.path(p)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists after the run (%v)", p, err)
				}
			}
			wantAbsent := []string{f.path("home/.aws"), f.path("home/.bashrc"), f.path("home/.netrc"), f.path("home/work/deep/.env")}
			if diff := cmp.Diff(wantAbsent, rep.Absent); diff != "" {
				t.Errorf("report.Absent (-want +got):\n%s", diff)
			}
			wantFrozen := []string{f.home, f.path("home/work")}
			if diff := cmp.Diff(wantFrozen, rep.Frozen); diff != "" {
				t.Errorf("report.Frozen (-want +got):\n%s", diff)
			}
			if s := rep.String(); !strings.Contains(s, "absent=[") || !strings.Contains(s, "frozen=[") || !strings.Contains(s, "the write grants stop at") {
				t.Errorf("the report does not say what was done for the absent trees: %s", s)
			}
			t.Logf("report: %s", rep.String())
		})
	}
	// Without Landlock nothing can keep the server from making them: the
	// report says so.
	t.Run("no Landlock", func(t *testing.T) {
		f := newFixture(t)
		spec := &Spec{
			Mode: BestEffort, Probe: forced(LandlockFS, LandlockNet, LandlockScope),
			Read: []string{f.home}, Write: []string{f.home},
			Masked: []string{f.path("home/.aws")},
		}
		_, sb, err := Command(spec, []string{f.standin})
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		rep := sb.Report()
		if diff := cmp.Diff([]string{f.path("home/.aws")}, rep.Absent); diff != "" {
			t.Errorf("report.Absent (-want +got):\n%s", diff)
		}
		if len(rep.Frozen) > 0 || !strings.Contains(rep.String(), "without Landlock nothing keeps the server from making them") {
			t.Errorf("the report does not say the absent tree is open: %s", rep.String())
		}
	})
}

// TestTrust: the proxy's CA reaches the server as files in its temp
// directory, named by the variables TLS clients read, wherever that
// directory is; a variable the configuration sets is left alone; a server
// without the proxy gets none.
func TestTrust(t *testing.T) {
	needKernel(t)
	f := newFixture(t)
	ca := []byte("-----BEGIN CERTIFICATE-----\nnot parsed by the sandbox\n-----END CERTIFICATE-----\n")
	digest := func(b []byte) string { return fmt.Sprintf("ok %x", sha256.Sum256(b)) }
	var bundle []byte
	for _, name := range append([]string{os.Getenv("SSL_CERT_FILE")}, systemBundles...) {
		if b, err := os.ReadFile(name); err == nil && len(b) > 0 {
			bundle = append(append(b, '\n'), ca...)
			break
		}
	}
	if bundle == nil {
		t.Skip("no system bundle of roots on this machine")
	}
	// A grant under /tmp: the server's temp directory is one of its own
	// there, not a private /tmp.
	underTmp, err := os.MkdirTemp("/tmp", "aegis-trust-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(underTmp)

	tests := []struct {
		name   string
		spec   func(*Spec)
		tmp    string // the server's temp directory; "" for a directory of its own
		wantCA bool
		mine   bool // SSL_CERT_FILE is the configuration's
	}{
		{"a private /tmp", func(*Spec) {}, "/tmp", true, false},
		{"a temp directory of its own", func(s *Spec) { s.Read = append(s.Read, underTmp) }, "", true, false},
		{"the configuration's SSL_CERT_FILE", func(s *Spec) { s.Env = append(s.Env, "SSL_CERT_FILE=/etc/mine.pem") }, "/tmp", true, true},
		{"no proxy, no CA", func(s *Spec) { s.Network = NoNetwork }, "/tmp", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := f.spec(Required)
			spec.CACert = ca
			tt.spec(spec)
			probes := []string{"env:TMPDIR", "env:NODE_EXTRA_CA_CERTS", "env:SSL_CERT_FILE", "env:REQUESTS_CA_BUNDLE", "env:CURL_CA_BUNDLE",
				"sha256:$TMPDIR/aegis-ca.pem", "sha256:$TMPDIR/aegis-ca-bundle.pem"}
			got, _ := f.run(t, spec, probes...)
			tmp := strings.TrimPrefix(got["env:TMPDIR"], "ok ")
			if tt.tmp != "" && tmp != tt.tmp || tt.tmp == "" && !strings.HasPrefix(tmp, os.TempDir()+"/aegis-sandbox-") {
				t.Fatalf("TMPDIR %q, want %q", tmp, tt.tmp)
			}
			caPath, bundlePath := tmp+"/aegis-ca.pem", tmp+"/aegis-ca-bundle.pem"
			want := map[string]string{
				"env:NODE_EXTRA_CA_CERTS":            "ok " + caPath,
				"env:SSL_CERT_FILE":                  "ok " + bundlePath,
				"env:REQUESTS_CA_BUNDLE":             "ok " + bundlePath,
				"env:CURL_CA_BUNDLE":                 "ok " + bundlePath,
				"sha256:$TMPDIR/aegis-ca.pem":        digest(ca),
				"sha256:$TMPDIR/aegis-ca-bundle.pem": digest(bundle),
			}
			if tt.mine {
				want["env:SSL_CERT_FILE"] = "ok /etc/mine.pem"
			}
			if !tt.wantCA {
				for _, p := range probes[1:] {
					want[p] = "error unset"
					if strings.HasPrefix(p, "sha256:") {
						want[p] = "ENOENT"
					}
				}
			}
			for _, p := range probes[1:] {
				if got[p] != want[p] {
					t.Errorf("%s: got %q, want %q", p, got[p], want[p])
				}
			}
		})
	}
}
