package demoserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func connect(t *testing.T, root string, log io.Writer) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	s, err := New(&Options{Root: root, CallLog: log})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

func TestTools(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("inside"), 0o600))
	must(t, os.Mkdir(filepath.Join(root, "sub"), 0o700))
	must(t, os.WriteFile(filepath.Join(root, "sub", "b.txt"), []byte("nested"), 0o600))
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o600))
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")))
	must(t, os.WriteFile(filepath.Join(root, "big"), bytes.Repeat([]byte("x"), maxFileBytes+1), 0o600))

	t.Setenv("HTTP_PROXY", "") // get connects directly
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/page", http.StatusFound)
			return
		}
		io.WriteString(w, "the page")
	}))
	defer web.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	log := &lockedBuffer{}
	cs := connect(t, root, log)
	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		want    string // substring of the text
		wantErr bool
	}{
		{name: "echo", tool: "echo", args: map[string]any{"text": "hi"}, want: "hi"},
		{name: "relative", tool: "read_file", args: map[string]any{"path": "a.txt"}, want: "inside"},
		{name: "nested", tool: "read_file", args: map[string]any{"path": "sub/b.txt"}, want: "nested"},
		{name: "absolute inside", tool: "read_file", args: map[string]any{"path": filepath.Join(root, "a.txt")}, want: "inside"},
		{name: "absolute outside", tool: "read_file", args: map[string]any{"path": filepath.Join(outside, "secret")}, wantErr: true},
		{name: "dot dot", tool: "read_file", args: map[string]any{"path": "../" + filepath.Base(outside) + "/secret"}, wantErr: true},
		{name: "symlink out", tool: "read_file", args: map[string]any{"path": "link"}, wantErr: true},
		{name: "too big", tool: "read_file", args: map[string]any{"path": "big"}, wantErr: true},
		{name: "missing", tool: "read_file", args: map[string]any{"path": "nope"}, wantErr: true},
		{name: "fetch describes", tool: "fetch", args: map[string]any{"url": "http://169.254.169.254/latest"}, want: "would GET http://169.254.169.254/latest"},
		{name: "fetch bad scheme", tool: "fetch", args: map[string]any{"url": "file:///etc/passwd"}, wantErr: true},
		{name: "get follows a redirect", tool: "get", args: map[string]any{"url": web.URL + "/moved"}, want: "GET " + web.URL + "/moved -> 302, to " + web.URL + "/page -> 200: the page"},
		{name: "get says it could not connect", tool: "get", args: map[string]any{"url": closed.URL}, want: "connection refused"},
		{name: "get https", tool: "get", args: map[string]any{"url": "https://example.com/"}, wantErr: true},
		{name: "get file", tool: "get", args: map[string]any{"url": "file:///etc/passwd"}, wantErr: true},
		{name: "count", tool: "count", args: map[string]any{"to": 2}, want: "counted to 2"},
		{name: "count out of range", tool: "count", args: map[string]any{"to": 1000}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if res.IsError != tt.wantErr || !strings.Contains(text, tt.want) {
				t.Fatalf("%s(%v) = %q (isError %v), want %q (isError %v)", tt.tool, tt.args, text, res.IsError, tt.want, tt.wantErr)
			}
			if strings.Contains(text, "SECRET") {
				t.Fatalf("read outside the root: %q", text)
			}
		})
	}
	if got := strings.Count(log.String(), "demo-server: call "); got != len(tests) {
		t.Errorf("call log has %d calls, want %d:\n%s", got, len(tests), log)
	}
}

// TestGetThroughProxy: with HTTP_PROXY set, get asks the proxy for every
// hop, a loopback URL's too, and never connects to the origin itself.
func TestGetThroughProxy(t *testing.T) {
	var origin, asked atomic.Int32
	web := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { origin.Add(1) }))
	defer web.Close()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, web.URL+"/denied", http.StatusFound)
			return
		}
		http.Error(w, "refused "+r.URL.Host, http.StatusForbidden)
	}))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	cs := connect(t, t.TempDir(), nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get", Arguments: map[string]any{"url": web.URL + "/moved"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "GET " + web.URL + "/moved -> 302, to " + web.URL + "/denied -> 403: refused " + strings.TrimPrefix(web.URL, "http://")
	if got := res.Content[0].(*mcp.TextContent).Text; got != want {
		t.Errorf("get = %q, want %q", got, want)
	}
	if origin.Load() != 0 || asked.Load() != 2 {
		t.Errorf("origin asked %d times, proxy %d; want 0 and 2", origin.Load(), asked.Load())
	}
}

func TestRunOverStdio(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), inR, outW, nil) }()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, `"serverInfo":{"name":"aegis-demo"`) {
		t.Errorf("initialize answered %q", line)
	}
	inW.Close() // Run serves until its input ends
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestConfirmElicitsAForm: the confirm tool's elicitation is a valid form
// (a requestedSchema that is a flat object), as the TypeScript SDK v2
// client requires, and the answer reaches the tool.
func TestConfirmElicitsAForm(t *testing.T) {
	ctx := context.Background()
	s, err := New(&Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	var asked *mcp.ElicitParams
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = req.Params
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"note": "fine"}}, nil
		},
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{"action": "deploy"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != `the user chose accept for "deploy"` {
		t.Errorf("confirm answered %q", got)
	}
	if asked == nil {
		t.Fatal("the client was not asked")
	}
	b, err := json.Marshal(asked.RequestedSchema)
	if err != nil {
		t.Fatal(err)
	}
	var sch struct {
		Type       string
		Properties map[string]struct{ Type string }
	}
	if err := json.Unmarshal(b, &sch); err != nil || sch.Type != "object" || len(sch.Properties) == 0 {
		t.Fatalf("requestedSchema %s: want an object with properties", b)
	}
	for name, p := range sch.Properties {
		switch p.Type {
		case "string", "number", "integer", "boolean":
		default:
			t.Errorf("property %q of type %q: a form's fields are primitive", name, p.Type)
		}
	}
}
