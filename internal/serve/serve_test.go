package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/demoserver"
	"github.com/aegis-mcp/aegis/internal/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// childEnv makes the test binary the demo server: a real subprocess per
// session, as aegis serve starts one.
const childEnv = "AEGIS_SERVE_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		s, err := demoserver.New(&demoserver.Options{Root: os.Getenv("AEGIS_DEMO_ROOT")})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// denyGate lets every call through but those of tool "status", which it
// refuses, naming it; it counts the calls it saw.
type denyGate struct{ calls atomic.Int64 }

func (g *denyGate) Call(_ context.Context, c *proxy.Call) (proxy.Verdict, error) {
	g.calls.Add(1)
	if c.Tool == "status" {
		return proxy.Verdict{Reason: "aegis denied status (test)"}, nil
	}
	return proxy.Verdict{Forward: true}, nil
}

// testServe is a Handler serving the demo server as "demo" behind an
// httptest server; the principal is the X-Test-Principal header (none:
// refused), its roles X-Test-Roles, comma-separated. It returns the
// server and how many sessions were started.
func testServe(t *testing.T, c *Config) (*httptest.Server, *Handler, *atomic.Int64) {
	t.Helper()
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello from notes"), 0o600)
	var started atomic.Int64
	start := func(ctx context.Context, _ Started) (*Upstream, error) {
		started.Add(1)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", "AEGIS_DEMO_ROOT="+root)
		return &Upstream{Cmd: cmd, Gate: &denyGate{}, Options: &proxy.Options{Stderr: io.Discard}}, nil
	}
	if c == nil {
		c = &Config{}
	}
	c.Servers = map[string]*Server{"demo": {Start: start}}
	c.Who = func(r *http.Request) (Identity, bool) {
		p := r.Header.Get("X-Test-Principal")
		var roles []string
		if v := r.Header.Get("X-Test-Roles"); v != "" {
			roles = strings.Split(v, ",")
		}
		return Identity{Principal: p, Roles: roles}, p != ""
	}
	h := New(c)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		ts.Close()
	})
	return ts, h, &started
}

// principalRT sets X-Test-Principal on every request.
type principalRT struct{ p string }

func (rt principalRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Principal", rt.p)
	return http.DefaultTransport.RoundTrip(r)
}

// connect connects the Go SDK client as principal, at revision (""
// for the client's default, 2026-07-28, stateless).
func connect(t *testing.T, url, principal, revision string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: principalRT{principal}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, opts).Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestGoClientSessions: the official Go SDK client, over Streamable HTTP,
// in either era: at 2025-11-25 each client gets a session of its own (its
// own server process), ended by its DELETE; at 2026-07-28 (the client's
// default) each principal's stateless requests share a relay of its own.
// Either way its calls are decided by the gate: an allowed call reaches
// the server, a refused one comes back as the gate's reason; the server's
// progress reaches the call that asked for it, and its requests for input
// (elicitation, sampling; in input_required results at 2026-07-28) reach
// the client and their answers the server.
func TestGoClientSessions(t *testing.T) {
	for _, rev := range []string{"2025-11-25", ""} {
		t.Run("revision "+rev, func(t *testing.T) {
			ts, h, started := testServe(t, nil)
			var progress atomic.Int64
			opts := &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
				},
				CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "forty-two"}}, nil
				},
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
			}
			a := connect(t, ts.URL+"/mcp/demo", "alice", rev, opts)
			b := connect(t, ts.URL+"/mcp/demo", "bob", rev, opts)
			if n := started.Load(); n != 2 || h.Sessions() != 2 {
				t.Fatalf("%d servers started, %d sessions, want 2 and 2", n, h.Sessions())
			}
			ctx := t.Context()
			res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.txt"}})
			if err != nil || res.IsError || text(res) != "hello from notes" {
				t.Errorf("read_file: %v %+v", err, res)
			}
			res, err = b.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
			if err != nil || !res.IsError || !strings.Contains(text(res), "aegis denied status (test)") {
				t.Errorf("status: %v %+v, want the gate's refusal", err, res)
			}
			params := &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"to": 3}}
			params.SetProgressToken("p1")
			if res, err = a.CallTool(ctx, params); err != nil || res.IsError {
				t.Errorf("count: %v %+v", err, res)
			}
			// The client handles notifications on goroutines of their
			// own: the call may return before its handler has run, and the
			// client may drop the last progress of a call it has seen
			// answered.
			waitFor(t, func() bool { return progress.Load() > 0 })
			if res, err = a.CallTool(ctx, &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{"action": "deploy"}}); err != nil || res.IsError {
				t.Errorf("confirm (elicitation): %v %+v", err, res)
			}
			if res, err = b.CallTool(ctx, &mcp.CallToolParams{Name: "ask_model", Arguments: map[string]any{"question": "the answer?"}}); err != nil || res.IsError || !strings.Contains(text(res), "forty-two") {
				t.Errorf("ask_model (sampling): %v %+v", err, res)
			}
			if n := started.Load(); n != 2 {
				t.Errorf("%d servers started, want one per session or principal", n)
			}
			a.Close()
			b.Close()
			if rev != "" {
				waitFor(t, func() bool { return h.Sessions() == 0 })
			}
		})
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if ok() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("condition not met")
}

