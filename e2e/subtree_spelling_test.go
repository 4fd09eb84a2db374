package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// TestSubtreeSpellings: a tree, a search or a move of a parent of a denied
// folder is refused by every spelling of the parent (issue 15, "every
// spelling" and "every subtree" together). The folder café/secret is named
// in NFD on disk and in the policy; the model asks for a tree of the NFC
// café, which the real filesystem server finds by its NFD sibling and
// lists. The server's files are taken to be on a case-insensitive volume
// (case_insensitive: true), so a tree of the home spelled in upper case
// meets the deny of ~/.SSH, written in upper case too.
func TestSubtreeSpellings(t *testing.T) {
	needNode(t)
	h := newFSHome(t)
	const secretName = "payroll-spelling-e2e.csv"
	nfd := filepath.Join(h.home, "cafe\u0301")
	secretFile := filepath.Join(nfd, "secret", secretName)
	for p, content := range map[string]string{secretFile: "salaries\n", filepath.Join(nfd, "menu.txt"): "menu\n"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	nfc := filepath.Join(h.home, "caf\u00e9")
	upper := strings.ToUpper(h.home) // on Linux no such folder: aegis must refuse it first
	moved := filepath.Join(h.home, "cafe-moved")
	calls := []fsCall{
		{name: "directory_tree of NFC café", tool: "directory_tree", args: map[string]any{"path": nfc}, want: record.Deny, rule: "no-secrets", paths: []string{nfc}},
		{name: "search_files of NFC café", tool: "search_files", args: map[string]any{"path": nfc, "pattern": "**/*.csv"}, want: record.Deny, rule: "no-secrets"},
		{name: "move_file of NFC café", tool: "move_file", args: map[string]any{"source": nfc, "destination": moved}, want: record.Deny, rule: "no-secrets"},
		{name: "directory_tree of the home in upper case", tool: "directory_tree", args: map[string]any{"path": upper}, want: record.Deny, rule: "no-secrets"},
		{name: "search_files of the home in upper case", tool: "search_files", args: map[string]any{"path": upper, "pattern": "**/id_*"}, want: record.Deny, rule: "no-secrets"},
		{name: "directory_tree of the home", tool: "directory_tree", args: map[string]any{"path": "~"}, want: record.Deny, rule: "no-secrets"},
		// Beside the denied folders, all still works.
		{name: "directory_tree of the projects", tool: "directory_tree", args: map[string]any{"path": filepath.Join(h.home, "projects", "app")}, want: record.Allow, contains: "main.go"},
		{name: "list_directory of NFC café shows names", tool: "list_directory", args: map[string]any{"path": nfc}, want: record.Allow, contains: "menu.txt"},
	}
	server := []string{nodeBin, filepath.Join(e2eDir, filesystemJS), h.home}

	t.Run("the server alone lists the NFD folder for the NFC tree", func(t *testing.T) {
		// The control: without aegis, a tree of the NFC spelling shows
		// the secret file's name, so the refusals are aegis's.
		results, _ := goClientCalls(t, h.env, server, calls[:1])
		if r := results[0]; r.isError || !strings.Contains(r.text, secretName) {
			t.Fatalf("without aegis the tree did not list the denied folder: %+v", r)
		}
	})

	through := aegisRun(filepath.Join(e2eDir, "testdata", "subtree-spelling", "aegis.yaml"), "fs", server...)
	checkSubtreeCalls(t, h, through, calls, secretName, secretFile, moved)
	entries, _ := readChain(t, h.aegisHome, "fs")
	if len(entries) != len(calls) {
		t.Fatalf("the chain has %d entries, want %d", len(entries), len(calls))
	}
	for i, e := range entries {
		if c := calls[i]; e.Decision != c.want {
			t.Errorf("entry %d (%s): %s, want %s", e.Seq, c.name, e.Decision, c.want)
		}
	}
}
