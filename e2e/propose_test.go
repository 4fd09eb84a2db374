package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// TestProposedBindings: the real filesystem server, configured with no
// bindings at all, is run once through aegis run, which pins its tools;
// `aegis bindings propose` turns the pinned definitions into a bindings
// file; accepted as it is, it decides the server's calls under the
// policy (an allowed read and write go through, the key is refused).
// Edited to another shape, as a changed schema leaves it, the binding is
// stale and its tool is refused until proposed and reviewed again.
func TestProposedBindings(t *testing.T) {
	needNode(t)
	h := newFSHome(t)
	policy, err := os.ReadFile(filepath.Join(e2eDir, "testdata", "filesystem", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, h.home, map[string]string{
		"unbound.yaml":   "version: 1\npolicy: fs-policy.yaml\nservers:\n  fs: {}\n",
		"fs-policy.yaml": string(policy),
		// The sandbox off: without the builtin, aegis does not know that
		// the server walks the directories of its command line, so the
		// sandbox would not let it list them (docs/config.md).
		"proposed.yaml": "version: 1\npolicy: fs-policy.yaml\nservers:\n  fs: {bindings: [fs-bindings.yaml], sandbox: \"off\"}\n",
	})
	server := []string{nodeBin, filepath.Join(e2eDir, filesystemJS), h.home}
	// 1. The server's tools are listed, and pinned, once.
	mustDriver(t, h.env, []string{"calls", writePlan(t, nil)}, aegisRun(filepath.Join(h.home, "unbound.yaml"), "fs", server...))
	// 2. The proposal.
	out, code := aegisCLI(t, h.env, "bindings", "propose", "--server", "fs")
	if code != 0 {
		t.Fatalf("aegis bindings propose: exit %d\n%s", code, out)
	}
	t.Logf("the proposal:\n%s", out)
	for _, want := range []string{"read_text_file:", `{pointer: "/path", kind: fs.read}`, "write_file:", `{pointer: "/path", kind: fs.write}`, `{pointer: "/paths/*", kind: fs.read}`, "shape:", "PROPOSED"} {
		if !strings.Contains(out, want) {
			t.Errorf("the proposal lacks %s", want)
		}
	}
	bindings := filepath.Join(h.home, "fs-bindings.yaml")
	if err := os.WriteFile(bindings, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	// 3. Accepted: the calls are decided on it.
	key := filepath.Join(h.home, ".ssh", "id_rsa")
	calls := []fsCall{
		{name: "read_text_file of an allowed file", tool: "read_text_file", args: map[string]any{"path": filepath.Join(h.home, "projects/notes.txt")}, want: record.Allow, contains: allowedText},
		{name: "write_file in the projects", tool: "write_file", args: map[string]any{"path": filepath.Join(h.home, "projects/proposed.txt"), "content": "ok"}, want: record.Allow, contains: "Successfully wrote"},
		{name: "read_text_file of the key", tool: "read_text_file", args: map[string]any{"path": key}, want: record.Deny, rule: "no-secrets"},
		{name: "read_multiple_files with the key", tool: "read_multiple_files", args: map[string]any{"paths": []string{filepath.Join(h.home, "projects/notes.txt"), key}}, want: record.Deny, rule: "no-secrets"},
	}
	r := mustDriver(t, h.env, []string{"calls", writePlan(t, calls)}, aegisRun(filepath.Join(h.home, "proposed.yaml"), "fs", server...))
	results := tsResults(t, r)
	for i, c := range calls {
		checkFSResult(t, c, results[i])
	}
	if strings.Contains(string(r.Raw), h.secret) {
		t.Error("the key reached the client")
	}
	// 4. Stale: the shape the binding was reviewed for is not the pinned one.
	stale := strings.Replace(out, "write_file:\n    tier: mutating", "write_file:\n    tier: mutating", 1)
	i := strings.Index(stale, "write_file:")
	j := strings.Index(stale[i:], `shape: "`) + i + len(`shape: "`)
	stale = stale[:j] + strings.Repeat("0", 64) + stale[j+64:]
	if err := os.WriteFile(bindings, []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	r = mustDriver(t, h.env, []string{"calls", writePlan(t, calls[1:2])}, aegisRun(filepath.Join(h.home, "proposed.yaml"), "fs", server...))
	res := tsResults(t, r)
	if len(res) != 1 || !res[0].isError || !strings.Contains(res[0].text, "reviewed for another input schema") {
		t.Errorf("write_file with a stale binding: %+v", res)
	}
}

// TestProposedGitBindings: the real git server from npm (28 tools, no
// curated table) gets its bindings from a proposal, accepted as it is:
// its calls are then decided on what they name — a status of a
// repository in the projects goes, a log of ~/.ssh is refused, a clone
// from a loopback URL is refused before the server could connect, and an
// init in the projects makes the repository.
func TestProposedGitBindings(t *testing.T) {
	needNode(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on this machine")
	}
	h := newFSHome(t)
	policy, err := os.ReadFile(filepath.Join(e2eDir, "testdata", "filesystem", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(h.home, "projects", "repo")
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	gitPolicy := strings.Replace(string(policy), `tool: ["read_*"`, `tool: ["git_*", "read_*"`, 1)
	writeFiles(t, h.home, map[string]string{
		"unbound.yaml":    "version: 1\npolicy: git-policy.yaml\nservers:\n  fs: {sandbox: \"off\"}\n",
		"proposed.yaml":   "version: 1\npolicy: git-policy.yaml\nservers:\n  fs: {bindings: [git-bindings.yaml], sandbox: \"off\"}\n",
		"git-policy.yaml": gitPolicy,
	})
	server := []string{nodeBin, filepath.Join(e2eDir, "node_modules", "@cyanheads", "git-mcp-server", "dist", "index.js")}
	env := append(h.env, "MCP_TRANSPORT_TYPE=stdio", "MCP_LOG_LEVEL=error")
	mustDriver(t, env, []string{"calls", writePlan(t, nil)}, aegisRun(filepath.Join(h.home, "unbound.yaml"), "fs", server...))
	out, code := aegisCLI(t, env, "bindings", "propose", "--server", "fs")
	if code != 0 {
		t.Fatalf("aegis bindings propose: exit %d\n%s", code, out)
	}
	if n := strings.Count(out, "\n  git_"); n != 28 {
		t.Errorf("the proposal binds %d tools, want the server's 28:\n%s", n, out)
	}
	if err := os.WriteFile(filepath.Join(h.home, "git-bindings.yaml"), []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	newRepo := filepath.Join(h.home, "projects", "new")
	calls := []fsCall{
		{name: "git_status of a repository in the projects", tool: "git_status", args: map[string]any{"path": repo}, want: record.Allow},
		{name: "git_log of ~/.ssh", tool: "git_log", args: map[string]any{"path": filepath.Join(h.home, ".ssh")}, want: record.Deny, rule: "no-secrets"},
		{name: "git_clone from a loopback URL", tool: "git_clone", args: map[string]any{"url": "http://127.0.0.1:9/x.git", "path": filepath.Join(h.home, "projects", "clone")}, want: record.Deny},
		{name: "git_init in the projects", tool: "git_init", args: map[string]any{"path": newRepo}, want: record.Allow},
	}
	r := mustDriver(t, env, []string{"calls", writePlan(t, calls)}, aegisRun(filepath.Join(h.home, "proposed.yaml"), "fs", server...))
	results := tsResults(t, r)
	if len(results) != len(calls) {
		t.Fatalf("%d results:\n%s", len(results), r.Stderr)
	}
	for i, c := range calls {
		res := results[i]
		switch {
		case c.want == record.Allow && strings.HasPrefix(res.text, "aegis"):
			t.Errorf("%s: refused by aegis: %+v", c.name, res)
		case c.want == record.Allow && (res.isError || res.err != ""):
			t.Errorf("%s: the server failed: %+v", c.name, res)
		case c.want == record.Deny && (!res.isError || !strings.HasPrefix(res.text, "aegis denied this call: ")):
			t.Errorf("%s: not refused by aegis: %+v", c.name, res)
		}
	}
	if _, err := os.Stat(filepath.Join(newRepo, ".git")); err != nil {
		t.Errorf("git_init made no repository: %v\n%+v", err, results[3])
	}
	if _, err := os.Stat(filepath.Join(h.home, "projects", "clone")); !os.IsNotExist(err) {
		t.Errorf("the refused clone left %v", err)
	}
}
