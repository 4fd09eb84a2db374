package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// TestSpellings puts aegis in front of the official filesystem server, which
// swaps a missing path component for a sibling with the same Unicode NFC
// form (DESIGN.md R34). A directory named in NFD on disk, as a macOS volume
// or an rsync from one leaves it, is denied by a rule written in NFD, the
// bytes `ls` shows; the model asks for the NFC spelling, which does not
// exist, and the server reads the NFD directory. A directory named in NFC
// is denied by a rule in NFC and asked for in NFD. No byte of either
// secret may reach the client.
func TestSpellings(t *testing.T) {
	needNode(t)
	home := tempDir(t)
	h := func(p string) string { return filepath.Join(home, p) }
	aegisHome := filepath.Join(tempDir(t), "state")
	const nfdSecret, nfcSecret = "e2e-spelling-secret-nfd-7Q2", "e2e-spelling-secret-nfc-9K4"
	nfdDir, nfcDir := h("cafe\u0301"), h("cr\u00e8me") // on disk
	config, policyFile := filepath.Join(aegisHome, "..", "aegis.yaml"), filepath.Join(aegisHome, "..", "policy.yaml")
	files := map[string]string{
		config: "version: 1\npolicy: policy.yaml\nservers:\n  fs:\n    builtin: filesystem\n    dlp: {off: true}\n",
		policyFile: "version: 1\nrules:\n" +
			"  - {id: fs-tools, effect: allow, server: fs, tool: \"*\"}\n" +
			"  - {id: everything, effect: allow, capability: [fs.read, fs.write], path_under: /}\n" +
			"  - {id: no-cafe, effect: deny, path_under: [\"" + nfdDir + "\"]}\n" + // NFD, as on disk
			"  - {id: no-creme, effect: deny, path_under: [\"" + nfcDir + "\"]}\n",
		filepath.Join(nfdDir, "secret.txt"): nfdSecret + "\n",
		filepath.Join(nfcDir, "secret.txt"): nfcSecret + "\n",
		h("projects/notes.txt"):             "notes: " + allowedText + "\n",
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	nfcOfNFD, nfdOfNFC := h("caf\u00e9/secret.txt"), h("cre\u0300me/secret.txt")
	calls := []fsCall{
		{name: "read an allowed file", tool: "read_text_file", args: map[string]any{"path": h("projects/notes.txt")}, want: record.Allow, contains: allowedText},
		{name: "NFC spelling of an NFD directory, NFD rule", tool: "read_text_file", args: map[string]any{"path": nfcOfNFD}, want: record.Deny, rule: "no-cafe"},
		{name: "NFC spelling among others", tool: "read_multiple_files", args: map[string]any{"paths": []string{h("projects/notes.txt"), nfcOfNFD}}, want: record.Deny, rule: "no-cafe"},
		{name: "NFC spelling, media", tool: "read_media_file", args: map[string]any{"path": nfcOfNFD}, want: record.Deny, rule: "no-cafe"},
		{name: "NFC spelling of the directory, listed", tool: "list_directory", args: map[string]any{"path": h("caf\u00e9")}, want: record.Deny, rule: "no-cafe"},
		{name: "NFC spelling, written", tool: "write_file", args: map[string]any{"path": h("caf\u00e9/planted.txt"), "content": "x"}, want: record.Deny, rule: "no-cafe"},
		{name: "NFD spelling of an NFC directory, NFC rule", tool: "read_text_file", args: map[string]any{"path": nfdOfNFC}, want: record.Deny},
	}
	r := mustDriver(t, baseEnv(home, aegisHome), []string{"calls", writePlan(t, calls)}, aegisRun(config, "fs", nodeBin, filepath.Join(e2eDir, filesystemJS), home))
	results := tsResults(t, r)
	if len(results) != len(calls) {
		t.Fatalf("%d results for %d calls", len(results), len(calls))
	}
	for i, c := range calls {
		checkFSResult(t, c, results[i])
		for _, secret := range []string{nfdSecret, nfcSecret} {
			if strings.Contains(results[i].text, secret) || strings.Contains(results[i].err, secret) {
				t.Errorf("%s: the secret reached the client: %s", c.name, results[i].text)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(nfdDir, "planted.txt")); err == nil {
		t.Error("the refused write planted a file in the NFD directory")
	}
}
