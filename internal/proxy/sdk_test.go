package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aegis-mcp/aegis/internal/demoserver"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// events collects what the client's handlers saw.
type events struct {
	progress chan string
	logs     chan string
	sampled  chan string
	elicited chan string
}

func newEvents() *events {
	return &events{progress: make(chan string, 100), logs: make(chan string, 100), sampled: make(chan string, 10), elicited: make(chan string, 10)}
}

func (e *events) clientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			e.progress <- r.Params.Message
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			e.logs <- fmt.Sprint(r.Params.Data)
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			q := r.Params.Messages[0].Content.(*mcp.TextContent).Text
			e.sampled <- q
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "42"}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			e.elicited <- r.Params.Message
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	}
}

// connectThroughRelay connects an SDK client to the demo server (in process)
// through a relay, over pipes, and returns the session and the server's call
// log. With gate nil the client is connected directly, for comparison.
func connectThroughRelay(t *testing.T, gate Gate, ev *events, version string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	calls := &syncBuffer{}
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello from notes"), 0o600)
	srv, err := demoserver.New(&demoserver.Options{Root: root, CallLog: calls})
	if err != nil {
		t.Fatal(err)
	}
	c2rR, c2rW := io.Pipe()
	r2cR, r2cW := io.Pipe()
	var serverT, clientT mcp.Transport
	var r *relay
	if gate == nil {
		serverT = &mcp.IOTransport{Reader: c2rR, Writer: r2cW}
	} else {
		r2sR, r2sW := io.Pipe()
		s2rR, s2rW := io.Pipe()
		serverT = &mcp.IOTransport{Reader: r2sR, Writer: s2rW}
		r = newRelay(ctx, r2cW, r2sW, gate, options{maxMsg: DefaultMaxMessageBytes, maxDepth: 256, maxReqs: 1024, log: testLogger(t)})
		go r.clientLoop(c2rR)
		go r.serverLoop(s2rR)
		t.Cleanup(func() { s2rW.Close(); r2sW.Close() })
	}
	clientT = &mcp.IOTransport{Reader: r2cR, Writer: c2rW}
	ss, err := srv.Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, ev.clientOptions())
	cs, err := client.Connect(ctx, clientT, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Close()
		cancel()
		c2rW.Close()
		r2cW.Close()
		if r != nil {
			r.gates.Wait()
		}
	})
	return cs, calls
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			t.Fatalf("content %T, want text", c)
		}
		parts = append(parts, tc.Text)
	}
	return strings.Join(parts, "|")
}

// sdkSession is one scripted session; it returns a transcript of what the
// client saw, so a session through the relay can be compared with a direct
// one.
func sdkSession(t *testing.T, ctx context.Context, cs *mcp.ClientSession, ev *events, classic bool) []string {
	t.Helper()
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	call := func(name string, args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
		if err != nil {
			t.Fatalf("CallTool(%s): %v", name, err)
		}
		return res
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	add("tools: %v", names)

	res := call("echo", map[string]any{"text": "héllo \u2028 \"quoted\""}, nil)
	add("echo: %s error=%v", textOf(t, res), res.IsError)
	res = call("read_file", map[string]any{"path": "notes.txt"}, nil)
	add("read_file: %s error=%v", textOf(t, res), res.IsError)
	res = call("fetch", map[string]any{"url": "https://example.com/x"}, nil)
	add("fetch: %s error=%v", textOf(t, res), res.IsError)

	// Progress and logging pass through.
	if classic {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
	}
	params := &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"to": 3}}
	params.SetProgressToken("tok-1")
	if !classic {
		params.Meta[mcp.MetaKeyLogLevel] = "info"
	}
	res, err = cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	add("count: %s", textOf(t, res))
	for range 3 {
		add("progress: %s", next(t, ev.progress, "progress"))
	}
	for range 3 {
		add("log: %s", next(t, ev.logs, "logs"))
	}

	// Sampling and elicitation: server→client requests (classic protocol) or
	// input requests answered in a retried call (the 2026 protocol).
	res = call("ask_model", map[string]any{"question": "meaning of life?"}, nil)
	add("ask_model: %s sampled=%s", textOf(t, res), next(t, ev.sampled, "sampling"))
	res = call("confirm", map[string]any{"action": "deploy"}, nil)
	add("confirm: %s elicited=%s", textOf(t, res), next(t, ev.elicited, "elicitation"))

	// Resources and prompts.
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://readme"})
	if err != nil {
		t.Fatal(err)
	}
	add("resource: %s", rr.Contents[0].Text)
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	add("prompt: %s", pr.Messages[0].Content.(*mcp.TextContent).Text)
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// A tool error from the server itself is relayed as it is.
	res = call("read_file", map[string]any{"path": "../../etc/passwd"}, nil)
	add("escape: error=%v", res.IsError)
	return out
}

