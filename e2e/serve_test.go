package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// served is a running `aegis serve`.
type served struct {
	urls   map[string]string // by server name
	cmd    *exec.Cmd
	stderr *syncBuf
	done   chan error
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe starts `aegis serve --config config` on a free loopback port
// and waits until it says where it serves each server.
func startServe(t testing.TB, env []string, config string, servers ...string) *served {
	t.Helper()
	c := exec.Command(aegisBin, "serve", "--config", config, "--listen", "127.0.0.1:0")
	c.Env = env
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &served{urls: map[string]string{}, cmd: c, stderr: &syncBuf{}, done: make(chan error, 1)}
	c.Stderr = s.stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	go func() { s.done <- c.Wait() }()
	t.Cleanup(func() {
		c.Process.Kill()
	})
	deadline := time.After(60 * time.Second)
	for len(s.urls) < len(servers) {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("aegis serve ended before serving: %s", s.stderr)
			}
			var name, url string
			if _, err := fmt.Sscanf(l, "aegis: serving %s at %s", &name, &url); err == nil {
				s.urls[name] = url
			}
		case <-deadline:
			t.Fatalf("aegis serve did not start: %s", s.stderr)
		}
	}
	go func() {
		for range lines {
		}
	}()
	return s
}

// stop sends SIGTERM and waits: aegis serve drains and exits 0.
func (s *served) stop(t testing.TB) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("aegis serve exited: %v\n%s", err, s.stderr)
		}
	case <-time.After(40 * time.Second):
		t.Errorf("aegis serve did not stop on SIGTERM")
	}
}

// bearerRT adds a bearer token to each request.
type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeFilesystem: aegis serve in front of the real filesystem
// server, called over HTTP by the official Go SDK client and the official
// TypeScript client: the project's files are read, the key is refused by
// its rule and never reaches a client, each session has a server of its
// own, decisions name the principal, and on SIGTERM aegis drains, exits 0
// and leaves a chain that verifies.
func TestServeFilesystem(t *testing.T) {
	needNode(t)
	h := newFSHome(t)
	policy, err := os.ReadFile(filepath.Join(e2eDir, "testdata", "filesystem", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := json.Marshal([]string{nodeBin, filepath.Join(e2eDir, filesystemJS), h.home})
	writeFiles(t, h.home, map[string]string{
		"serve.yaml": "version: 1\npolicy: serve-policy.yaml\nservers:\n  fs:\n    builtin: filesystem\n    command: " + string(cmd) +
			"\nserve:\n  auth: {none: alice}\n",
		"serve-policy.yaml": string(policy),
	})
	s := startServe(t, h.env, filepath.Join(h.home, "serve.yaml"), "fs")
	url := s.urls["fs"]
	if !strings.HasSuffix(url, "/mcp/fs") {
		t.Fatalf("served at %q", url)
	}

	// The Go SDK client.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "aegis-e2e-go", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, s.stderr)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	read := func(path string) (string, bool) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": path}})
		if err != nil {
			return err.Error(), true
		}
		return resultText(res), res.IsError
	}
	if got, isErr := read(filepath.Join(h.home, "projects/notes.txt")); isErr || !strings.Contains(got, allowedText) {
		t.Errorf("the project's notes: %q", got)
	}
	if got, isErr := read(filepath.Join(h.home, "projects/../.ssh/id_rsa")); !isErr || !strings.Contains(got, `rule "no-secrets"`) || strings.Contains(got, h.secret) {
		t.Errorf("the key: %q", got)
	}
	written := filepath.Join(h.home, "projects/from-go.txt")
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": written, "content": "over http"}}); err != nil || res.IsError {
		t.Errorf("write_file: %v %+v", err, res)
	}
	if b, err := os.ReadFile(written); err != nil || string(b) != "over http" {
		t.Errorf("the written file: %q %v", b, err)
	}

	// The TypeScript client, in a session of its own, at the same time.
	plan := map[string]any{"calls": []methodCall{
		{Name: "notes", Tool: "read_text_file", Arguments: map[string]any{"path": filepath.Join(h.home, "projects/notes.txt")}},
		{Name: "key", Tool: "read_text_file", Arguments: map[string]any{"path": filepath.Join(h.home, ".ssh/id_rsa")}},
	}}
	b, _ := json.Marshal(plan)
	planFile := filepath.Join(t.TempDir(), "plan.json")
	os.WriteFile(planFile, b, 0o600)
	r := mustDriver(t, h.env, []string{"calls", planFile}, []string{url})
	results := tsResults(t, r)
	if len(results) != 2 || results[0].isError || !strings.Contains(results[0].text, allowedText) ||
		!results[1].isError || !strings.Contains(results[1].text, `rule "no-secrets"`) {
		t.Errorf("the TypeScript client's calls: %+v", results)
	}
	if strings.Contains(string(r.Raw), h.secret) {
		t.Errorf("the key reached the TypeScript client")
	}
	// The operator's view: health, and the decisions by effect and rule.
	// Both sessions are open: the TypeScript client leaves without a
	// DELETE, and its session waits for the idle timeout.
	base := strings.TrimSuffix(url, "/mcp/fs")
	for path, want := range map[string][]string{
		"/healthz": {"ok"},
		"/readyz":  {"ready"},
		"/metrics": {`aegis_decisions_total{effect="deny",method="tools/call",rule="fs-tools,no-secrets",server="fs"} 2`,
			`aegis_decisions_total{effect="allow",method="tools/call"`, "aegis_sessions_open 2", `aegis_sessions_started_total{server="fs"} 2`,
			`aegis_http_requests_total{server="fs",status="200"}`, "aegis_approvals_pending 0", "aegis_decision_seconds_bucket"},
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, w := range want {
			if resp.StatusCode != 200 || !strings.Contains(string(body), w) {
				t.Errorf("%s: %d, want %q in:\n%s", path, resp.StatusCode, w, body)
			}
		}
	}
	cs.Close()
	s.stop(t)

	// Two sessions, two servers; every decision names the principal.
	if n := strings.Count(s.stderr.String(), `"msg":"serve: session started"`); n != 2 {
		t.Errorf("%d sessions started, want 2:\n%s", n, s.stderr)
	}
	log, code := aegisCLI(t, h.env, "log", "--server", "fs", "--json")
	if code != 0 {
		t.Fatalf("aegis log: %d %s", code, log)
	}
	var n int
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var e struct {
			Principal string `json:"principal"`
			Tool      string `json:"tool"`
		}
		if json.Unmarshal([]byte(l), &e) != nil {
			continue
		}
		n++
		if e.Principal != "alice" {
			t.Errorf("an entry of principal %q: %s", e.Principal, l)
		}
	}
	if n < 5 {
		t.Errorf("%d entries in the chain, want the calls of both clients:\n%s", n, log)
	}
	if out, code := aegisCLI(t, h.env, "verify", "--server", "fs"); code != 0 {
		t.Errorf("aegis verify: exit %d: %s", code, out)
	}
}
