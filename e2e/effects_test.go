package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// TestEffects: a tool has every capability its effect has (issue 15,
// "every effect"). With a grant that writes ~/drafts but does not read it,
// the real filesystem server's edit_file in a dry run returns the file's
// lines, and move_file carries a file out of ~/drafts into the readable
// projects: each is a read of the drafts, and is refused. Judged by effect:
// the draft's text never reaches the client, the draft stays where it was,
// and a plain write into the drafts still works.
func TestEffects(t *testing.T) {
	needNode(t)
	h := newFSHome(t)
	marker := "draft-secret-" + strings.TrimPrefix(h.secret, "e2e-fake-key-")
	draft := filepath.Join(h.home, "drafts", "plan.txt")
	if err := os.MkdirAll(filepath.Dir(draft), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(draft, []byte("line one\n"+marker+"\nline three\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	edit := map[string]any{"path": draft, "edits": []map[string]any{{"oldText": "line one", "newText": "line 1"}}, "dryRun": true}
	moved := filepath.Join(h.home, "projects", "plan.txt")
	calls := []fsCall{
		{name: "edit_file dry run of a write-only draft", tool: "edit_file", args: edit, want: record.Deny},
		{name: "move_file of a write-only draft into the projects", tool: "move_file", args: map[string]any{"source": draft, "destination": moved}, want: record.Deny},
		{name: "write_file of a new draft", tool: "write_file", args: map[string]any{"path": filepath.Join(h.home, "drafts", "new.txt"), "content": "a new draft\n"}, want: record.Allow, contains: "Successfully wrote"},
	}
	server := []string{nodeBin, filepath.Join(e2eDir, filesystemJS), h.home}

	t.Run("the server alone reads the draft in a dry run", func(t *testing.T) {
		// The control: a dry-run edit returns the draft's lines, so a
		// write-only grant that let it through would leak them.
		results, _ := goClientCalls(t, h.env, server, calls[:1])
		if r := results[0]; r.isError || !strings.Contains(r.text, marker) {
			t.Fatalf("without aegis the dry run did not return the draft's text: %+v", r)
		}
	})

	through := aegisRun(filepath.Join(e2eDir, "testdata", "effects", "aegis.yaml"), "fs", server...)
	results, seen := goClientCalls(t, h.env, through, calls)
	for i, c := range calls {
		checkFSResult(t, c, results[i])
	}
	for _, b := range seen {
		if strings.Contains(string(b), marker) {
			t.Fatalf("the draft's text reached the client: %s", b)
		}
	}
	if _, err := os.Stat(draft); err != nil {
		t.Errorf("the draft moved: %v", err)
	}
	if _, err := os.Stat(moved); err == nil {
		t.Errorf("the draft reached the projects")
	}
	if b, err := os.ReadFile(filepath.Join(h.home, "drafts", "new.txt")); err != nil || string(b) != "a new draft\n" {
		t.Errorf("the allowed write did not happen: %q, %v", b, err)
	}
}