// post sends one raw POST.
func post(t *testing.T, url string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestTransportRefusals: what the transport refuses, each with a status
// and a reason naming what was wrong; nothing of it reaches a server.
func TestTransportRefusals(t *testing.T) {
	ts, _, started := testServe(t, &Config{MaxMessageBytes: 64 << 10, Origins: []string{"https://app.example"}, Hosts: []string{"127.0.0.1"}})
	url := ts.URL + "/mcp/demo"
	alice := map[string]string{"X-Test-Principal": "alice"}
	resp, _ := post(t, url, alice, initialize)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || len(sid) < 32 {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	post(t, url, map[string]string{"X-Test-Principal": "alice", "Mcp-Session-Id": sid}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{"X-Test-Principal": "alice", "Mcp-Session-Id": sid}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	for _, tt := range []struct {
		name   string
		path   string
		hdr    map[string]string
		body   string
		status int
		want   string
	}{
		{"no principal", "/mcp/demo", with(map[string]string{"X-Test-Principal": ""}), call, 401, "not authenticated"},
		{"no such server", "/mcp/other", with(nil), call, 404, "no MCP server at /mcp/other"},
		{"no session", "/mcp/demo", with(map[string]string{"Mcp-Session-Id": ""}), call, 400, "no Mcp-Session-Id"},
		{"unknown session", "/mcp/demo", with(map[string]string{"Mcp-Session-Id": "feedfacefeedfacefeedfacefeedface"}), call, 404, "no session"},
		{"another principal's session", "/mcp/demo", with(map[string]string{"X-Test-Principal": "mallory"}), call, 404, "no session"},
		{"foreign origin", "/mcp/demo", with(map[string]string{"Origin": "https://evil.example"}), call, 403, `origin "https://evil.example" is not allowed`},
		// A page DNS rebinding pointed at the listener: its own origin,
		// but not a host aegis serves.
		{"rebound host", "/mcp/demo", with(map[string]string{"Host": "evil.example:8347", "Origin": "http://evil.example:8347"}), call, 403, `host "evil.example:8347" is not served here`},
		{"rebound host without a port", "/mcp/demo", with(map[string]string{"Host": "evil.example", "Origin": "http://evil.example"}), call, 403, `host "evil.example" is not served here`},
		{"method header disagrees", "/mcp/demo", with(map[string]string{"Mcp-Method": "tools/list"}), call, 400, `Mcp-Method header \"tools/list\" disagrees`},
		{"name header disagrees", "/mcp/demo", with(map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "read_file"}), call, 400, `Mcp-Name header \"read_file\" disagrees`},
		{"batch", "/mcp/demo", with(nil), "[" + call + "]", 400, "batches are not served"},
		{"invalid JSON", "/mcp/demo", with(nil), `{"jsonrpc":"2.0",`, 400, "invalid message"},
		{"pretty invalid JSON", "/mcp/demo", with(nil), "{\n\"jsonrpc\":", 400, "invalid JSON"},
		{"duplicate key", "/mcp/demo", with(nil), `{"jsonrpc":"2.0","id":8,"id":9,"method":"ping"}`, 400, "invalid message"},
		{"case variant of method", "/mcp/demo", with(nil), `{"jsonrpc":"2.0","id":8,"method":"ping","Method":"tools/call"}`, 400, "differ only in case"},
		{"empty body", "/mcp/demo", with(nil), ``, 400, "empty body"},
		{"oversized", "/mcp/demo", with(nil), `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"` + strings.Repeat("a", 70<<10) + `"}}`, 413, "larger than 65536 bytes"},
		{"wrong content type", "/mcp/demo", with(map[string]string{"Content-Type": "text/plain"}), call, 415, "want application/json"},
		{"a session at the stateless revision", "/mcp/demo", with(map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}), call, 400, `revision 2026-07-28 has no sessions`},
		{"an unknown revision", "/mcp/demo", with(map[string]string{"Mcp-Protocol-Version": "2027-01-01"}), call, 400, `protocol version "2027-01-01" is not served`},
		{"id neither string nor integer", "/mcp/demo", with(nil), `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, 400, "not a string or an integer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, ts.URL+tt.path, tt.hdr, tt.body)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.want) {
				t.Errorf("%d %q, want %d and %q", resp.StatusCode, body, tt.status, tt.want)
			}
		})
	}
	// The session still works, and the origin the configuration lists
	// is let in.
	resp, body := post(t, url, with(map[string]string{"Origin": "https://app.example"}), call)
	if resp.StatusCode != 200 || !strings.Contains(body, `"text":"hi"`) {
		t.Errorf("the session after the refusals: %d %q", resp.StatusCode, body)
	}
	if n := started.Load(); n != 1 {
		t.Errorf("%d servers started, want 1", n)
	}
	// A GET stream: one per session; without Accept it is refused.
	get := func(accept string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		for k, v := range with(map[string]string{"Accept": accept}) {
			req.Header.Set(k, v)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get("application/json"); s != http.StatusNotAcceptable {
		t.Errorf("GET without event-stream: %d", s)
	}
	// DELETE by another principal does not end it; by its own does.
	del := func(p string) int {
		req, _ := http.NewRequest(http.MethodDelete, url, nil)
		req.Header.Set("X-Test-Principal", p)
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := del("mallory"); s != 404 {
		t.Errorf("DELETE by another principal: %d", s)
	}
	if s := del("alice"); s != 204 {
		t.Errorf("DELETE: %d", s)
	}
	resp, _ = post(t, url, with(nil), call)
	if resp.StatusCode != 404 {
		t.Errorf("a call in the ended session: %d, want 404", resp.StatusCode)
	}
}

// TestJSONAnswers: a client that accepts only JSON gets its answer as
// JSON; the server's notifications meanwhile wait for a stream.
func TestJSONAnswers(t *testing.T) {
	ts, _, _ := testServe(t, nil)
	url := ts.URL + "/mcp/demo"
	hdr := map[string]string{"X-Test-Principal": "alice", "Accept": "application/json"}
	resp, body := post(t, url, hdr, initialize)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("initialize: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var m struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || m.ID != 1 || !bytes.Contains(m.Result, []byte("aegis-demo")) {
		t.Errorf("initialize answer %q: %v", body, err)
	}
}

// TestManyConcurrentCalls: calls in flight at once each get their own
// answer: of one session, and, at 2026-07-28, of two clients of one
// principal, whose requests share one relay and use the same ids.
func TestManyConcurrentCalls(t *testing.T) {
	for _, rev := range []string{"2025-11-25", ""} {
		t.Run("revision "+rev, func(t *testing.T) {
			ts, _, started := testServe(t, nil)
			clients := []*mcp.ClientSession{connect(t, ts.URL+"/mcp/demo", "alice", rev, nil), connect(t, ts.URL+"/mcp/demo", "alice", rev, nil)}
			var wg sync.WaitGroup
			for c, cs := range clients {
				for i := range 16 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						want := fmt.Sprintf("c%d-n%d", c, i)
						res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": want}})
						if err != nil || text(res) != want {
							t.Errorf("call %s: %v %q", want, err, text(res))
						}
					}()
				}
			}
			wg.Wait()
			want := int64(2)
			if rev == "" {
				want = 1 // one principal, one relay
			}
			if n := started.Load(); n != want {
				t.Errorf("%d servers started, want %d", n, want)
			}
		})
	}
}

// TestSlowBody: a client that stops sending its body loses the request
// once the body timeout passes, rather than holding it open.
func TestSlowBody(t *testing.T) {
	ts, _, started := testServe(t, &Config{BodyTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp/demo HTTP/1.1\r\nHost: x\r\nX-Test-Principal: alice\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"jsonrpc\":")
	conn.SetReadDeadline(time.Now().Add(20 * time.Second)) // liveness only: without the body timeout nothing ever comes
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
	if started.Load() != 0 {
		t.Errorf("a server was started")
	}
}

// TestStatelessRefusals: what revision 2026-07-28 refuses, each with a
// reason, before any server starts; and a server that speaks only older
// revisions is found out once, then told of at once.
func TestStatelessRefusals(t *testing.T) {
	ts, _, started := testServe(t, nil)
	url := ts.URL + "/mcp/demo"
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	hdr := func(extra map[string]string) map[string]string {
		m := map[string]string{"X-Test-Principal": "alice", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tt := range []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
		want   string
	}{
		{"no Mcp-Method", hdr(map[string]string{"Mcp-Method": ""}), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, 400, "requires the Mcp-Method header"},
		{"the body names another revision", hdr(nil), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, 400, `names revision \"2025-11-25\"`},
		{"no _meta", hdr(nil), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 400, `names revision \"\"`},
		{"a session id", hdr(map[string]string{"Mcp-Session-Id": "abc"}), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, 400, "has no sessions"},
		{"a response", hdr(map[string]string{"Mcp-Method": ""}), `{"jsonrpc":"2.0","id":1,"result":{}}`, 400, "a client answers nothing"},
		{"the method header disagrees", hdr(map[string]string{"Mcp-Method": "tools/call"}), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, 400, "disagrees"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, url, tt.hdr, tt.body)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.want) {
				t.Errorf("%d %q, want %d and %q", resp.StatusCode, body, tt.status, tt.want)
			}
		})
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("X-Test-Principal", "alice")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET at 2026-07-28: %v %v", resp.StatusCode, err)
	}
	if n := started.Load(); n != 0 {
		t.Errorf("%d servers started for refused requests", n)
	}
	// A well-formed request goes through, answered with the client's id.
	resp, body := post(t, url, hdr(nil), `{"jsonrpc":"2.0","id":"mine","method":"tools/list","params":{`+meta+`}}`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"id":"mine"`) || !strings.Contains(body, `"name":"echo"`) {
		t.Errorf("tools/list: %d %q", resp.StatusCode, body)
	}
}

// TestStatelessProgress: two clients of one principal send, at the same
// moment, requests with the same id and the same progress token; each
// stream carries its own request's progress, under the client's token,
// and its own answer, under the client's id.
func TestStatelessProgress(t *testing.T) {
	ts, _, _ := testServe(t, nil)
	url := ts.URL + "/mcp/demo"
	call := func(to int) string {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count","arguments":{"to":%d},"_meta":{"progressToken":"t","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, to)
		_, got := post(t, url, map[string]string{"X-Test-Principal": "alice", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "count"}, body)
		return got
	}
	// The tools are listed first, as a client does.
	post(t, url, map[string]string{"X-Test-Principal": "alice", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"},
		`{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	var wg sync.WaitGroup
	got := make([]string, 2)
	for i, to := range []int{2, 4} {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = call(to) }()
	}
	wg.Wait()
	for i, to := range []int{2, 4} {
		other := 6 - to
		if !strings.Contains(got[i], fmt.Sprintf(`"total":%d`, to)) || strings.Contains(got[i], fmt.Sprintf(`"total":%d`, other)) ||
			!strings.Contains(got[i], `"progressToken":"t"`) || strings.Contains(got[i], `"aegis-p-`) || strings.Contains(got[i], `"id":"aegis-`) ||
			!strings.Contains(got[i], `"id":1,`) || !strings.Contains(got[i], fmt.Sprintf("counted to %d", to)) {
			t.Errorf("the stream of count to %d:\n%s", to, got[i])
		}
	}
}
