package e2e

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// TestDLPBinary: a secret that DLP redacts from a file read as text must
// not come back whole when the same file is read as media, base64 in the
// result's data field (issue 15, "every result"). Judged by effect: neither
// the key nor its base64 reaches the client; the control shows the server
// alone returns both.
func TestDLPBinary(t *testing.T) {
	needNode(t)
	h := newFSHome(t)
	pem := filepath.Join(h.home, "projects", "deploy.pem")
	if err := os.WriteFile(pem, []byte(h.key), 0o600); err != nil {
		t.Fatal(err)
	}
	calls := []fsCall{
		{name: "read_text_file of a key in the projects", tool: "read_text_file", args: map[string]any{"path": pem}, want: record.Allow, contains: "[REDACTED:"},
		{name: "read_media_file of the same key", tool: "read_media_file", args: map[string]any{"path": pem}, want: record.Allow},
	}
	server := []string{nodeBin, filepath.Join(e2eDir, filesystemJS), h.home}
	b64 := base64.StdEncoding.EncodeToString([]byte(h.key))

	t.Run("the server alone returns the key both ways", func(t *testing.T) {
		_, seen := goClientCalls(t, h.env, server, calls)
		all := bytes.Join(seen, nil)
		if !bytes.Contains(all, []byte(h.secret)) || !bytes.Contains(all, []byte(b64)) {
			t.Fatal("without aegis the key did not come back as text and as base64")
		}
	})

	through := aegisRun(filepath.Join(e2eDir, "testdata", "dlp", "aegis.yaml"), "fs", server...)
	results, seen := goClientCalls(t, h.env, through, calls)
	for i, c := range calls {
		checkFSResult(t, c, results[i])
	}
	for _, b := range seen {
		if bytes.Contains(b, []byte(h.secret)) {
			t.Errorf("the key reached the client as text: %.300s", b)
		}
		if bytes.Contains(b, []byte(b64)) || bytes.Contains(b, []byte(b64[:40])) {
			t.Errorf("the key reached the client in base64: %.300s", b)
		}
	}
}
