package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pinned are the Node packages the tests drive, at the versions
// package.json pins. A node_modules holding other versions is stale: run
// install.sh again.
var pinned = map[string]string{
	"@modelcontextprotocol/client":            "2.4.0",
	"@modelcontextprotocol/conformance":       "0.1.16",
	"@modelcontextprotocol/server":            "2.4.0",
	"@modelcontextprotocol/sdk":               "1.32.2",
	"@modelcontextprotocol/server-everything": "2026.8.31",
	"@modelcontextprotocol/server-filesystem": "2026.8.31",
	"mcp-server-commands":                     "0.5.0",
	"@tokenizin/mcp-npx-fetch":                "1.0.0",
	"@cyanheads/git-mcp-server":               "2.15.3",
}

// The parts every test uses, found or built by TestMain.
var (
	// e2eDir is this package's directory, where driver.mjs and
	// node_modules are.
	e2eDir string
	// nodeBin is the node executable; the same one runs the driver and
	// every server.
	nodeBin string
	// aegisBin is the aegis binary built from this module.
	aegisBin string
	// setupErr says why the Node parts cannot be used; see needNode.
	setupErr error
)

// Server entry points, relative to e2eDir.
const (
	everythingJS = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
	filesystemJS = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
	commandsJS   = "node_modules/mcp-server-commands/build/index.js"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if e2eDir, err = os.Getwd(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// The tests that drive Node skip or fail without it, each saying why
	// (needNode); the ones that need only Go and aegis run either way.
	setupErr = checkNode()
	if setupErr != nil && nodeBin != "" && os.Getenv("AEGIS_E2E_NO_INSTALL") == "" {
		// A fresh clone: install the pinned packages (install.sh, npm ci)
		// rather than skip, so that `go test ./...` tests what it says.
		fmt.Fprintf(os.Stderr, "e2e: %v: installing them with e2e/install.sh\n", setupErr)
		install := exec.Command("bash", filepath.Join(e2eDir, "install.sh"))
		install.Stdout, install.Stderr = os.Stderr, os.Stderr
		if err := install.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: installing the packages failed (%v): the tests that need them skip, or fail with CI set\n", err)
		} else {
			setupErr = checkNode()
		}
	}
	if aegisBin = os.Getenv("AEGIS_E2E_BINARY"); aegisBin != "" {
		// A binary built elsewhere: a release, or a build from another tree.
		return m.Run()
	}
	tmp, err := os.MkdirTemp("", "aegis-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	aegisBin = filepath.Join(tmp, "aegis")
	// Under -race the binary is built with the race detector too, so that
	// a race in the real proxy fails these tests (see GORACE in baseEnv).
	args := []string{"build", "-o", aegisBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "github.com/aegis-mcp/aegis/cmd/aegis")
	build := exec.Command("go", args...)
	build.Dir = e2eDir
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building aegis: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// checkNode finds node and the pinned packages. AEGIS_E2E_NO_INSTALL set
// keeps TestMain from installing missing ones.
func checkNode() error {
	var err error
	if nodeBin, err = exec.LookPath("node"); err != nil {
		return fmt.Errorf("node is not installed: %w", err)
	}
	for name, want := range pinned {
		b, err := os.ReadFile(filepath.Join(e2eDir, "node_modules", name, "package.json"))
		if err != nil {
			return fmt.Errorf("%s is not installed (run e2e/install.sh): %w", name, err)
		}
		var p struct{ Version string }
		if err := json.Unmarshal(b, &p); err != nil {
			return fmt.Errorf("reading the version of %s: %w", name, err)
		}
		if p.Version != want {
			return fmt.Errorf("%s %s is installed, but %s is pinned (run e2e/install.sh)", name, p.Version, want)
		}
	}
	return nil
}

// needNode fails the test when the Node parts are missing and the
// environment variable CI is set, and skips it, saying why, when CI is
// unset: a CI run must not pass by running nothing.
func needNode(t *testing.T) {
	t.Helper()
	if setupErr == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and the end-to-end parts are missing: %v", setupErr)
	}
	t.Skipf("skipping the end-to-end tests: %v (install with e2e/install.sh; with CI set this fails)", setupErr)
}

// baseEnv is the environment of the driver, aegis and the servers: this
// process's, with HOME and aegis's state directory replaced. Both sides of a
// comparison get the same, so a server cannot tell them apart by it.
func baseEnv(home, aegisHome string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "AEGIS_HOME", "XDG_STATE_HOME", "GORACE", "NODE_OPTIONS", "GZIP_ALLOWED_DOMAINS":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home,
		"AEGIS_HOME="+aegisHome,
		// A race in aegis stops it at once, with the report on stderr; and a
		// race-enabled aegis exits without the race runtime's 1 s pause.
		"GORACE=halt_on_error=1 atexit_sleep_ms=0",
		// server-everything's gzip tool fetches URLs: refuse every domain
		// but loopback, so a mistake cannot reach the internet. The tests
		// give it data: URIs only.
		"GZIP_ALLOWED_DOMAINS=localhost",
	)
}

