package proxy

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runRelay runs Run in process, between pipes the returned client
// transport uses and the command given, and returns a channel with Run's
// result.
type running struct {
	client    mcp.Transport
	closeIn   func() // closes the client's side of aegis's stdin
	done      chan error
	stderr    *syncBuffer
	stderrLog string
}

func startRun(t *testing.T, ctx context.Context, cmd *exec.Cmd, gate Gate, o *Options) *running {
	t.Helper()
	return startRelay(t, o, func(stdin io.Reader, stdout io.Writer, o *Options) error {
		return Run(ctx, stdin, stdout, cmd, gate, o)
	})
}

// startBridge is startRun with the server a Bridge.
func startBridge(t *testing.T, ctx context.Context, b Bridge, gate Gate, o *Options) *running {
	t.Helper()
	return startRelay(t, o, func(stdin io.Reader, stdout io.Writer, o *Options) error {
		return RunBridge(ctx, stdin, stdout, b, gate, o)
	})
}

func startRelay(t *testing.T, o *Options, run func(io.Reader, io.Writer, *Options) error) *running {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	rn := &running{
		client:    &mcp.IOTransport{Reader: outR, Writer: inW},
		closeIn:   func() { inW.Close() },
		done:      make(chan error, 1),
		stderr:    &syncBuffer{},
		stderrLog: filepath.Join(t.TempDir(), "server.log"),
	}
	if o == nil {
		o = &Options{}
	}
	o.Stderr = rn.stderr
	o.StderrLog = rn.stderrLog
	o.Logger = testLogger(t)
	go func() {
		rn.done <- run(inR, outW, o)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
	})
	return rn
}

func (rn *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-rn.done:
		return err
	case <-time.After(failAfter):
		t.Fatal("Run did not return")
		return nil
	}
}

func demoRoot(t *testing.T) string {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello from notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestRunWrapsARealServer(t *testing.T) {
	ctx := context.Background()
	gate := &testGate{deny: map[string]string{"fetch": "denied by rule no-net"}}
	rn := startRun(t, ctx, childCtx(t.Context(), "demo", "AEGIS_DEMO_ROOT="+demoRoot(t), "AEGIS_DEMO_CALLLOG=1"), gate, nil)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, rn.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.txt"}})
	if err != nil || textOf(t, res) != "hello from notes" {
		t.Fatalf("read_file: %v %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fetch", Arguments: map[string]any{"url": "https://example.com"}})
	if err != nil || !res.IsError || textOf(t, res) != "denied by rule no-net" {
		t.Fatalf("fetch: %v %v", res, err)
	}
	// The client hangs up: the server's input is closed, it exits, Run
	// returns nil.
	cs.Close()
	if err := rn.wait(t); err != nil {
		t.Fatalf("Run = %v, want nil after the client closed", err)
	}
	// The server's stderr went to the log file and to aegis's stderr, and
	// shows that the refused call never reached the server.
	logged, err := os.ReadFile(rn.stderrLog)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{"log file": string(logged), "stderr": rn.stderr.String()} {
		if got != "demo-server: call read_file\n" {
			t.Errorf("%s = %q, want only the read_file call", name, got)
		}
	}
	if fi, err := os.Stat(rn.stderrLog); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("stderr log mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

func TestRunServerCrashMidCall(t *testing.T) {
	ctx := context.Background()
	rn := startRun(t, ctx, childCtx(t.Context(), "demo"), &testGate{}, nil)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, rn.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "exited (exit status 3) before answering") {
		t.Fatalf("CallTool(crash) = %v, want an error saying the server exited with status 3", err)
	}
	err = rn.wait(t)
	var exit *ServerExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || err.Error() != "proxy: the MCP server exited (exit status 3)" {
		t.Fatalf("Run = %v, want a *ServerExitError with code 3", err)
	}
}

func TestRunServerExitsOnItsOwn(t *testing.T) {
	rn := startRun(t, context.Background(), childCtx(t.Context(), "silent-exit"), &testGate{}, nil)
	err := rn.wait(t)
	var exit *ServerExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 0 {
		t.Fatalf("Run = %v, want a *ServerExitError with code 0: a server that leaves is an error", err)
	}
}

func TestRunTerminatesAServerThatWillNotExit(t *testing.T) {
	rn := startRun(t, context.Background(), childCtx(t.Context(), "stubborn"), &testGate{}, &Options{ShutdownGrace: 50 * time.Millisecond})
	rn.closeIn()
	if err := rn.wait(t); err != nil {
		t.Fatalf("Run = %v, want nil: the client ended the session", err)
	}
}

func TestRunContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	rn := startRun(t, ctx, childCtx(t.Context(), "stubborn"), &testGate{}, &Options{ShutdownGrace: 50 * time.Millisecond})
	cancel()
	if err := rn.wait(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}

func TestRunMisuse(t *testing.T) {
	ctx := context.Background()
	withStdin := exec.Command("true")
	withStdin.Stdin = strings.NewReader("")
	tests := []struct {
		name string
		cmd  *exec.Cmd
		gate Gate
		want string
	}{
		{name: "no gate", cmd: exec.Command("true"), want: "needs a Gate"},
		{name: "stdio taken", cmd: withStdin, gate: &testGate{}, want: "owns the server's stdin"},
		{name: "no such program", cmd: exec.Command(filepath.Join(t.TempDir(), "missing")), gate: &testGate{}, want: "starting the MCP server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Run(ctx, strings.NewReader(""), io.Discard, tt.cmd, tt.gate, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestRunStderrLogUnwritable(t *testing.T) {
	err := Run(context.Background(), strings.NewReader(""), io.Discard, childCtx(t.Context(), "demo"), &testGate{},
		&Options{StderrLog: filepath.Join(t.TempDir(), "no", "such", "dir", "log")})
	if err == nil || !strings.Contains(err.Error(), "stderr log") {
		t.Fatalf("Run = %v, want an error about the stderr log", err)
	}
}

func TestRunShutsDownADeafServer(t *testing.T) {
	// The relay is blocked writing a large call to a server that does not
	// read, and so stops reading its client (back-pressure, as without
	// aegis). When aegis is told to stop, Run still returns.
	ctx, cancel := context.WithCancel(context.Background())
	rn := startRun(t, ctx, childCtx(t.Context(), "deaf"), &testGate{}, &Options{ShutdownGrace: 50 * time.Millisecond})
	w := rn.client.(*mcp.IOTransport).Writer
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":"` + strings.Repeat("a", 1<<20) + `"}}}` + "\n"
	if _, err := io.WriteString(w, big); err != nil {
		t.Fatal(err)
	}
	go io.WriteString(w, `{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
	cancel()
	if err := rn.wait(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}

func TestRunClientThatStopsReading(t *testing.T) {
	// The server talks, the client never reads, then closes its input: Run
	// returns rather than waiting forever to deliver.
	rn := startRun(t, context.Background(), childCtx(t.Context(), "chatty"), &testGate{}, &Options{ShutdownGrace: 50 * time.Millisecond})
	rn.closeIn()
	if err := rn.wait(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
}

type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestRunClientOutputFails(t *testing.T) {
	// When the relay cannot write to the client, the session is over: the
	// server is shut down and Run says why.
	inR, inW := io.Pipe()
	defer inW.Close()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), inR, brokenWriter{}, childCtx(t.Context(), "demo"), &testGate{},
			&Options{ShutdownGrace: 50 * time.Millisecond, Logger: testLogger(t)})
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "writing to the client: broken pipe") {
			t.Fatalf("Run = %v, want an error about writing to the client", err)
		}
	case <-time.After(failAfter):
		t.Fatal("Run did not return")
	}
}
