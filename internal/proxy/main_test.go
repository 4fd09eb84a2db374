package proxy

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/demoserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// childEnv names the role a re-executed test binary plays: the common trick
// for tests that need a real subprocess without building one.
const childEnv = "AEGIS_PROXY_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	flag.Parse()
	// A line used after its read buffer went back to the pool reads
	// poison; benchmarks measure the pool as it is.
	poisonReadBuffers = flag.Lookup("test.bench").Value.String() == ""
	os.Exit(m.Run())
}

// child returns a command that re-executes this test binary as role.
func child(role string, env ...string) *exec.Cmd {
	return childCtx(context.Background(), role, env...)
}

// childCtx is child, killed when ctx is done: a test passes t.Context(), so
// that no child outlives a failed test.
func childCtx(ctx context.Context, role string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+role), env...)
	return cmd
}

func runChild(role string) int {
	ctx := context.Background()
	switch role {
	case "demo":
		// The demo server, plus a tool that makes it crash; it logs each
		// call it receives to stderr if asked to.
		opts := &demoserver.Options{Root: os.Getenv("AEGIS_DEMO_ROOT")}
		if os.Getenv("AEGIS_DEMO_CALLLOG") != "" {
			opts.CallLog = os.Stderr
		}
		s, err := demoserver.New(opts)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		mcp.AddTool(s, &mcp.Tool{Name: "crash"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
		if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		return 0
	case "relay", "relay-blocking", "relay-oscalls":
		// aegis run -- demo, with a gate that allows everything; the
		// client's pipes reopened as aegis run does, or (relay-blocking)
		// read and written as inherited, each read a blocking read(2);
		// relay-oscalls reopens them but reads and writes every pipe with
		// the runtime's system calls rather than raw ones (see rawPipe).
		if path := os.Getenv("AEGIS_PROXY_TEST_CPUPROFILE"); path != "" {
			f, err := os.Create(path)
			if err == nil {
				pprof.StartCPUProfile(f)
				defer pprof.StopCPUProfile()
			}
		}
		var (
			in         io.Reader = os.Stdin
			out        io.Writer = os.Stdout
			closeStdio           = func() {}
		)
		if role == "relay-oscalls" {
			rawPipes = false
		}
		if role != "relay-blocking" {
			in, out, closeStdio = ClientStdio(os.Stdin, os.Stdout)
		}
		defer closeStdio()
		err := Run(ctx, in, out, child("demo"), allowGate{}, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case "copy":
		// A byte pump with no understanding at all, wrapping the demo
		// server: the floor for any process in the middle.
		cmd := child("demo")
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return 1
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return 1
		}
		if err := cmd.Start(); err != nil {
			return 1
		}
		go func() { io.Copy(in, os.Stdin); in.Close() }()
		io.Copy(os.Stdout, out)
		cmd.Wait()
		return 0
	case "stubborn":
		// A server that ignores both the end of its input and SIGTERM.
		signal.Ignore(syscall.SIGTERM)
		io.Copy(io.Discard, os.Stdin)
		for {
			time.Sleep(time.Hour)
		}
	case "deaf":
		// A server that reads nothing and ignores SIGTERM.
		signal.Ignore(syscall.SIGTERM)
		for {
			time.Sleep(time.Hour)
		}
	case "chatty":
		// A server that talks without end and reads nothing.
		for {
			if _, err := os.Stdout.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", 1000) + `"}}` + "\n"); err != nil {
				return 1
			}
		}
	case "silent-exit":
		// A server that says nothing and exits with status 0 at once.
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
	return 2
}
