package e2e

import (
	"os"
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