func TestSDKSessionThroughRelayMatchesDirect(t *testing.T) {
	for _, version := range []string{"", "2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run("version="+version, func(t *testing.T) {
			classic := version != ""
			ctx := context.Background()
			evDirect := newEvents()
			direct, _ := connectThroughRelay(t, nil, evDirect, version)
			want := sdkSession(t, ctx, direct, evDirect, classic)

			gate := &testGate{}
			ev := newEvents()
			cs, calls := connectThroughRelay(t, gate, ev, version)
			got := sdkSession(t, ctx, cs, ev, classic)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("session through the relay differs from the direct one (-direct +relay)\n%s", diff)
			}
			var gated []string
			for _, c := range gate.seen() {
				if c.Method != "" { // a request of another method aegis decides
					gated = append(gated, c.Method)
					continue
				}
				gated = append(gated, c.Tool)
			}
			wantGated := []string{"echo", "read_file", "fetch", "count", "ask_model", "ask_model", "confirm", "confirm", "resources/read", "prompts/get", "read_file"}
			if classic { // the server asks during the call; no retried call
				wantGated = []string{"echo", "read_file", "fetch", "count", "ask_model", "confirm", "resources/read", "prompts/get", "read_file"}
			}
			if diff := cmp.Diff(wantGated, gated); diff != "" {
				t.Errorf("gated calls (-want +got)\n%s", diff)
			}
			if got, want := strings.Count(calls.String(), "demo-server: call "), len(wantGated)-2; got != want {
				t.Errorf("the server saw %d tool calls, want %d:\n%s", got, want, calls)
			}
		})
	}
}

func TestSDKRefusedCallNeverReachesServer(t *testing.T) {
	ctx := context.Background()
	gate := &testGate{deny: map[string]string{"read_file": "denied by rule no-secrets (policy.yaml:7): fs.read /home/a/.ssh/id_rsa"}}
	cs, calls := connectThroughRelay(t, gate, newEvents(), "")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/home/a/.ssh/id_rsa"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || textOf(t, res) != gate.deny["read_file"] {
		t.Errorf("refusal = %+v (%s), want isError with the gate's reason", res, textOf(t, res))
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}})
	if err != nil || textOf(t, res) != "after" {
		t.Fatalf("echo after a refusal: %v %v", res, err)
	}
	if got, want := calls.String(), "demo-server: call echo\n"; got != want {
		t.Errorf("server call log = %q, want %q", got, want)
	}
}

// toolHider hides tools by name and redacts one word from results.
type toolHider struct {
	testGate
	hide string
}

func (g *toolHider) Tools(_ context.Context, tools []json.RawMessage) ([]json.RawMessage, error) {
	var keep []json.RawMessage
	for _, raw := range tools {
		var tl struct{ Name string }
		if err := json.Unmarshal(raw, &tl); err != nil {
			return nil, err
		}
		if tl.Name != g.hide {
			keep = append(keep, raw)
		}
	}
	return keep, nil
}

func (g *toolHider) Result(_ context.Context, _ *Call, res json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(res, []byte("notes")) {
		return nil, nil
	}
	return bytes.ReplaceAll(res, []byte("notes"), []byte("[redacted]")), nil
}

func TestSDKCheckersThroughRelay(t *testing.T) {
	ctx := context.Background()
	cs, _ := connectThroughRelay(t, &toolHider{hide: "fetch"}, newEvents(), "")
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "fetch" {
			t.Errorf("fetch was not hidden")
		}
	}
	if len(tools.Tools) != 9 { // the demo server's 10 less fetch
		t.Errorf("%d tools listed, want 9", len(tools.Tools))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, res); got != "hello from [redacted]" {
		t.Errorf("result = %q, want it redacted", got)
	}
}
