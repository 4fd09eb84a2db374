package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// TestSandboxServerOnItsOwn runs a stand-in server that ignores its
// arguments and reads ~/.ssh/id_rsa and aegis's configuration, and dials
// a loopback port, on its own (testdata/sandbox/peek.mjs), through aegis
// run with a policy that allows its tool. Without the sandbox it gets all
// three (the control); under `sandbox: required` the key and the
// configuration are not there and the loopback listener is never
// reached, while the file the policy could allow still reads.
func TestSandboxServerOnItsOwn(t *testing.T) {
	needNode(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	const secret = "e2e-sandbox-FAKE-KEY"
	for _, tt := range []struct {
		mode    string
		wantKey bool
	}{{"off", true}, {"required", false}} {
		t.Run(tt.mode, func(t *testing.T) {
			home := tempDir(t)
			aegisHome := filepath.Join(home, ".local/state/aegis")
			config := filepath.Join(home, ".config/aegis/aegis.yaml")
			writeFiles(t, home, map[string]string{
				".config/aegis/aegis.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  peek: {schema: off, sandbox: " + tt.mode + ", dlp: {off: true}}\n",
				".config/aegis/policy.yaml": "version: 1\nrules:\n" +
					"  - {id: peek, effect: allow, server: peek, tool: peek, unbound: true}\n" +
					"  - {id: projects, effect: allow, capability: fs.read, path_under: " + filepath.Join(home, "projects") + "}\n" +
					"  - {id: no-ssh, effect: deny, path_under: " + filepath.Join(home, ".ssh") + "}\n",
				".ssh/id_rsa":        secret,
				"projects/notes.txt": allowedText,
			})
			before := accepted.Load()
			plan := writeMethodPlan(t, []methodCall{{Name: "peek", Tool: "peek", Arguments: map[string]any{}}}, false)
			r := mustDriver(t, baseEnv(home, aegisHome), []string{"calls", plan},
				aegisRun(config, "peek", nodeBin, filepath.Join(e2eDir, "testdata", "sandbox", "peek.mjs"), config, port))
			out := strings.Join(stepResults(t, r), "\n")
			dialed := accepted.Load() > before
			if got := strings.Contains(out, secret); got != tt.wantKey {
				t.Errorf("the key reached the server's answer: %v, want %v:\n%s", got, tt.wantKey, out)
			}
			if got := strings.Contains(out, "version: 1"); got != tt.wantKey {
				t.Errorf("aegis's configuration reached the server's answer: %v, want %v:\n%s", got, tt.wantKey, out)
			}
			if dialed != tt.wantKey {
				t.Errorf("the loopback listener outside was reached: %v, want %v:\n%s", dialed, tt.wantKey, out)
			}
			if !strings.Contains(out, allowedText) {
				t.Errorf("the file the policy allows did not read:\n%s", out)
			}
			t.Logf("the server says:\n%s", out)
			if !tt.wantKey && !strings.Contains(r.Stderr, `sandbox: mode=required applied=true`) {
				t.Errorf("aegis did not say which sandbox it applied:\n%s", r.Stderr)
			}
		})
	}
}

// TestSandboxFilesystem runs the real filesystem server under `sandbox:
// required`: the reads and writes the policy allows work (a new file
// too, whose parent the server finds by listing its allowed directory),
// and what it refuses is still refused, by aegis.
func TestSandboxFilesystem(t *testing.T) {
	needNode(t)
	h := newFSHome(t)
	config := filepath.Join(h.home, "sandboxed.yaml")
	policy, err := os.ReadFile(filepath.Join(e2eDir, "testdata", "filesystem", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, h.home, map[string]string{
		"sandboxed.yaml":        "version: 1\npolicy: sandboxed-policy.yaml\nservers:\n  fs: {builtin: filesystem, sandbox: required}\n",
		"sandboxed-policy.yaml": string(policy),
	})
	key := filepath.Join(h.home, ".ssh", "id_rsa")
	calls := []fsCall{
		{name: "read_text_file of an allowed file", tool: "read_text_file", args: map[string]any{"path": filepath.Join(h.home, "projects/notes.txt")}, want: record.Allow, contains: allowedText},
		{name: "write_file of a new file", tool: "write_file", args: map[string]any{"path": filepath.Join(h.home, "projects/new.txt"), "content": "written"}, want: record.Allow, contains: "Successfully wrote"},
		{name: "list_directory of the projects", tool: "list_directory", args: map[string]any{"path": filepath.Join(h.home, "projects")}, want: record.Allow, contains: "new.txt"},
		{name: "read_text_file of the key", tool: "read_text_file", args: map[string]any{"path": key}, want: record.Deny, rule: "no-secrets"},
	}
	server := []string{nodeBin, filepath.Join(e2eDir, filesystemJS), h.home}
	r := mustDriver(t, h.env, []string{"calls", writePlan(t, calls)}, aegisRun(config, "fs", server...))
	results := tsResults(t, r)
	for i, c := range calls {
		checkFSResult(t, c, results[i])
	}
	if b, err := os.ReadFile(filepath.Join(h.home, "projects/new.txt")); err != nil || string(b) != "written" {
		t.Errorf("the new file: %q, %v", b, err)
	}
	if !strings.Contains(r.Stderr, "sandbox: mode=required applied=true") || !strings.Contains(r.Stderr, "masked=[") {
		t.Errorf("aegis did not report the sandbox:\n%s", r.Stderr)
	}
	if strings.Contains(string(r.Raw), h.secret) {
		t.Error("the key reached the client")
	}
}
