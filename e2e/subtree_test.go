package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// TestSubtree: an operation on a directory acts on everything under it
// (issue 15, "every subtree"). The real filesystem server's directory_tree
// and search_files of a parent of a denied folder return the names inside
// it, and its move_file of such a parent moves the folder with it; through
// aegis each is refused by the denied folder's rule. Judged by effect: no
// name inside a denied folder reaches the client, the denied folder's file
// is still where it was, and the tree, listing and move beside the denied
// folders still work.
func TestSubtree(t *testing.T) {
	needNode(t)
	h := newFSHome(t)
	const secretName = "payroll-e2e.csv"
	secretFile := filepath.Join(h.home, "work", "secret", secretName)
	if err := os.MkdirAll(filepath.Dir(secretFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, []byte("salaries\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.home, "work", "todo.txt"), []byte("todo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(h.home, "work-moved")
	calls := []fsCall{
		{name: "directory_tree of the home", tool: "directory_tree", args: map[string]any{"path": h.home}, want: record.Deny, rule: "no-secrets", paths: []string{h.home}},
		{name: "directory_tree of the home excluding .ssh", tool: "directory_tree", args: map[string]any{"path": h.home, "excludePatterns": []string{".ssh"}}, want: record.Deny, rule: "no-secrets"},
		{name: "search_files of the home for keys", tool: "search_files", args: map[string]any{"path": h.home, "pattern": "**/id_*"}, want: record.Deny, rule: "no-secrets"},
		{name: "directory_tree of ~/work", tool: "directory_tree", args: map[string]any{"path": "~/work"}, want: record.Deny, rule: "no-secrets"},
		{name: "move_file of ~/work, which holds the secret folder", tool: "move_file", args: map[string]any{"source": filepath.Join(h.home, "work"), "destination": moved}, want: record.Deny, rule: "no-secrets"},
		{name: "move_file of ~/work by a trailing slash", tool: "move_file", args: map[string]any{"source": h.home + "/work/", "destination": moved}, want: record.Deny, rule: "no-secrets"},
		// Beside the denied folders, all still works.
		{name: "directory_tree of the projects", tool: "directory_tree", args: map[string]any{"path": filepath.Join(h.home, "projects", "app")}, want: record.Allow, contains: "main.go"},
		{name: "list_directory of the home shows names", tool: "list_directory", args: map[string]any{"path": h.home}, want: record.Allow, contains: "work"},
		{name: "move_file of a file beside the secret folder", tool: "move_file", args: map[string]any{"source": filepath.Join(h.home, "work", "todo.txt"), "destination": filepath.Join(h.home, "work", "done.txt")}, want: record.Allow, contains: "Successfully moved"},
	}
	server := []string{nodeBin, filepath.Join(e2eDir, filesystemJS), h.home}

	t.Run("the server alone lists the secret folder's names", func(t *testing.T) {
		// The control: without aegis, a tree of the home shows the key's
		// name and the secret file's, so the refusals are aegis's.
		results, _ := goClientCalls(t, h.env, server, calls[:1])
		if r := results[0]; r.isError || !strings.Contains(r.text, "id_rsa") || !strings.Contains(r.text, secretName) {
			t.Fatalf("without aegis the tree did not list the denied folders: %+v", r)
		}
	})

	through := aegisRun(filepath.Join(e2eDir, "testdata", "subtree", "aegis.yaml"), "fs", server...)
	checkSubtreeCalls(t, h, through, calls, secretName, secretFile, moved)
	if _, err := os.Stat(filepath.Join(h.home, "work", "done.txt")); err != nil {
		t.Errorf("the allowed move did not happen: %v", err)
	}

	entries, _ := readChain(t, h.aegisHome, "fs")
	if len(entries) != len(calls) {
		t.Fatalf("the chain has %d entries, want %d", len(entries), len(calls))
	}
	for i, e := range entries {
		c := calls[i]
		if e.Decision != c.want {
			t.Errorf("entry %d (%s): %s, want %s", e.Seq, c.name, e.Decision, c.want)
		}
		if c.tool != "list_directory" && (len(e.Caps) == 0 || !e.Caps[0].Subtree) {
			t.Errorf("entry %d (%s): capabilities %+v are not recorded as subtrees", e.Seq, c.name, e.Caps)
		}
	}
}

// checkSubtreeCalls makes calls through aegis (through) with the Go client
// and checks each result, then that no name inside a denied folder (the
// key's, secretName, the key itself) reached the client, that secretFile
// is where it was, and that moved, where a refused move would have put
// it, does not exist.
func checkSubtreeCalls(t *testing.T, h *fsHome, through []string, calls []fsCall, secretName, secretFile, moved string) {
	t.Helper()
	results, seen := goClientCalls(t, h.env, through, calls)
	for i, c := range calls {
		checkFSResult(t, c, results[i])
	}
	for _, b := range seen {
		for _, name := range []string{"id_rsa", secretName, h.secret} {
			if strings.Contains(string(b), name) {
				t.Errorf("a name inside a denied folder reached the client (%s): %s", name, b)
			}
		}
	}
	if b, err := os.ReadFile(secretFile); err != nil || string(b) != "salaries\n" {
		t.Errorf("the secret folder's file is not where it was (%v): %q", err, b)
	}
	if _, err := os.Lstat(moved); err == nil {
		t.Errorf("%s exists after a refused move", moved)
	}
}
