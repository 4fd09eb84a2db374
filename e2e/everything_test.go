package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/record"
	"github.com/google/go-cmp/cmp"
)

// TestEverythingFidelity drives the same scripted sessions (driver.mjs)
// against server-everything directly and through `aegis run`, and requires
// the two transcripts to be identical after normalise: every step's result
// or error, what the client's sampling, elicitation and roots handlers were
// asked, and every message the client received and sent, in order.
func TestEverythingFidelity(t *testing.T) {
	needNode(t)
	server := []string{nodeBin, filepath.Join(e2eDir, everythingJS), "stdio"}
	config := filepath.Join(e2eDir, "testdata", "everything", "aegis.yaml")

	// compare runs the scenario both ways at once and returns the
	// transcripts, after failing the test if they differ.
	compare := func(t *testing.T, scenario string) (direct, through driverRun, aegisHome string) {
		home := tempDir(t)
		aegisHome = tempDir(t)
		env := baseEnv(home, aegisHome)
		err := parallel(
			func() (err error) {
				direct, err = runDriver(env, []string{scenario}, server)
				return err
			},
			func() (err error) {
				through, err = runDriver(env, []string{scenario}, aegisRun(config, "everything", server...))
				return err
			},
		)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("direct %v, through aegis %v", direct.Took.Round(time.Millisecond), through.Took.Round(time.Millisecond))
		want, err := normalise(direct.Raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := normalise(through.Raw)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the session through aegis differs from the direct one (-direct +through aegis):\n%s", diff)
		}
		return direct, through, aegisHome
	}

	t.Run("session", func(t *testing.T) {
		direct, through, aegisHome := compare(t, "everything")
		checkEverythingSession(t, direct.T)
		// Every request that acts was decided, allowed and recorded: each
		// the client sent but the protocol's housekeeping (tools/call,
		// resources/read, prompts/get, ..., the unknown method the
		// configuration lists), and each the server sent the client but
		// ping (sampling, elicitation, roots); and the client's answer to
		// each elicitation, which is input to the server like arguments.
		decided := 0
		for _, m := range through.T.Sent {
			if isRequest(m) && !gateway.Relayed(method(m)) {
				decided++
			}
		}
		for _, m := range through.T.Received {
			if isRequest(m) && method(m) != "ping" {
				decided++
			}
			if isRequest(m) && method(m) == "elicitation/create" {
				decided++ // its answer
			}
		}
		rep, decisions := verifyChain(t, aegisHome, "everything")
		if rep.Entries != uint64(decided) {
			t.Errorf("the chain has %d entries; the session made %d requests aegis decides", rep.Entries, decided)
		}
		if diff := cmp.Diff(map[string]int{record.Allow: decided}, decisions); diff != "" {
			t.Errorf("decisions in the chain (-want +got):\n%s", diff)
		}
	})

	// The same session over Streamable HTTP, through aegis serve, which
	// runs the server over stdio for it.
	t.Run("session through aegis serve", func(t *testing.T) {
		home, aegisHome := tempDir(t), tempDir(t)
		env := baseEnv(home, aegisHome)
		cfg, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		cmd, _ := json.Marshal(server)
		serveCfg := strings.Replace(string(cfg), "  everything:\n", "  everything:\n    command: "+string(cmd)+"\n", 1) + "serve:\n  auth: {none: e2e}\n"
		if !strings.Contains(serveCfg, "command:") {
			t.Fatalf("the everything configuration has no server entry to give a command:\n%s", cfg)
		}
		writeFiles(t, home, map[string]string{"serve.yaml": strings.ReplaceAll(serveCfg, "policy: ", "policy: "+filepath.Dir(config)+"/")})
		s := startServe(t, env, filepath.Join(home, "serve.yaml"), "everything")
		var direct, through driverRun
		err = parallel(
			func() (err error) { direct, err = runDriver(env, []string{"everything"}, server); return err },
			func() (err error) {
				through, err = runDriver(env, []string{"everything"}, []string{s.urls["everything"]})
				return err
			},
		)
		if err != nil {
			t.Fatalf("%v\naegis serve:\n%s", err, s.stderr)
		}
		checkEverythingSession(t, direct.T)
		checkEverythingSession(t, through.T)
		s.stop(t)
	})

	t.Run("cancel", func(t *testing.T) {
		direct, _, _ := compare(t, "cancel")
		var step struct {
			Result struct {
				Cancelled struct{ Message string }
			}
		}
		if len(direct.T.Steps) < 2 || json.Unmarshal(direct.T.Steps[1], &step) != nil || !strings.Contains(step.Result.Cancelled.Message, "the user pressed stop") {
			t.Errorf("the direct session did not cancel a call: %s", direct.Raw)
		}
	})
}

