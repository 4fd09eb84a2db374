package config

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// TestLoadProtectsAegis: Load protects the configuration, the policy,
// every bindings file and the state directory, in the form spelled and in
// the form links resolve to, and the engine it builds refuses a wrapped
// server's read or write of them under a policy that allows everything.
func TestLoadProtectsAegis(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(root, "real")
	for _, d := range []string{"conf", "home/.local/state"} {
		if err := os.MkdirAll(filepath.Join(real, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The configuration is reached through a link, the state directory
	// does not exist yet.
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"aegis.yaml": "version: 1\nhome: " + real + "/home\npolicy: policy.yaml\nservers:\n" +
			"  fs: {builtin: filesystem, local: true}\n  b: {bindings: [b.yaml]}\n",
		"policy.yaml": "version: 1\nrules:\n" +
			"  - {id: tools, effect: allow, server: fs, tool: '*'}\n" +
			"  - {id: all, effect: allow, capability: [fs.read, fs.write], path_under: /}\n",
		"b.yaml": "version: 1\ntools: {}\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(real, "conf", name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(link, "home", ".local", "state", "aegis")
	t.Setenv("AEGIS_HOME", state)
	t.Setenv("HOME", filepath.Join(real, "home"))
	// Two MCP clients are installed: Cursor and Claude Desktop.
	var clients []string
	for _, f := range []string{".cursor/mcp.json", ".config/Claude/claude_desktop_config.json"} {
		p := filepath.Join(real, "home", f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, p)
	}
	cfg, err := Load(filepath.Join(link, "conf", "aegis.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range []string{"conf/aegis.yaml", "conf/b.yaml", "conf/policy.yaml", "home/.local/state/aegis"} {
		want = append(want, filepath.Join(link, p), filepath.Join(real, p))
	}
	// What launches aegis: this executable, and the MCP clients'
	// configurations under the home.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, exe)
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		want = append(want, r)
	}
	// Those of clients that are installed: here Cursor's and Claude's.
	want = append(want, clients...)
	slices.Sort(want)
	want = slices.Compact(want)
	if diff := cmp.Diff(want, cfg.Protected); diff != "" {
		t.Errorf("protected (-want +got):\n%s", diff)
	}
	eng, err := cfg.Engine()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tool, path string }{
		{"write_file", filepath.Join(link, "conf", "policy.yaml")},
		{"read_text_file", filepath.Join(real, "conf", "aegis.yaml")},
		{"read_text_file", filepath.Join(state, "chain", "fs", "chain.key")},
		{"move_file", filepath.Join(real, "home", ".local")},
		{"write_file", filepath.Join(real, "home", ".cursor", "mcp.json")},
		{"read_text_file", "~/.config/Claude/claude_desktop_config.json"},
		{"write_file", exe},
	} {
		a := `{"path":"` + tc.path + `","content":"x"}`
		if tc.tool == "move_file" {
			a = `{"source":"` + tc.path + `","destination":"` + real + `/x"}`
		}
		v := eng.Check(context.Background(), &gateway.Call{Server: "fs", Tool: tc.tool, Origin: capability.Interactive, Arguments: []byte(a)})
		if v.Effect != policy.Deny || gateway.RuleOf(&v) != gateway.RuleSelf {
			t.Errorf("%s %s: %s (%s), want refused by %s", tc.tool, tc.path, v.Effect, v.Reason(), gateway.RuleSelf)
		}
	}
	v := eng.Check(context.Background(), &gateway.Call{Server: "fs", Tool: "write_file", Origin: capability.Interactive,
		Arguments: []byte(`{"path":"` + real + `/home/notes","content":"x"}`)})
	if v.Effect != policy.Allow {
		t.Errorf("a write elsewhere: %s (%s), want allow", v.Effect, v.Reason())
	}
}

// TestProtectRelative: a relative configuration path is protected as the
// absolute path it names.
func TestProtectRelative(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	got, err := protect([]string{"aegis.yaml", "./p/../policy.yaml"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{filepath.Join(dir, "aegis.yaml"), filepath.Join(dir, "policy.yaml")}, got); diff != "" {
		t.Errorf("protected (-want +got):\n%s", diff)
	}
}