// aegisRun is the command line that wraps a server with `aegis run`.
func aegisRun(config, server string, serverCmd ...string) []string {
	return append([]string{aegisBin, "run", "--config", config, "--server", server, "--principal", "e2e", "--"}, serverCmd...)
}

// tempDir returns a new temporary directory with every symbolic link in its
// name resolved, so that paths the test builds are the canonical ones aegis
// derives.
func tempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// transcript is what driver.mjs prints.
type transcript struct {
	Scenario string            `json:"scenario"`
	Steps    []json.RawMessage `json:"steps"`
	Asked    []json.RawMessage `json:"asked"`
	Received []json.RawMessage `json:"received"`
	Sent     []json.RawMessage `json:"sent"`
}

// driverRun is one run of driver.mjs.
type driverRun struct {
	Raw    []byte // stdout: the transcript as printed
	T      transcript
	Stderr string // the driver's, aegis's and the server's stderr
	Took   time.Duration
}

// runDriver runs driver.mjs with the scenario and its arguments against
// cmd. It returns an error if the driver fails or aegis reports a race; it
// may be called from any goroutine.
func runDriver(env []string, scenario []string, cmd []string) (driverRun, error) {
	return runScript(nodeBin, "driver.mjs", env, scenario, cmd)
}

// runScript is runDriver for the driver script (driver.mjs,
// driver-v2.mjs), run by node.
func runScript(node, script string, env []string, scenario []string, cmd []string) (driverRun, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{filepath.Join(e2eDir, script)}, scenario...)
	args = append(args, "--")
	args = append(args, cmd...)
	c := exec.CommandContext(ctx, node, args...)
	c.Env = env
	c.Dir = e2eDir
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	c.WaitDelay = 5 * time.Second
	start := time.Now()
	err := c.Run()
	r := driverRun{Raw: stdout.Bytes(), Stderr: stderr.String(), Took: time.Since(start)}
	if strings.Contains(r.Stderr, "DATA RACE") {
		return r, fmt.Errorf("aegis reported a data race:\n%s", r.Stderr)
	}
	if err != nil {
		return r, fmt.Errorf("driver %v: %v\nstderr:\n%s", scenario, err, r.Stderr)
	}
	if err := json.Unmarshal(transcriptIn(r.Raw), &r.T); err != nil {
		return r, fmt.Errorf("driver %v printed no transcript: %v\nstdout:\n%s\nstderr:\n%s", scenario, err, r.Raw, r.Stderr)
	}
	return r, nil
}

// transcriptIn is the driver's transcript in its stdout: from the first
// line that starts a JSON object, since an SDK may warn on stdout before
// it (the SDK v2 client, when a server it could not connect to lists no
// tools).
func transcriptIn(stdout []byte) []byte {
	if len(stdout) > 0 && stdout[0] == '{' {
		return stdout
	}
	if i := bytes.Index(stdout, []byte("\n{")); i >= 0 {
		return stdout[i+1:]
	}
	return stdout
}

// mustDriver is runDriver for the test's own goroutine.
func mustDriver(t *testing.T, env []string, scenario []string, cmd []string) driverRun {
	t.Helper()
	r, err := runDriver(env, scenario, cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("driver %s: %v", strings.Join(scenario, " "), r.Took.Round(time.Millisecond))
	return r
}

// parallel runs fns at once and waits for them all.
func parallel(fns ...func() error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(fns))
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// resultText is the text of a tool result's text content, joined.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
