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

// conformanceServer is the server the suite runs against, relative to
// e2eDir. The suite's own test server is an example in its repository,
// not on npm; this one has the fixtures the suite's scenarios call,
// written from their requirements.
const conformanceServer = "testdata/conformance/server.mjs"

// conformanceConfig is aegis's configuration for the test: the server,
// started by `aegis serve` for each session over stdio (%s: its command,
// a JSON array), served to anyone on loopback as the principal
// "conformance".
const conformanceConfig = `version: 1
policy: policy.yaml
servers:
  conformance:
    command: %s
  remote:
    url: %s
serve:
  auth: {none: conformance}
`

// conformancePolicy allows everything the suite does. The server has no
// curated bindings, so its tools and prompts are unbound, reached only
// by a rule that says unbound: true; the other methods the suite sends,
// and the server's own requests (sampling, elicitation), are decided by
// method.
const conformancePolicy = `version: 1
rules:
  - {id: conformance-unbound, effect: allow, server: conformance, unbound: true}
  - id: conformance-methods
    effect: allow
    server: conformance
    method: [resources/read, resources/subscribe, completion/complete, prompts/get, sampling/createMessage, elicitation/create]
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
// active and pending) twice against the same server
// (testdata/conformance/server.mjs): bare, over the TypeScript SDK's
// Streamable HTTP transport, and behind `aegis serve`, which runs it over
// stdio for each session, with a policy that allows everything. Every
// scenario that passes bare must pass through aegis.
func TestConformanceThroughServe(t *testing.T) {
	node := needNodeV2(t)
	home, aegisHome := tempDir(t), tempDir(t)
	env := baseEnv(home, aegisHome)
	server := filepath.Join(e2eDir, conformanceServer)

	cmd, _ := json.Marshal([]string{node, server})
	bareURL := startBare(t, node, env, server)
	// The same server twice behind aegis: a stdio instance per session,
	// and the bare HTTP one as a remote upstream.
	writeFiles(t, home, map[string]string{
		"serve.yaml":  fmt.Sprintf(conformanceConfig, cmd, bareURL),
		"policy.yaml": strings.ReplaceAll(conformancePolicy, "server: conformance", "server: [conformance, remote]"),
	})
	s := startServe(t, env, filepath.Join(home, "serve.yaml"), "conformance", "remote")

	var bare, through, remote map[string]scenarioResult
	var bareTook, throughTook, remoteTook time.Duration
	err := parallel(
		func() (err error) {
			start := time.Now()
			remote, err = runConformance(node, env, s.urls["remote"])
			remoteTook = time.Since(start)
			return err
		},
		func() (err error) {
			start := time.Now()
			bare, err = runConformance(node, env, bareURL)
			bareTook = time.Since(start)
			return err
		},
		func() (err error) {
			// Slower: each scenario's session starts a server process.
			start := time.Now()
			through, err = runConformance(node, env, s.urls["conformance"])
			throughTook = time.Since(start)
			return err
		},
	)
	if err != nil {
		t.Fatalf("%v\naegis's stderr:\n%s", err, s.stderr)
	}
	t.Logf("bare:          %s (%v)", tally(bare), bareTook.Round(time.Millisecond))
	t.Logf("through aegis: %s (%v)", tally(through), throughTook.Round(time.Millisecond))
	t.Logf("remote:        %s (%v)", tally(remote), remoteTook.Round(time.Millisecond))

	for _, name := range slices.Sorted(maps.Keys(bare)) {
		b := bare[name]
		if !b.passed() {
			t.Logf("%s: fails bare (so it tests nothing here): %s", name, strings.Join(b.failures, "; "))
			continue
		}
		for _, via := range []struct {
			how string
			got map[string]scenarioResult
		}{{"through aegis", through}, {"through aegis to the remote server", remote}} {
			switch a := via.got[name]; {
			case a.checks == 0:
				t.Errorf("%s: passes bare, but did not run %s", name, via.how)
			case !a.passed():
				t.Errorf("%s: passes bare, fails %s: %s", name, via.how, strings.Join(a.failures, "; "))
			}
		}
	}
	for name := range through {
		if _, ok := bare[name]; !ok {
			t.Errorf("%s: ran through aegis, but not bare", name)
		}
	}
	if t.Failed() {
		// Its end: each session's start logs its sandbox at length.
		log := s.stderr.String()
		log = log[max(0, len(log)-8<<10):]
		t.Logf("aegis's stderr, its end:\n%s", log)
	}
	s.stop(t)
}

// startBare starts the server over HTTP (server.mjs http), and returns
// the URL it serves at.
func startBare(t *testing.T, node string, env []string, server string) string {
	t.Helper()
	c := exec.Command(node, server, "http")
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
			t.Fatalf("server.mjs printed no URL (%q): %s", u, stderr)
		}
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("server.mjs did not start: %s", stderr)
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
