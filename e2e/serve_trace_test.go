package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestServeTraces: with serve.otlp set, aegis serve sends its spans to an
// OTLP/HTTP collector (one on loopback here): a span per decision, naming
// the server, method, effect and rules and no argument, and a span per
// HTTP request with its status.
func TestServeTraces(t *testing.T) {
	var mu sync.Mutex
	var spans []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					var attrs []string
					for _, a := range sp.Attributes {
						attrs = append(attrs, a.Key+"="+a.Value.String())
					}
					spans = append(spans, sp.Name+" "+strings.Join(attrs, " "))
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(nil)
	}))
	defer collector.Close()

	dir := tempDir(t)
	cmd, _ := json.Marshal([]string{aegisBin, "demo-server", "--quiet", "--root", dir})
	for name, text := range map[string]string{
		"aegis.yaml":    strings.Replace(crashConfig, "    schema: off", "    schema: off\n    command: "+string(cmd), 1) + "serve:\n  otlp: " + collector.URL + "\n  auth: {none: alice}\n",
		"bindings.yaml": crashBindings, "policy.yaml": crashPolicy,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := startServe(t, baseEnv(dir, filepath.Join(dir, "state")), filepath.Join(dir, "aegis.yaml"), "demo")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "trace", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.urls["demo"]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "do-not-trace-this-argument"
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": secret}}); err != nil || res.IsError {
		t.Fatalf("echo: %v %+v", err, res)
	}
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}}) // no rule allows it
	cs.Close()
	s.stop(t) // flushes the spans
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(spans, "\n")
	for _, want := range []string{
		`aegis.decision aegis.server=string_value:"demo" mcp.method=string_value:"tools/call" aegis.effect=string_value:"allow" aegis.rules=array_value:{values:{string_value:"demo-tools"}}`,
		`aegis.effect=string_value:"deny"`,
		`POST /mcp/demo http.request.method=string_value:"POST"`,
		`http.response.status_code=int_value:200`,
	} {
		if !strings.Contains(strings.ReplaceAll(all, "  ", " "), want) {
			t.Errorf("no span holds %s; spans:\n%s", want, all)
		}
	}
	if strings.Contains(all, secret) {
		t.Errorf("a span holds an argument")
	}
}
