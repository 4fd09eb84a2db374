package proxy

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// twinRoot is a demo root whose notes.txt says it is the twin's.
func twinRoot(t *testing.T) string {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello from the twin"), 0o600); err != nil {
		t.Fatal(err)
	}
	return root
}

// twinOf returns an Options.Twin that starts role with env, and counts
// its starts and its dones.
func twinOf(t *testing.T, starts, dones *atomic.Int32, role string, env ...string) func() (*exec.Cmd, func(), error) {
	return func() (*exec.Cmd, func(), error) {
		starts.Add(1)
		return childCtx(t.Context(), role, env...), func() { dones.Add(1) }, nil
	}
}

// TestUnboundCallsRunInTheTwin: a call the gate marks unbound reaches the
// twin, never the server; its answer, progress included, reaches the
// client under the client's id; other calls reach the server; the twin is
// started once, on the first unbound call, and shut down with the server.
func TestUnboundCallsRunInTheTwin(t *testing.T) {
	ctx := context.Background()
	var starts, dones atomic.Int32
	gate := &testGate{unbound: map[string]bool{"read_file": true, "count": true}}
	o := &Options{Twin: twinOf(t, &starts, &dones, "demo", "AEGIS_DEMO_ROOT="+twinRoot(t))}
	rn := startRun(t, ctx, childCtx(t.Context(), "demo", "AEGIS_DEMO_ROOT="+demoRoot(t), "AEGIS_DEMO_CALLLOG=1"), gate, o)
	ev := newEvents()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, ev.clientOptions()).Connect(ctx, rn.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := starts.Load(); n != 0 {
		t.Fatalf("twin started %d times before any unbound call, want 0", n)
	}
	for range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.txt"}})
		if err != nil || res.IsError || textOf(t, res) != "hello from the twin" {
			t.Fatalf("unbound read_file: %v %v, want the twin's notes", res, err)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"to": 2}, Meta: mcp.Meta{"progressToken": "p1"}})
	if err != nil || res.IsError || textOf(t, res) != "counted to 2" {
		t.Fatalf("unbound count: %v %v", res, err)
	}
	for _, want := range []string{"step 1", "step 2"} {
		select {
		case got := <-ev.progress:
			if got != want {
				t.Errorf("progress = %q, want %q", got, want)
			}
		case <-time.After(failAfter):
			t.Fatalf("no progress %q from the twin", want)
		}
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || textOf(t, res) != "hi" {
		t.Fatalf("echo at the server: %v %v", res, err)
	}
	if n := starts.Load(); n != 1 {
		t.Errorf("twin started %d times, want once", n)
	}
	cs.Close()
	if err := rn.wait(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if n := dones.Load(); n != 1 {
		t.Errorf("twin's done called %d times, want once after it exited", n)
	}
	// The server's call log: echo only. The twin's calls were not its.
	if got := rn.stderr.String(); got != "demo-server: call echo\n" {
		t.Errorf("the server saw %q, want only the echo call", got)
	}
}

// TestUnboundRefusedWithoutTwin: an unbound call with no twin to run it,
// or a twin that cannot start, is refused, and the server never sees it.
func TestUnboundRefusedWithoutTwin(t *testing.T) {
	var starts, dones atomic.Int32
	for _, tt := range []struct {
		name string
		twin func() (*exec.Cmd, func(), error)
		want string
	}{
		{"no twin", nil, "no unbound twin of the server"},
		{"twin fails to start", func() (*exec.Cmd, func(), error) { return nil, nil, errors.New("no sandbox here") }, "could not start the server's unbound twin: no sandbox here"},
		{"twin exits at once", twinOf(t, &starts, &dones, "silent-exit"), "unbound twin"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			gate := &testGate{unbound: map[string]bool{"read_file": true}}
			rn := startRun(t, ctx, childCtx(t.Context(), "demo", "AEGIS_DEMO_ROOT="+demoRoot(t), "AEGIS_DEMO_CALLLOG=1"), gate, &Options{Twin: tt.twin})
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, rn.client, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.txt"}})
			switch {
			case err != nil:
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %v, want it to say %q", err, tt.want)
				}
			case !res.IsError || !strings.Contains(textOf(t, res), tt.want):
				t.Errorf("result %v, want a refusal saying %q", res, tt.want)
			}
			cs.Close()
			rn.wait(t)
			if got := rn.stderr.String(); got != "" {
				t.Errorf("the server saw %q, want nothing", got)
			}
		})
	}
}

// TestUnboundTimeout: a twin that does not answer is given up on after
// the call timeout, as the server would be.
func TestUnboundTimeout(t *testing.T) {
	ctx := context.Background()
	var starts, dones atomic.Int32
	gate := &testGate{unbound: map[string]bool{"read_file": true}}
	o := &Options{Twin: twinOf(t, &starts, &dones, "stubborn"), CallTimeout: 200 * time.Millisecond, ShutdownGrace: 50 * time.Millisecond}
	rn := startRun(t, ctx, childCtx(t.Context(), "demo", "AEGIS_DEMO_ROOT="+demoRoot(t)), gate, o)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, rn.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.txt"}})
	if err != nil || !res.IsError || !strings.Contains(textOf(t, res), "did not answer it within the call timeout") {
		t.Fatalf("read_file at a deaf twin: %v %v, want the timeout's tool error", res, err)
	}
	// The relay still serves: the next call at the server is answered.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || textOf(t, res) != "hi" {
		t.Fatalf("echo after the twin's timeout: %v %v", res, err)
	}
	cs.Close()
	if err := rn.wait(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if n := dones.Load(); n != 1 {
		t.Errorf("twin's done called %d times, want once", n)
	}
}

// TestUnboundPromptRunsInTheTwin: a request of another method that the
// gate marks unbound (a prompt that runs what an unbound tool runs) goes
// to the twin under its own method, never to the server.
func TestUnboundPromptRunsInTheTwin(t *testing.T) {
	ctx := context.Background()
	var starts, dones atomic.Int32
	gate := &testGate{unbound: map[string]bool{"prompts/get": true}}
	o := &Options{Twin: twinOf(t, &starts, &dones, "demo", "AEGIS_DEMO_ROOT="+twinRoot(t))}
	rn := startRun(t, ctx, childCtx(t.Context(), "demo", "AEGIS_DEMO_ROOT="+demoRoot(t)), gate, o)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, rn.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(res.Messages) == 0 {
		t.Fatalf("prompts/get in the twin: %v %v", res, err)
	}
	if n := starts.Load(); n != 1 {
		t.Errorf("twin started %d times, want once (the prompt went to it)", n)
	}
	cs.Close()
	rn.wait(t)
}
