package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// A methodCall is one step of a "calls" plan: a tool call, or a request
// of another method with its params.
type methodCall struct {
	Name      string         `json:"name"`
	Tool      string         `json:"tool,omitempty"`
	Arguments map[string]any `json:"arguments"`
	Method    string         `json:"method,omitempty"`
	Params    map[string]any `json:"params,omitempty"`
}

// writeMethodPlan writes a "calls" plan; sampling gives the client the
// sampling capability.
func writeMethodPlan(t *testing.T, calls []methodCall, sampling bool) string {
	t.Helper()
	plan := map[string]any{"calls": calls}
	if sampling {
		plan["capabilities"] = map[string]any{"sampling": map[string]any{}}
	}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeFiles writes files (path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// stepResults returns each plan step's result or error text, after the
// initialize and tools/list steps.
func stepResults(t *testing.T, r driverRun) []string {
	t.Helper()
	var out []string
	for i, raw := range r.T.Steps {
		if i < 2 {
			continue
		}
		var s struct {
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		if s.Error != nil {
			out = append(out, "ERROR "+s.Error.Message)
			continue
		}
		out = append(out, string(s.Result))
	}
	return out
}

// entriesOf returns the method and decision of each chain entry, and its
// rules, one line each.
func entriesOf(entries []record.Entry) []string {
	var out []string
	for _, e := range entries {
		m := e.Method
		if m == "" {
			m = "tools/call " + e.Tool
		}
		out = append(out, m+" "+e.Decision+" "+strings.Join(e.Rules, ","))
	}
	return out
}

// TestPromptThatRunsACommand: mcp-server-commands runs the command of
// its prompt run_command when the client gets the prompt. Through aegis,
// with its curated bindings (the prompt's command is an exec), a policy
// that allows prompts but no shell command must stop the command: the
// file it would create is not there. The same request under a policy
// that allows shell commands creates it, which shows the check is real.
func TestPromptThatRunsACommand(t *testing.T) {
	needNode(t)
	for _, tt := range []struct {
		name      string
		extraRule string
		wantRan   bool
	}{
		{"no shell rule", "", false},
		// A command runs in the server's sandbox (the default on Linux),
		// which holds it to the files the policy could allow: a shell rule
		// alone lets it run, and a write rule lets it write the home.
		{"shell allowed", "  - {id: shell, effect: allow, capability: exec, shell: true}\n  - {id: home, effect: allow, capability: fs.write, path_under: [\"~\"]}\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := tempDir(t)
			aegisHome := filepath.Join(home, ".local/state/aegis")
			writeFiles(t, home, map[string]string{
				"aegis.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  cmds:\n    builtin: commands\n",
				"policy.yaml": "version: 1\nrules:\n" +
					"  - {id: prompts, effect: allow, server: cmds, method: prompts/get}\n" +
					"  - {id: tools, effect: allow, server: cmds, tool: run_command}\n" + tt.extraRule,
			})
			byPrompt, byTool := filepath.Join(home, "ran-by-prompt"), filepath.Join(home, "ran-by-tool")
			plan := writeMethodPlan(t, []methodCall{
				{Name: "prompts/get run_command", Method: "prompts/get", Params: map[string]any{"name": "run_command", "arguments": map[string]any{"command": "touch " + byPrompt}}},
				{Name: "call run_command", Tool: "run_command", Arguments: map[string]any{"command": "touch " + byTool}},
			}, false)
			r := mustDriver(t, baseEnv(home, aegisHome), []string{"calls", plan},
				aegisRun(filepath.Join(home, "aegis.yaml"), "cmds", nodeBin, filepath.Join(e2eDir, commandsJS)))
			results := stepResults(t, r)
			if len(results) != 2 {
				t.Fatalf("results %q", results)
			}
			for _, f := range []string{byPrompt, byTool} {
				_, err := os.Stat(f)
				if ran := err == nil; ran != tt.wantRan {
					t.Errorf("%s exists: %v, want %v; results %q", filepath.Base(f), ran, tt.wantRan, results)
				}
			}
			entries, _ := readChain(t, aegisHome, "cmds")
			got := entriesOf(entries)
			want := []string{"prompts/get deny prompts", "tools/call run_command deny tools"}
			if tt.wantRan {
				want = []string{"prompts/get allow prompts,shell", "tools/call run_command allow tools,shell"}
			} else if !strings.Contains(results[0], "aegis denied this request") || !strings.Contains(results[0], "exec") {
				t.Errorf("prompts/get answered %s, want aegis's refusal naming the exec", results[0])
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("chain\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestResourceReadOfAFile: the bundled demo server (a stand-in: no npm
// server serves file: resources) reads any file under its root as a
// file: resource. Through aegis a resources/read of ~/.ssh/id_rsa is
// refused by the rule that refuses read_file there, and no byte of the
// key reaches the client; an allowed file's resource arrives whole.
func TestResourceReadOfAFile(t *testing.T) {
	needNode(t)
	home := tempDir(t)
	aegisHome := filepath.Join(home, ".local/state/aegis")
	const secret = "e2e-FAKE-PRIVATE-KEY-material"
	writeFiles(t, home, map[string]string{
		"aegis.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  demo:\n    dlp: {off: true}\n",
		"policy.yaml": "version: 1\nrules:\n" +
			"  - {id: resources, effect: allow, server: demo, method: resources/read}\n" +
			"  - {id: projects, effect: allow, capability: fs.read, path_under: " + filepath.Join(home, "projects") + "}\n" +
			"  - {id: no-ssh, effect: deny, capability: fs.read, path_under: " + filepath.Join(home, ".ssh") + "}\n",
		".ssh/id_rsa":       secret + "\n",
		"projects/notes.md": allowedText + "\n",
	})
	plan := writeMethodPlan(t, []methodCall{
		{Name: "read the key", Method: "resources/read", Params: map[string]any{"uri": "file://" + filepath.Join(home, ".ssh/id_rsa")}},
		{Name: "read the key by ..", Method: "resources/read", Params: map[string]any{"uri": "file://" + filepath.Join(home, "projects") + "/../.ssh/id_rsa"}},
		{Name: "read the notes", Method: "resources/read", Params: map[string]any{"uri": "file://" + filepath.Join(home, "projects/notes.md")}},
	}, false)
	r := mustDriver(t, baseEnv(home, aegisHome), []string{"calls", plan},
		aegisRun(filepath.Join(home, "aegis.yaml"), "demo", aegisBin, "demo-server", "--root", home))
	if strings.Contains(string(r.Raw), secret) {
		t.Fatalf("the key reached the client:\n%s", r.Raw)
	}
	results := stepResults(t, r)
	if len(results) != 3 || !strings.Contains(results[0], "no-ssh") || !strings.Contains(results[1], "no-ssh") || !strings.Contains(results[2], allowedText) {
		t.Errorf("results %q", results)
	}
	entries, _ := readChain(t, aegisHome, "demo")
	want := "resources/read deny resources,no-ssh\nresources/read deny resources,no-ssh\nresources/read allow resources,projects"
	if got := strings.Join(entriesOf(entries), "\n"); got != want {
		t.Errorf("chain\n%s\nwant\n%s", got, want)
	}
}

// TestServerSamplingRequest: server-everything's trigger-sampling-request
// makes the server ask the client's model. A policy that denies sampling
// keeps the request from the client (it never receives it; the server is
// answered with aegis's error); one that allows it lets it through.
func TestServerSamplingRequest(t *testing.T) {
	needNode(t)
	for _, tt := range []struct {
		effect   string
		received bool
	}{{"deny", false}, {"allow", true}} {
		t.Run(tt.effect, func(t *testing.T) {
			home := tempDir(t)
			aegisHome := filepath.Join(home, ".local/state/aegis")
			writeFiles(t, home, map[string]string{
				"aegis.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  everything: {schema: off}\n",
				"policy.yaml": "version: 1\nrules:\n" +
					"  - {id: tools, effect: allow, server: everything, unbound: true, tool: \"*\"}\n" +
					"  - {id: sampling, effect: " + tt.effect + ", server: everything, method: sampling/createMessage}\n",
			})
			plan := writeMethodPlan(t, []methodCall{
				{Name: "call trigger-sampling-request", Tool: "trigger-sampling-request", Arguments: map[string]any{"prompt": "Say hi.", "maxTokens": 16}},
			}, true)
			r := mustDriver(t, baseEnv(home, aegisHome), []string{"calls", plan},
				aegisRun(filepath.Join(home, "aegis.yaml"), "everything", nodeBin, filepath.Join(e2eDir, everythingJS)))
			got := false
			for _, m := range r.T.Received {
				if method(m) == "sampling/createMessage" {
					got = true
				}
			}
			if got != tt.received {
				t.Errorf("the client received sampling/createMessage: %v, want %v", got, tt.received)
			}
			results := stepResults(t, r)
			if tt.received != strings.Contains(strings.Join(results, ""), "Hello from the e2e client") {
				t.Errorf("results %q", results)
			}
			entries, _ := readChain(t, aegisHome, "everything")
			want := "tools/call trigger-sampling-request allow tools\nsampling/createMessage " + tt.effect + " sampling"
			if g := strings.Join(entriesOf(entries), "\n"); g != want {
				t.Errorf("chain\n%s\nwant\n%s", g, want)
			}
		})
	}
}
