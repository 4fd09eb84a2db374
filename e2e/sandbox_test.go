package e2e

import (
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// TestSandboxServerOnItsOwn runs a stand-in server that ignores its
// arguments and reads ~/.ssh/id_rsa and aegis's configuration, and dials
// a loopback port, on its own (testdata/sandbox/peek.mjs), through aegis
// run with a policy that allows its tool. Without the sandbox it gets all
// three (the control); under `sandbox: required` the key and the
// configuration are not there and the loopback listener is never
// reached, while the file the policy could allow still reads. With the
// tool set to run_unbound, its calls run in the server's unbound twin,
// even with the server's own sandbox off: there no file reads at all, the
// allowed one neither, and the listener is not reached (R29).
func TestSandboxServerOnItsOwn(t *testing.T) {
	needNode(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	const secret = "e2e-sandbox-FAKE-KEY"
	for _, tt := range []struct {
		name, mode string
		runUnbound bool
		wantKey    bool
	}{
		{"off", "off", false, true},
		{"required", "required", false, false},
		{"run_unbound", "off", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := tempDir(t)
			aegisHome := filepath.Join(home, ".local/state/aegis")
			config := filepath.Join(home, ".config/aegis/aegis.yaml")
			writeFiles(t, home, map[string]string{
				".config/aegis/aegis.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  peek: {schema: off, sandbox: " + tt.mode + ", dlp: {off: true}, tools: {peek: {run_unbound: " + strconv.FormatBool(tt.runUnbound) + "}}}\n",
				".config/aegis/policy.yaml": "version: 1\nrules:\n" +
					"  - {id: peek, effect: allow, server: peek, tool: peek, unbound: true}\n" +
					"  - {id: projects, effect: allow, capability: fs.read, path_under: " + filepath.Join(home, "projects") + "}\n" +
					"  - {id: no-ssh, effect: deny, path_under: " + filepath.Join(home, ".ssh") + "}\n",
				".ssh/id_rsa":        secret,
				"projects/notes.txt": allowedText,
			})
			before := accepted.Load()
			plan := writeMethodPlan(t, []methodCall{{Name: "peek", Tool: "peek", Arguments: map[string]any{}}}, false)
			r := mustDriver(t, baseEnv(home, aegisHome), []string{"calls", plan},
				aegisRun(config, "peek", nodeBin, filepath.Join(e2eDir, "testdata", "sandbox", "peek.mjs"), config, port))
			out := strings.Join(stepResults(t, r), "\n")
			dialed := accepted.Load() > before
			if got := strings.Contains(out, secret); got != tt.wantKey {
				t.Errorf("the key reached the server's answer: %v, want %v:\n%s", got, tt.wantKey, out)
			}
			if got := strings.Contains(out, "version: 1"); got != tt.wantKey {
				t.Errorf("aegis's configuration reached the server's answer: %v, want %v:\n%s", got, tt.wantKey, out)
			}
			if dialed != tt.wantKey {
				t.Errorf("the loopback listener outside was reached: %v, want %v:\n%s", dialed, tt.wantKey, out)
			}
			if got := strings.Contains(out, allowedText); got == tt.runUnbound {
				t.Errorf("the file the policy allows read: %v, want %v:\n%s", got, !tt.runUnbound, out)
			}
			t.Logf("the server says:\n%s", out)
			say := `server "peek" sandbox: mode=required applied=true`
			if tt.runUnbound {
				say = `server "peek" unbound twin sandbox: mode=required applied=true`
			}
			if !tt.wantKey && !strings.Contains(r.Stderr, say) {
				t.Errorf("aegis did not say which sandbox it applied (%s):\n%s", say, r.Stderr)
			}
		})
	}
}

// TestSandboxFilesystem runs the real filesystem server under `sandbox:
// required`: the reads and writes the policy allows work (a new file
// too, whose parent the server finds by listing its allowed directory),
// and what it refuses is still refused, by aegis.
func TestSandboxFilesystem(t *testing.T) {
	needNode(t)
	h := newFSHome(t)
	config := filepath.Join(h.home, "sandboxed.yaml")
	policy, err := os.ReadFile(filepath.Join(e2eDir, "testdata", "filesystem", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, h.home, map[string]string{
		"sandboxed.yaml":        "version: 1\npolicy: sandboxed-policy.yaml\nservers:\n  fs: {builtin: filesystem, sandbox: required}\n",
		"sandboxed-policy.yaml": string(policy),
	})
	key := filepath.Join(h.home, ".ssh", "id_rsa")
	calls := []fsCall{
		{name: "read_text_file of an allowed file", tool: "read_text_file", args: map[string]any{"path": filepath.Join(h.home, "projects/notes.txt")}, want: record.Allow, contains: allowedText},
		{name: "write_file of a new file", tool: "write_file", args: map[string]any{"path": filepath.Join(h.home, "projects/new.txt"), "content": "written"}, want: record.Allow, contains: "Successfully wrote"},
		{name: "list_directory of the projects", tool: "list_directory", args: map[string]any{"path": filepath.Join(h.home, "projects")}, want: record.Allow, contains: "new.txt"},
		{name: "read_text_file of the key", tool: "read_text_file", args: map[string]any{"path": key}, want: record.Deny, rule: "no-secrets"},
	}
	server := []string{nodeBin, filepath.Join(e2eDir, filesystemJS), h.home}
	r := mustDriver(t, h.env, []string{"calls", writePlan(t, calls)}, aegisRun(config, "fs", server...))
	results := tsResults(t, r)
	for i, c := range calls {
		checkFSResult(t, c, results[i])
	}
	if b, err := os.ReadFile(filepath.Join(h.home, "projects/new.txt")); err != nil || string(b) != "written" {
		t.Errorf("the new file: %q, %v", b, err)
	}
	if !strings.Contains(r.Stderr, "sandbox: mode=required applied=true") || !strings.Contains(r.Stderr, "masked=[") {
		t.Errorf("aegis did not report the sandbox:\n%s", r.Stderr)
	}
	if strings.Contains(string(r.Raw), h.secret) {
		t.Error("the key reached the client")
	}
}

// TestSandboxEgress runs a stand-in fetcher (testdata/sandbox/fetcher.mjs)
// under `sandbox: required`: its only way out is aegis's egress proxy,
// which decides each connection as the server's own (egress/connect) and
// dials only checked addresses. An allowed loopback URL is fetched; its
// redirect to a denied loopback port is refused at the proxy, and the
// denied port's server receives nothing; a direct connection, ignoring
// the proxy, gets nowhere; every connection is in the chain.
func TestSandboxEgress(t *testing.T) {
	needNode(t)
	var deniedHits atomic.Int32
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deniedHits.Add(1)
		io.WriteString(w, "e2e-DENIED-PORT-BODY")
	}))
	defer denied.Close()
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, denied.URL+"/secret", http.StatusFound)
			return
		}
		io.WriteString(w, "e2e-ALLOWED-BODY")
	}))
	defer allowed.Close()
	allowedPort := allowed.Listener.Addr().(*net.TCPAddr).Port
	deniedPort := denied.Listener.Addr().(*net.TCPAddr).Port

	home := tempDir(t)
	aegisHome := filepath.Join(home, ".local/state/aegis")
	config := filepath.Join(home, "aegis.yaml")
	writeFiles(t, home, map[string]string{
		"aegis.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  web:\n    schema: off\n    sandbox: required\n" +
			"    egress: {admit: [{hosts: [127.0.0.1], classes: [loopback]}]}\n",
		"policy.yaml": "version: 1\nrules:\n" +
			"  - {id: tools, effect: allow, server: web, tool: [fetch, dial], unbound: true}\n" +
			"  - {id: own, effect: allow, server: web, method: egress/connect}\n" +
			"  - {id: the-api, effect: allow, capability: net.connect, host: [127.0.0.1], port: [" + strconv.Itoa(allowedPort) + "]}\n",
	})
	plan := writeMethodPlan(t, []methodCall{
		{Name: "fetch allowed", Tool: "fetch", Arguments: map[string]any{"url": allowed.URL + "/page"}},
		{Name: "fetch a redirect to the denied port", Tool: "fetch", Arguments: map[string]any{"url": allowed.URL + "/redirect"}},
		{Name: "dial the denied port directly", Tool: "dial", Arguments: map[string]any{"port": deniedPort}},
		{Name: "dial the allowed port directly", Tool: "dial", Arguments: map[string]any{"port": allowedPort}},
	}, false)
	r := mustDriver(t, baseEnv(home, aegisHome), []string{"calls", plan},
		aegisRun(config, "web", nodeBin, filepath.Join(e2eDir, "testdata", "sandbox", "fetcher.mjs")))
	res := stepResults(t, r)
	t.Logf("results:\n%s\nstderr:\n%s", strings.Join(res, "\n"), r.Stderr)
	if len(res) != 4 {
		t.Fatalf("%d results", len(res))
	}
	if !strings.Contains(res[0], "e2e-ALLOWED-BODY") {
		t.Errorf("the allowed URL was not fetched: %s", res[0])
	}
	if !strings.Contains(res[1], "-> 302") || !strings.Contains(res[1], "-> 403") || strings.Contains(res[1], "e2e-DENIED-PORT-BODY") {
		t.Errorf("the redirect to the denied port was not refused at the proxy: %s", res[1])
	}
	for i := 2; i < 4; i++ {
		if strings.Contains(res[i], "connected") {
			t.Errorf("a direct connection got out: %s", res[i])
		}
	}
	if n := deniedHits.Load(); n != 0 {
		t.Errorf("the denied port's server received %d requests", n)
	}
	if !strings.Contains(r.Stderr, "egress refused") {
		t.Errorf("aegis did not say it refused a connection:\n%s", r.Stderr)
	}
	entries, _ := readChain(t, aegisHome, "web")
	var connects []string
	for _, e := range entries {
		if e.Method == "egress/connect" {
			connects = append(connects, e.Decision+" "+e.Tool)
		}
	}
	if len(connects) != 3 || !strings.HasPrefix(connects[0], "allow ") || !strings.HasPrefix(connects[1], "allow ") || !strings.HasPrefix(connects[2], "deny ") {
		t.Errorf("connections in the chain: %q", connects)
	}
}

