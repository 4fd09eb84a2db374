package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// conformanceJS is the MCP conformance suite's command line, relative to
// e2eDir. It needs Node 22 (it imports fs.globSync).
const conformanceJS = "node_modules/@modelcontextprotocol/conformance/dist/index.js"

// conformanceConfig is aegis's configuration for the conformance test:
// server-everything, started by `aegis serve` for each session over
// stdio, and served to anyone on loopback as the principal
// "conformance". %s is the server's command, as a JSON array.
const conformanceConfig = `version: 1
policy: policy.yaml
servers:
  everything:
    command: %s
serve:
  auth: {none: conformance}
`

// conformancePolicy allows everything the suite does. server-everything
// has no curated bindings, so its tools and prompts are unbound, reached
// only by a rule that says unbound: true; the other methods the suite
// sends, and the server's own requests (sampling, elicitation, roots),
// are decided by method.
const conformancePolicy = `version: 1
rules:
  - {id: everything-unbound, effect: allow, server: everything, unbound: true}
  - id: everything-methods
    effect: allow
    server: everything
    method: [resources/read, resources/subscribe, completion/complete, prompts/get, sampling/createMessage, elicitation/create, roots/list]
`

// scenarioResult is one conformance scenario's outcome: it passes when
// none of its checks failed.
type scenarioResult struct {
	checks   int
	failures []string // each failed check: its id and the suite's message
}

func (r scenarioResult) passed() bool { return r.checks > 0 && len(r.failures) == 0 }

// TestConformanceThroughServe runs the server scenarios of the MCP
// conformance suite (@modelcontextprotocol/conformance, every suite:
// active and pending) against the reference server,
// @modelcontextprotocol/server-everything, twice: bare, over its SDK's
// Streamable HTTP transport (everything-http.mjs), and behind
// `aegis serve`, which runs the same server over stdio for each session,
// with a policy that allows everything. Every scenario that passes bare
// must pass through aegis.
//
// The suite's scenarios call the tools, prompts and resources of the
// suite's own test server, which npm does not ship; server-everything
// has others, so the scenarios that need those fail on both sides
// (their names are logged) and test nothing here.
func TestConformanceThroughServe(t *testing.T) {
	node := needConformance(t)
	home, aegisHome := tempDir(t), tempDir(t)
	env := baseEnv(home, aegisHome)
	everything := filepath.Join(e2eDir, everythingJS)

	cmd, _ := json.Marshal([]string{node, everything, "stdio"})
	writeFiles(t, home, map[string]string{
		"serve.yaml":  fmt.Sprintf(conformanceConfig, cmd),
		"policy.yaml": conformancePolicy,
	})
	s := startServe(t, env, filepath.Join(home, "serve.yaml"), "everything")
	bareURL := startEverythingHTTP(t, node, env)

	var bare, through map[string]scenarioResult
	var bareTook, throughTook time.Duration
	err := parallel(
		func() (err error) {
			start := time.Now()
			bare, err = runConformance(node, env, bareURL)
			bareTook = time.Since(start)
			return err
		},
		func() (err error) {
			// Slower: each scenario's session starts a server process.
			start := time.Now()
			through, err = runConformance(node, env, s.urls["everything"])
			throughTook = time.Since(start)
			return err
		},
	)
	if err != nil {
		t.Fatalf("%v\naegis's stderr:\n%s", err, s.stderr)
	}
	t.Logf("bare:          %s (%v)", tally(bare), bareTook.Round(time.Millisecond))
	t.Logf("through aegis: %s (%v)", tally(through), throughTook.Round(time.Millisecond))

	var failedBoth []string // with the reasons they fail bare
	for _, name := range slices.Sorted(maps.Keys(bare)) {
		b, a := bare[name], through[name]
		switch {
		case !b.passed() && !a.passed():
			failedBoth = append(failedBoth, fmt.Sprintf("\n\t%s: %s", name, strings.Join(b.failures, "; ")))
		case !b.passed():
			t.Logf("%s: fails bare, passes through aegis: %s", name, strings.Join(b.failures, "; "))
		case a.checks == 0:
			t.Errorf("%s: passes bare, but did not run through aegis", name)
		case !a.passed():
			t.Errorf("%s: passes bare, fails through aegis: %s", name, strings.Join(a.failures, "; "))
		}
	}
	for name := range through {
		if _, ok := bare[name]; !ok {
			t.Errorf("%s: ran through aegis, but not bare", name)
		}
	}
	t.Logf("%d scenarios fail on both sides, bare because:%s", len(failedBoth), strings.Join(failedBoth, ""))
	if t.Failed() {
		t.Logf("aegis's stderr:\n%s", s.stderr)
	}
	s.stop(t)
}

// needConformance is needNode for the conformance test, and returns the
// Node 22 to run the suite and the servers with.
func needConformance(t *testing.T) string {
	t.Helper()
	needNode(t)
	n, err := nodeV2()
	if err == nil {
		return n
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and there is no Node 22 for the conformance suite: %v", err)
	}
	t.Skipf("skipping the conformance test: %v (the suite needs Node 22; e2e/install.sh installs it)", err)
	return ""
}

// startEverythingHTTP starts everything-http.mjs and returns the URL it
// serves at.
func startEverythingHTTP(t *testing.T, node string, env []string) string {
	t.Helper()
	c := exec.Command(node, filepath.Join(e2eDir, "everything-http.mjs"))
	c.Env, c.Dir = env, e2eDir
	stderr := &syncBuf{}
	c.Stderr = stderr
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
	})
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			url <- sc.Text()
		}
		close(url)
		for sc.Scan() {
		}
	}()
	select {
	case u, ok := <-url:
		if !ok || !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Fatalf("everything-http.mjs printed no URL (%q): %s", u, stderr)
		}
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("everything-http.mjs did not start: %s", stderr)
	}
	return ""
}

// resultDir is the name the suite gives a server scenario's results:
// server-NAME-TIMESTAMP.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$`)

// runConformance runs every server scenario of the suite against url and
// returns each one's result, read from the checks.json it writes. The
// suite's exit status says only whether some scenario failed, which is
// expected here, so it is not an error.
func runConformance(node string, env []string, url string) (map[string]scenarioResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "aegis-conformance-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	c := exec.CommandContext(ctx, node, filepath.Join(e2eDir, conformanceJS), "server", "--suite", "all", "--url", url, "--output-dir", dir)
	c.Env, c.Dir = env, dir
	c.WaitDelay = 5 * time.Second
	out, runErr := c.CombinedOutput()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("the conformance suite against %s: %v\n%s", url, ctx.Err(), out)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	results := map[string]scenarioResult{}
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, err
		}
		var checks []struct {
			ID           string
			Status       string
			ErrorMessage string
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			return nil, fmt.Errorf("scenario %s: %v", m[1], err)
		}
		var r scenarioResult
		for _, ch := range checks {
			switch ch.Status {
			case "SUCCESS", "WARNING":
				r.checks++
			case "FAILURE":
				r.checks++
				r.failures = append(r.failures, ch.ID+": "+ch.ErrorMessage)
			}
		}
		results[m[1]] = r
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("the conformance suite against %s ran no scenario (%v):\n%s", url, runErr, out)
	}
	return results, nil
}

// tally says how many scenarios passed.
func tally(rs map[string]scenarioResult) string {
	n := 0
	for _, r := range rs {
		if r.passed() {
			n++
		}
	}
	return fmt.Sprintf("%d of %d scenarios pass", n, len(rs))
}
