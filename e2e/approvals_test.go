package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestApprovalsThroughTheCLI runs the real filesystem server through aegis
// run with a policy that asks before writes to ~/projects/shared, and the
// official TypeScript client: each write is held until a person answers
// with `aegis approvals` from another process. The approved write lands,
// the denied one does not, and the chain records both answers, naming who
// answered and how.
func TestApprovalsThroughTheCLI(t *testing.T) {
	needNode(t)
	h := askingHome(t, "approvals: {timeout: 2m}\n")
	approved, denied := filepath.Join(h.home, "projects/shared/approved.txt"), filepath.Join(h.home, "projects/shared/denied.txt")
	calls := []fsCall{
		{name: "write_file that a person approves", tool: "write_file", args: map[string]any{"path": approved, "content": "approved"}},
		{name: "write_file that a person denies", tool: "write_file", args: map[string]any{"path": denied, "content": "denied"}},
	}
	// The person: another process, answering each question as it comes.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answered := make(chan string, 4)
	go func() {
		seen := map[string]bool{}
		for ctx.Err() == nil {
			out, code := aegisCLI(t, h.env, "approvals", "list", "--json")
			if code != 0 {
				t.Errorf("aegis approvals list: exit %d: %s", code, out)
				return
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var ap struct {
					ID        string
					Tool      string
					Caps      []string
					Arguments map[string]any
				}
				if line == "" || json.Unmarshal([]byte(line), &ap) != nil || seen[ap.ID] {
					continue
				}
				seen[ap.ID] = true
				verb := "deny"
				if ap.Arguments["path"] == approved {
					verb = "approve"
				}
				out, code := aegisCLI(t, h.env, "approvals", verb, ap.ID[:6])
				if code != 0 {
					t.Errorf("aegis approvals %s: exit %d: %s", verb, code, out)
				}
				answered <- verb + " " + strings.Join(ap.Caps, ",")
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	r := mustDriver(t, h.env, []string{"calls", writePlan(t, calls)}, aegisRun(filepath.Join(h.home, "asking.yaml"), "fs", nodeBin, filepath.Join(e2eDir, filesystemJS), h.home))
	cancel()
	results := tsResults(t, r)
	if len(results) != 2 {
		t.Fatalf("%d results, want 2:\n%s", len(results), r.Stderr)
	}
	if results[0].isError || results[0].err != "" || !strings.Contains(results[0].text, "Successfully wrote") {
		t.Errorf("the approved write: %+v", results[0])
	}
	if !results[1].isError || !strings.Contains(results[1].text, "declined this call") {
		t.Errorf("the denied write: %+v", results[1])
	}
	if b, err := os.ReadFile(approved); err != nil || string(b) != "approved" {
		t.Errorf("the approved file: %q %v", b, err)
	}
	if _, err := os.Stat(denied); !os.IsNotExist(err) {
		t.Errorf("the denied file exists (%v)", err)
	}
	if n := len(answered); n != 2 {
		t.Errorf("%d questions answered, want 2", n)
	}
	for _, want := range []string{"call fs/write_file needs a person's approval (rule \"ask-shared\"", "shared files need a person", "aegis approvals approve"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("aegis's stderr does not say %q:\n%s", want, r.Stderr)
		}
	}
	// The chain: each ask, then its answer, by whom and through what.
	log, code := aegisCLI(t, h.env, "log", "--server", "fs")
	if code != 0 {
		t.Fatalf("aegis log: exit %d: %s", code, log)
	}
	for _, want := range []string{"ask   fs/write_file", "allow fs/write_file", "approved by", "through cli, for this call", "deny  fs/write_file", "denied by"} {
		if !strings.Contains(log, want) {
			t.Errorf("aegis log does not show %q:\n%s", want, log)
		}
	}
	// recheck: the asks are decided again; the answers are a person's.
	if out, code := aegisCLI(t, h.env, "recheck", "--config", filepath.Join(h.home, "asking.yaml"), "--policy", filepath.Join(h.home, "asking-policy.yaml"), "--server", "fs"); code != 0 || !strings.Contains(out, "0 flip") || !strings.Contains(out, "2 a person's answers to asks, kept") {
		t.Errorf("aegis recheck (exit %d):\n%s", code, out)
	}
	if out, code := aegisCLI(t, h.env, "approvals", "list"); code != 0 || !strings.Contains(out, "no call is waiting") {
		t.Errorf("approvals left waiting: %s", out)
	}
	if out, code := aegisCLI(t, h.env, "approvals", "list", "--all"); code != 0 || strings.Count(out, "write_file") != 2 || !strings.Contains(out, "[used]") || !strings.Contains(out, "[denied]") {
		t.Errorf("approvals list --all:\n%s", out)
	}
}

// TestApprovalsInTheClient: a client that declares elicitation is asked
// itself, by aegis's own elicitation/create: the person accepts one write
// and declines the other, in the official TypeScript client, and each
// answer decides its held call. The question shows the tool, the
// arguments and what aegis derived.
func TestApprovalsInTheClient(t *testing.T) {
	needNode(t)
	h := askingHome(t, "")
	approved, denied := filepath.Join(h.home, "projects/shared/approved.txt"), filepath.Join(h.home, "projects/shared/denied.txt")
	plan := map[string]any{
		"capabilities": map[string]any{"elicitation": map[string]any{}},
		"elicit": []map[string]any{
			{"match": "fs.write " + approved, "answer": map[string]any{"action": "accept", "content": map[string]any{"scope": "call"}}},
			{"match": "fs.write " + denied, "answer": map[string]any{"action": "decline"}},
		},
		"calls": []methodCall{
			{Name: "approved write", Tool: "write_file", Arguments: map[string]any{"path": approved, "content": "approved"}},
			{Name: "declined write", Tool: "write_file", Arguments: map[string]any{"path": denied, "content": "denied"}},
		},
	}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := mustDriver(t, h.env, []string{"calls", planFile}, aegisRun(filepath.Join(h.home, "asking.yaml"), "fs", nodeBin, filepath.Join(e2eDir, filesystemJS), h.home))
	results := tsResults(t, r)
	if len(results) != 2 {
		t.Fatalf("%d results, want 2:\n%s", len(results), r.Stderr)
	}
	if results[0].isError || !strings.Contains(results[0].text, "Successfully wrote") {
		t.Errorf("the accepted write: %+v", results[0])
	}
	if !results[1].isError || !strings.Contains(results[1].text, "declined this call") {
		t.Errorf("the declined write: %+v", results[1])
	}
	if b, err := os.ReadFile(approved); err != nil || string(b) != "approved" {
		t.Errorf("the approved file: %q %v", b, err)
	}
	if _, err := os.Stat(denied); !os.IsNotExist(err) {
		t.Errorf("the declined file exists (%v)", err)
	}
	// The questions the client received: aegis's own, never the server's.
	raw := string(r.Raw)
	for _, want := range []string{`elicitation/create`, `aegis-approval-`, `approve this call fs/write_file?`, `shared files need a person`} {
		if !strings.Contains(raw, want) {
			t.Errorf("the client did not receive %s", want)
		}
	}
	log, code := aegisCLI(t, h.env, "log", "--server", "fs")
	if code != 0 {
		t.Fatalf("aegis log: exit %d: %s", code, log)
	}
	for _, want := range []string{"through elicitation, for this call", "denied by"} {
		if !strings.Contains(log, want) {
			t.Errorf("aegis log does not show %q:\n%s", want, log)
		}
	}
}

// askingHome is a filesystem test home whose configuration (asking.yaml,
// with extra appended to the server's settings' line) has the e2e policy
// and one more rule: a write under ~/projects/shared asks a person.
func askingHome(t *testing.T, top string) *fsHome {
	t.Helper()
	h := newFSHome(t)
	policy, err := os.ReadFile(filepath.Join(e2eDir, "testdata", "filesystem", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, h.home, map[string]string{
		"asking.yaml": "version: 1\npolicy: asking-policy.yaml\n" + top + "servers:\n  fs: {builtin: filesystem}\n",
		"asking-policy.yaml": string(policy) +
			"  - {id: ask-shared, effect: ask, capability: fs.write, path_under: [\"~/projects/shared\"], reason: shared files need a person}\n",
		"projects/shared/.keep": "",
	})
	return h
}

// TestApprovalsInTheGoClient: the official Go SDK client, with an
// elicitation handler, answers aegis's questions through aegis run in
// front of the real filesystem server: the write it accepts lands, the
// one it declines does not, and aegis log says who answered, how.
func TestApprovalsInTheGoClient(t *testing.T) {
	needNode(t)
	h := askingHome(t, "")
	approved, denied := filepath.Join(h.home, "projects/shared/approved.txt"), filepath.Join(h.home, "projects/shared/denied.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := aegisRun(filepath.Join(h.home, "asking.yaml"), "fs", nodeBin, filepath.Join(e2eDir, filesystemJS), h.home)
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Env = h.env
	var stderr bytes.Buffer
	c.Stderr = &stderr
	var asked []string
	client := mcp.NewClient(&mcp.Implementation{Name: "aegis-e2e-go", Version: "1.0.0"}, &mcp.ClientOptions{
		// Elicitation, and no roots: the filesystem server would make the
		// client's roots its allowed directories.
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			switch {
			case strings.Contains(req.Params.Message, "fs.write "+approved):
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"scope": "call"}}, nil
			case strings.Contains(req.Params.Message, "fs.write "+denied):
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "cancel"}, nil
		},
	})
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: c, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting through aegis: %v\nstderr:\n%s", err, stderr.String())
	}
	if _, err := session.ListTools(ctx, nil); err != nil { // as a client does: aegis pins what it lists
		t.Fatalf("tools/list: %v", err)
	}
	write := func(path string) (string, bool) {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": path, "content": "x"}})
		if err != nil {
			return err.Error(), true
		}
		return resultText(res), res.IsError
	}
	if text, isErr := write(approved); isErr || !strings.Contains(text, "Successfully wrote") {
		t.Errorf("the accepted write: %q (error %v)", text, isErr)
	}
	if text, isErr := write(denied); !isErr || !strings.Contains(text, "declined this call") {
		t.Errorf("the declined write: %q (error %v)", text, isErr)
	}
	session.Close()
	if len(asked) != 2 || !strings.Contains(asked[0], "approve this call fs/write_file?") || !strings.Contains(asked[0], "shared files need a person") {
		t.Errorf("the client was asked %q", asked)
	}
	if b, err := os.ReadFile(approved); err != nil || string(b) != "x" {
		t.Errorf("the approved file: %q %v", b, err)
	}
	if _, err := os.Stat(denied); !os.IsNotExist(err) {
		t.Errorf("the declined file exists (%v)", err)
	}
	log, code := aegisCLI(t, h.env, "log", "--server", "fs")
	if code != 0 {
		t.Fatalf("aegis log: exit %d: %s", code, log)
	}
	for _, want := range []string{"through elicitation, for this call", "denied by"} {
		if !strings.Contains(log, want) {
			t.Errorf("aegis log does not show %q:\n%s", want, log)
		}
	}
}