// TestSandboxHTTPSCredential runs a stand-in API client
// (testdata/sandbox/apiclient.mjs) under `sandbox: required` with a
// credential for an HTTPS host (a loopback TLS server, example.com in the
// egress hosts table): the client speaks TLS through a CONNECT as it
// would to the real host, trusting what node trusts; the host receives
// the token in place of the client's own Authorization, while the
// server's environment holds no token; a CONNECT to the same host by
// address, which has no credential, is an opaque tunnel whose
// certificate the client does not trust (httptest's own), so nothing is
// sent.
func TestSandboxHTTPSCredential(t *testing.T) {
	needNode(t)
	const token = "Bearer e2e-HTTPS-TOKEN-c0ffee"
	var mu sync.Mutex
	var auths []string
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, "e2e-API-BODY "+r.Host)
	}))
	defer api.Close()
	port := strconv.Itoa(api.Listener.Addr().(*net.TCPAddr).Port)

	home := tempDir(t)
	aegisHome := filepath.Join(home, ".local/state/aegis")
	config := filepath.Join(home, "aegis.yaml")
	writeFiles(t, home, map[string]string{
		"api-ca.pem": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})),
		"aegis.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  api:\n    schema: off\n    sandbox: required\n    dlp: {off: true}\n" +
			"    egress: {resolver: static, hosts: {example.com: [127.0.0.1]}, admit: [{hosts: [127.0.0.1], classes: [loopback]}]}\n" +
			"    credentials:\n      - {host: example.com, port: " + port + ", value_env: E2E_API_TOKEN, ca_file: api-ca.pem}\n",
		"policy.yaml": "version: 1\nrules:\n" +
			"  - {id: tools, effect: allow, server: api, tool: [get, env], unbound: true}\n" +
			"  - {id: own, effect: allow, server: api, method: egress/connect}\n" +
			"  - {id: the-api, effect: allow, capability: net.connect, host: [example.com, 127.0.0.1], port: [" + port + "]}\n",
	})
	plan := writeMethodPlan(t, []methodCall{
		{Name: "get the api", Tool: "get", Arguments: map[string]any{"url": "https://example.com:" + port + "/v1/me"}},
		{Name: "get it again", Tool: "get", Arguments: map[string]any{"url": "https://example.com:" + port + "/v1/again"}},
		{Name: "get it by address", Tool: "get", Arguments: map[string]any{"url": "https://127.0.0.1:" + port + "/v1/me"}},
		{Name: "the token in the environment", Tool: "env", Arguments: map[string]any{"value": "HTTPS-TOKEN"}},
	}, false)
	env := append(baseEnv(home, aegisHome), "E2E_API_TOKEN="+token)
	r := mustDriver(t, env, []string{"calls", plan},
		aegisRun(config, "api", nodeBin, filepath.Join(e2eDir, "testdata", "sandbox", "apiclient.mjs")))
	res := stepResults(t, r)
	t.Logf("results:\n%s\nstderr:\n%s", strings.Join(res, "\n"), r.Stderr)
	if len(res) != 4 {
		t.Fatalf("%d results", len(res))
	}
	for i := range 2 {
		if !strings.Contains(res[i], "200 e2e-API-BODY example.com:"+port) {
			t.Errorf("the API was not reached with TLS the client trusts: %s", res[i])
		}
	}
	if strings.Contains(res[2], "e2e-API-BODY") || !strings.Contains(res[2], "error") {
		t.Errorf("a tunnel by address was trusted: %s", res[2])
	}
	if !strings.Contains(res[3], "not held") {
		t.Errorf("the server's environment: %s", res[3])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) != 2 || auths[0] != token || auths[1] != token {
		t.Errorf("the API saw Authorization %q, want the token twice", auths)
	}
	if strings.Contains(string(r.Raw), "e2e-HTTPS-TOKEN") || strings.Contains(r.Stderr, "e2e-HTTPS-TOKEN") {
		t.Error("the token reached the client or the log")
	}
	if !strings.Contains(r.Stderr, "the proxy sets credentials for https://example.com:"+port) {
		t.Errorf("aegis did not say which hosts it intercepts:\n%s", r.Stderr)
	}
}
