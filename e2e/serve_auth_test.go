package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/demoserver"
	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testIssuer is an OpenID issuer on loopback: discovery and a JWKS, and
// tokens signed with its key.
type testIssuer struct {
	srv *httptest.Server
	key *rsa.PrivateKey
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &testIssuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// token signs claims (iss, aud, exp default to this issuer, aud, +5m).
func (is *testIssuer) token(t *testing.T, claims map[string]any) string {
	t.Helper()
	c := map[string]any{"iss": is.srv.URL, "aud": "aegis-e2e", "exp": time.Now().Add(5 * time.Minute).Unix(), "iat": time.Now().Unix()}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: is.key, KeyID: "k1"}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(c)
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// unsigned is a token with alg none.
func unsigned(claims map[string]any) string {
	h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	p, _ := json.Marshal(claims)
	return h + "." + base64.RawURLEncoding.EncodeToString(p) + "."
}

// TestServeTokens: aegis serve behind bearer JWTs of an issuer on
// loopback, and an API key: the principal and roles come from the
// token's claims and change decisions (only a writer's write lands);
// expired, wrong-audience, wrong-issuer, unsigned and missing tokens get
// 401 and reach no server; the chain names each principal and role.
func TestServeTokens(t *testing.T) {
	needNode(t)
	is := newTestIssuer(t)
	h := newFSHome(t)
	const ciKey = "aegis_e2ekeyforthetestonly0123456789"
	sum := sha256.Sum256([]byte(ciKey))
	cmd, _ := json.Marshal([]string{nodeBin, filepath.Join(e2eDir, filesystemJS), h.home})
	writeFiles(t, h.home, map[string]string{
		"serve.yaml": "version: 1\npolicy: serve-policy.yaml\nservers:\n  fs:\n    builtin: filesystem\n    command: " + string(cmd) +
			"\nserve:\n  auth:\n    issuer: " + is.srv.URL + "\n    audience: aegis-e2e\n    roles_claim: roles\n" +
			"    api_keys: [{name: ci-bot, sha256: " + hex.EncodeToString(sum[:]) + ", roles: [writer]}]\n",
		"serve-policy.yaml": "version: 1\nrules:\n" +
			"  - {id: fs-tools, effect: allow, server: fs, tool: [\"read_*\", write_file]}\n" +
			"  - {id: read-projects, effect: allow, capability: fs.read, path_under: [\"~/projects\"]}\n" +
			"  - {id: writers-write, effect: allow, role: writer, capability: fs.write, path_under: [\"~/projects\"]}\n",
	})
	s := startServe(t, h.env, filepath.Join(h.home, "serve.yaml"), "fs")
	url := s.urls["fs"]

	write := func(token, name string) (string, bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "aegis-e2e-go", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerRT{token}}}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, s.stderr)
		}
		defer cs.Close()
		cs.ListTools(ctx, nil)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": filepath.Join(h.home, "projects", name), "content": name}})
		if err != nil {
			return err.Error(), true
		}
		return resultText(res), res.IsError
	}
	alice := is.token(t, map[string]any{"sub": "alice", "roles": []string{"writer"}})
	bob := is.token(t, map[string]any{"sub": "bob", "roles": []string{"reader"}})
	if got, isErr := write(alice, "alice.txt"); isErr {
		t.Errorf("alice, a writer: %q", got)
	}
	if got, isErr := write(bob, "bob.txt"); !isErr || !strings.Contains(got, "aegis denied") {
		t.Errorf("bob, a reader: %q", got)
	}
	if got, isErr := write(ciKey, "ci.txt"); isErr {
		t.Errorf("the ci-bot's key, a writer: %q", got)
	}
	for name, want := range map[string]bool{"alice.txt": true, "bob.txt": false, "ci.txt": true} {
		if _, err := os.Stat(filepath.Join(h.home, "projects", name)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", name, err == nil, want)
		}
	}

	// Tokens aegis refuses: none reaches a server.
	other := newTestIssuer(t)
	for name, token := range map[string]string{
		"no token":       "",
		"expired":        is.token(t, map[string]any{"sub": "alice", "roles": []string{"writer"}, "exp": time.Now().Add(-time.Hour).Unix()}),
		"wrong audience": is.token(t, map[string]any{"sub": "alice", "aud": "another-service"}),
		"wrong issuer":   other.token(t, map[string]any{"sub": "alice", "iss": other.srv.URL}),
		"forged issuer":  other.token(t, map[string]any{"sub": "alice"}),
		"alg none":       unsigned(map[string]any{"iss": is.srv.URL, "aud": "aegis-e2e", "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}),
		"wrong api key":  ciKey + "x",
	} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: %d %q, want 401 with a Bearer challenge", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	s.stop(t)
	if n := strings.Count(s.stderr.String(), `"msg":"serve: session started"`); n != 3 {
		t.Errorf("%d sessions started, want the 3 authenticated ones:\n%s", n, s.stderr)
	}
	log, code := aegisCLI(t, h.env, "log", "--server", "fs", "--json")
	if code != 0 {
		t.Fatalf("aegis log: %d %s", code, log)
	}
	seen := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var e struct {
			Principal string   `json:"principal"`
			Roles     []string `json:"roles"`
			Tool      string   `json:"tool"`
			Decision  string   `json:"decision"`
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Tool == "write_file" {
			seen[e.Principal] = strings.Join(e.Roles, ",") + " " + e.Decision
		}
	}
	want := map[string]string{"alice": "writer allow", "bob": "reader deny", "ci-bot": "writer allow"}
	for p, w := range want {
		if seen[p] != w {
			t.Errorf("the chain's write of %s: %q, want %q (all: %v)", p, seen[p], w, seen)
		}
	}
}

// TestServeRemoteCredentials: a server configured by url: is reached with
// the token its bearer_env names, on every request of every session
// (initialize, calls, the GET stream, the DELETE), and never with the
// caller's own: the client's API key stops at aegis. Two sessions in turn
// go through the one bridge client of aegis's process.
func TestServeRemoteCredentials(t *testing.T) {
	const clientKey = "aegis_e2eclientkeyneverupstream0123"
	const upstreamToken = "e2e-upstream-token-0123456789"
	demo, err := demoserver.New(&demoserver.Options{Root: tempDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var auths []string
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo }, nil)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Method+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(upstream.Close) // after aegis serve's own cleanup, which ends its GET streams

	dir := tempDir(t)
	sum := sha256.Sum256([]byte(clientKey))
	writeFiles(t, dir, map[string]string{
		"serve.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  remote:\n    url: " + upstream.URL + "\n    bearer_env: AEGIS_E2E_UPSTREAM_TOKEN\n" +
			"serve:\n  auth:\n    api_keys: [{name: ci-bot, sha256: " + hex.EncodeToString(sum[:]) + "}]\n",
		"policy.yaml": "version: 1\nrules:\n  - {id: echo, effect: allow, server: remote, tool: echo, unbound: true}\n",
	})
	s := startServe(t, append(baseEnv(dir, filepath.Join(dir, "state")), "AEGIS_E2E_UPSTREAM_TOKEN="+upstreamToken),
		filepath.Join(dir, "serve.yaml"), "remote")
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "aegis-e2e-go", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.urls["remote"], HTTPClient: &http.Client{Transport: bearerRT{clientKey}}}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, s.stderr)
		}
		if _, err := cs.ListTools(ctx, nil); err != nil { // aegis pins the tools' schemas
			t.Fatalf("tools/list: %v\n%s", err, s.stderr)
		}
		text := fmt.Sprintf("hello %d", i)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if err != nil {
			t.Fatalf("echo: %v\n%s", err, s.stderr)
		}
		if got := resultText(res); res.IsError || got != text {
			t.Fatalf("echo = %q (isError %v), want %q\n%s", got, res.IsError, text, s.stderr)
		}
		cs.Close()
		cancel()
	}
	s.stop(t)

	mu.Lock()
	defer mu.Unlock()
	methods := map[string]bool{}
	for _, a := range auths {
		method, auth, _ := strings.Cut(a, " ")
		methods[method] = true
		if auth != "Bearer "+upstreamToken {
			t.Errorf("the upstream got %s with Authorization %q, want the configured token", method, auth)
		}
	}
	if !methods[http.MethodPost] || !methods[http.MethodDelete] {
		t.Errorf("the upstream saw %q: want POSTs and each session's DELETE", auths)
	}
}
