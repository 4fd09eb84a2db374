package e2e

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// selfRule is aegis's rule for its own files (gateway.RuleSelf).
const selfRule = "aegis:self"

// TestSelfProtection puts aegis in front of the official filesystem server
// whose allowed directory is a whole home that also holds aegis's own
// configuration (~/.config/aegis) and state directory
// (~/.local/state/aegis), under a policy that allows every fs.read and
// fs.write under /, with DLP off: only the rule no policy can override
// (aegis:self, DESIGN.md R34) stands between the model and aegis's files.
// The model tries to rewrite the configuration and the policy, empty the
// pins, move the state directory away and read the chain's signing key by
// several spellings. Checked by effect: the files are unchanged, the state
// directory is where it was, and no byte of the key reached the client.
func TestSelfProtection(t *testing.T) {
	needNode(t)
	home := tempDir(t)
	h := func(p string) string { return filepath.Join(home, p) }
	aegisHome := h(".local/state/aegis")
	confDir := h(".config/aegis")
	config := filepath.Join(confDir, "aegis.yaml")
	policyFile := filepath.Join(confDir, "policy.yaml")
	files := map[string]string{
		config: "version: 1\npolicy: policy.yaml\nservers:\n  fs:\n    builtin: filesystem\n    local: true\n    dlp: {off: true}\n",
		policyFile: "version: 1\nrules:\n" +
			"  - {id: fs-tools, effect: allow, server: fs, tool: \"*\"}\n" +
			"  - {id: everything, effect: allow, capability: [fs.read, fs.write], path_under: /}\n",
		h("projects/notes.txt"): "notes: " + allowedText + "\n",
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(aegisHome, h("projects/st")); err != nil {
		t.Fatal(err)
	}
	env := baseEnv(home, aegisHome)
	key := filepath.Join(aegisHome, "chain", "fs", "chain.key") // made when aegis run starts
	pins := filepath.Join(aegisHome, "pins", "fs.json")         // written at the first tools/list
	server := []string{nodeBin, filepath.Join(e2eDir, filesystemJS), home}
	calls := []fsCall{
		{name: "write_file in the projects", tool: "write_file", args: map[string]any{"path": h("projects/ok.txt"), "content": allowedText}, want: record.Allow, contains: "Successfully wrote"},
		{name: "read_text_file of chain.key", tool: "read_text_file", args: map[string]any{"path": key}, want: record.Deny, paths: []string{key}},
		{name: "read_media_file of chain.key", tool: "read_media_file", args: map[string]any{"path": key}, want: record.Deny, paths: []string{key}},
		{name: "read_text_file of chain.key by ~ and ..", tool: "read_text_file", args: map[string]any{"path": "~/projects/../.local/state/aegis/chain/fs/chain.key"}, want: record.Deny, paths: []string{key}},
		{name: "read_text_file of chain.key through a link in the projects", tool: "read_text_file", args: map[string]any{"path": h("projects/st/chain/fs/chain.key")}, want: record.Deny, paths: []string{key}},
		{name: "read_multiple_files with chain.key among them", tool: "read_multiple_files", args: map[string]any{"paths": []string{h("projects/notes.txt"), h("projects/st/chain/fs/chain.key")}}, want: record.Deny, paths: []string{key}},
		{name: "write_file over aegis.yaml", tool: "write_file", args: map[string]any{"path": config, "content": "version: 1\npolicy: /dev/null\nservers: {}\n"}, want: record.Deny, paths: []string{config}},
		{name: "edit_file of the policy", tool: "edit_file", args: map[string]any{"path": policyFile, "edits": []map[string]any{{"oldText": "version: 1", "newText": "version: 1\nmode: shadow"}}}, want: record.Deny, paths: []string{policyFile}},
		{name: "write_file emptying the pins", tool: "write_file", args: map[string]any{"path": "~/.local/state/aegis/pins/fs.json", "content": "{}"}, want: record.Deny, paths: []string{pins}},
		{name: "move_file of the state directory's parent", tool: "move_file", args: map[string]any{"source": h(".local/state"), "destination": h("projects/stolen")}, want: record.Deny, paths: []string{h(".local/state")}},
		{name: "move_file of the configuration's directory", tool: "move_file", args: map[string]any{"source": confDir + "/", "destination": h("projects/conf")}, want: record.Deny, paths: []string{confDir}},
		{name: "move_file of a file over aegis.yaml", tool: "move_file", args: map[string]any{"source": h("projects/notes.txt"), "destination": config}, want: record.Deny, paths: []string{config}},
		// A tree or a search of a parent lists what is inside: refused.
		{name: "directory_tree of the home", tool: "directory_tree", args: map[string]any{"path": home}, want: record.Deny, paths: []string{home}},
		{name: "search_files of the home for the key", tool: "search_files", args: map[string]any{"path": home, "pattern": "**/chain.key"}, want: record.Deny, paths: []string{home}},
		// A listing of a parent shows names, not contents: allowed.
		{name: "list_directory of the state directory's parent", tool: "list_directory", args: map[string]any{"path": h(".local/state")}, want: record.Allow, contains: "aegis"},
	}

	r := mustDriver(t, env, []string{"calls", writePlan(t, calls)}, aegisRun(config, "fs", server...))
	results := tsResults(t, r)
	if len(results) != len(calls) {
		t.Fatalf("%d results for %d calls", len(results), len(calls))
	}
	for i, c := range calls {
		checkFSResult(t, c, results[i])
		if c.want == record.Deny && !strings.Contains(results[i].text, "aegis's own") {
			t.Errorf("%s: the refusal is not aegis:self's: %s", c.name, results[i].text)
		}
	}

	t.Run("aegis's files are unchanged", func(t *testing.T) {
		for _, p := range []string{config, policyFile, h("projects/notes.txt")} {
			if b, err := os.ReadFile(p); err != nil || string(b) != files[p] {
				t.Errorf("%s changed (%v):\n%s", p, err, b)
			}
		}
		b, err := os.ReadFile(pins)
		if err != nil || !bytes.Contains(b, []byte(`"read_text_file"`)) {
			t.Errorf("the pins %s lost the tools aegis pinned (%v):\n%s", pins, err, b)
		}
		for _, p := range []string{"projects/stolen", "projects/conf"} {
			if _, err := os.Lstat(h(p)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("~/%s exists after a refused move (%v)", p, err)
			}
		}
		if b, err := os.ReadFile(h("projects/ok.txt")); err != nil || string(b) != allowedText {
			t.Errorf("the allowed write did not happen (%v): %q", err, b)
		}
	})

	t.Run("the chain records aegis:self", func(t *testing.T) {
		entries, _ := readChain(t, aegisHome, "fs")
		if len(entries) != len(calls) {
			t.Fatalf("the chain has %d entries, want %d:\n%s", len(entries), len(calls), describe(entries))
		}
		for i, e := range entries {
			c := calls[i]
			if e.Tool != c.tool || e.Decision != c.want {
				t.Errorf("entry %d is %s %s, want %s %s (%s)", e.Seq, e.Tool, e.Decision, c.tool, c.want, c.name)
			}
			if c.want == record.Deny && !slices.Equal(e.Rules, []string{selfRule}) {
				t.Errorf("entry %d (%s): rules %v, want [%s]", e.Seq, c.name, e.Rules, selfRule)
			}
			var paths []string
			for _, cp := range e.Caps {
				paths = append(paths, cp.Path)
			}
			for _, p := range c.paths {
				if !slices.Contains(paths, p) {
					t.Errorf("entry %d (%s): derived paths %q do not hold %q", e.Seq, c.name, paths, p)
				}
			}
		}
	})

	t.Run("the key never came out", func(t *testing.T) {
		pem, err := os.ReadFile(key)
		if err != nil {
			t.Fatal(err)
		}
		forms := [][]byte{base64.StdEncoding.AppendEncode(nil, pem)} // as read_media_file sends it
		for line := range strings.Lines(string(pem)) {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "-----") {
				forms = append(forms, []byte(line)) // the key's own base64
			}
		}
		if len(forms) < 2 {
			t.Fatalf("chain.key holds no key:\n%s", pem)
		}
		// The control: the server alone serves the key, so the refusals
		// above are aegis's.
		plain := mustDriver(t, env, []string{"calls", writePlan(t, calls[1:2])}, server)
		if res := tsResults(t, plain); len(res) != 1 || res[0].isError || !strings.Contains(res[0].text, string(forms[1])) {
			t.Errorf("without aegis the server did not return the key: %+v", res)
		}
		for _, f := range forms {
			if bytes.Contains(r.Raw, f) || strings.Contains(r.Stderr, string(f)) {
				t.Errorf("the client saw the key (%.12s…)", f)
			}
		}
	})
}