// checkEverythingSession checks that the direct session did what the
// comparison relies on: a comparison of two sessions in which nothing
// happened would pass.
func checkEverythingSession(t *testing.T, tr transcript) {
	t.Helper()
	type step struct {
		Step    string          `json:"step"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
		Missing bool            `json:"missing"`
	}
	steps := map[string][]step{}
	for _, raw := range tr.Steps {
		var s step
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		if s.Missing {
			t.Errorf("server-everything did not list the tool of step %q", s.Step)
		}
		steps[s.Step] = append(steps[s.Step], s)
	}
	// want says what the named steps must show: a result or error that
	// matches the expression.
	want := []struct {
		step  string
		error bool
		match string
	}{
		{"initialize", false, `"name":"mcp-servers/everything"`},
		{"roots synced", false, `Roots updated: 1 root\(s\)`},
		{"call echo", false, `Echo: hello through aegis`},
		{"call get-sum", false, `is -4\.5`},
		{"call get-structured-content", false, `"structuredContent":\{"temperature":36`},
		{"call gzip-file-as-resource", false, `"mimeType":"application/gzip"`},
		{"call trigger-long-running-operation with progress", false, `"progress":\[\{"progress":1,"total":5,"progressToken":\d+\},.*\{"progress":5,"total":5,"progressToken":\d+\}\]`},
		{"resources/read unknown", true, `Unknown resource`},
		{"prompts/get args-prompt", false, `weather in Zürich, ZH`},
		{"completion/complete with context", false, `"values":\["Alice","Bob","Charlie"\]`},
		{"call trigger-sampling-request", false, `pretend model`},
		{"call trigger-elicitation-request", false, `Name: Ada Lovelace`},
		{"call trigger-url-elicitation", false, `Elicitation ID: e2e-elicitation-1`},
		{"call trigger-url-elicitation", true, `"code":-32042`},
		{"roots/list_changed", false, `Roots updated: 2 root\(s\)`},
		{"call get-roots-list", false, `root-two`},
		{"an unknown method", true, `"code":-32601`},
	}
	for _, w := range want {
		re := regexp.MustCompile(w.match)
		found := false
		for _, s := range steps[w.step] {
			got := s.Result
			if w.error {
				got = s.Error
			}
			var compact bytes.Buffer
			json.Compact(&compact, got)
			if re.Match(compact.Bytes()) {
				found = true
			}
		}
		if !found {
			t.Errorf("no step %q with a %s matching %s; got %+v", w.step, map[bool]string{false: "result", true: "error"}[w.error], w.match, steps[w.step])
		}
	}
	// The server's own messages: these must have reached the client for the
	// comparison to cover them.
	counts := map[string]int{}
	for _, m := range tr.Received {
		counts[method(m)]++
	}
	for _, m := range []string{"notifications/progress", "notifications/message", "notifications/resources/updated",
		"notifications/resources/list_changed", "notifications/tools/list_changed", "sampling/createMessage", "elicitation/create", "roots/list"} {
		if counts[m] == 0 {
			t.Errorf("the client received no %s", m)
		}
	}
	if len(tr.Asked) < 4 {
		t.Errorf("the client's handlers were asked %d times; want at least 4 (roots twice, sampling, elicitation)", len(tr.Asked))
	}
}

// method returns the method of a JSON-RPC message, or "" for a response.
// isRequest reports whether a JSON-RPC message is a request: a method and
// an id.
func isRequest(raw json.RawMessage) bool {
	var m struct {
		Method string
		ID     json.RawMessage
	}
	return json.Unmarshal(raw, &m) == nil && m.Method != "" && m.ID != nil
}

func method(raw json.RawMessage) string {
	var m struct{ Method string }
	json.Unmarshal(raw, &m)
	return m.Method
}

// verifyChain verifies the chain of server in aegisHome with the public key
// beside it and counts its entries by decision.
func verifyChain(t *testing.T, aegisHome, server string) (chain.Report, map[string]int) {
	t.Helper()
	entries, rep := readChain(t, aegisHome, server)
	decisions := map[string]int{}
	for _, e := range entries {
		decisions[e.Decision]++
	}
	return rep, decisions
}

// readChain verifies the chain of server in aegisHome and returns its
// entries. A chain that does not verify, or ends with entries no
// checkpoint signs (aegis exited cleanly, so every entry must be signed),
// fails the test.
func readChain(t *testing.T, aegisHome, server string) ([]record.Entry, chain.Report) {
	t.Helper()
	dir := filepath.Join(aegisHome, "chain", server)
	pubPEM, err := os.ReadFile(filepath.Join(dir, chain.PublicKeyFile))
	if err != nil {
		t.Fatalf("reading the chain's public key: %v", err)
	}
	pub, err := chain.ParsePublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := chain.Verify(dir, pub)
	if err != nil {
		t.Fatalf("the chain in %s does not verify: %v", dir, err)
	}
	if rep.Truncated() {
		t.Errorf("the chain ends with %d unsigned entries and %d torn bytes after a clean exit", rep.Unsigned(), rep.TornBytes)
	}
	var entries []record.Entry
	err = chain.Scan(dir, func(e *record.Entry) error {
		c := *e
		c.Roles = slices.Clone(e.Roles)
		c.Caps = slices.Clone(e.Caps)
		c.Rules = slices.Clone(e.Rules)
		entries = append(entries, c)
		return nil
	})
	if err != nil {
		t.Fatalf("scanning the chain: %v", err)
	}
	if uint64(len(entries)) != rep.Entries {
		t.Errorf("Scan read %d entries, Verify %d", len(entries), rep.Entries)
	}
	return entries, rep
}

// describe is one line per entry, for failure messages.
func describe(entries []record.Entry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "  %d %s %s %v %v %s\n", e.Seq, e.Tool, e.Decision, e.Rules, e.Caps, e.Reason)
	}
	return b.String()
}
