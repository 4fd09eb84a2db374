package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/aegis-mcp/aegis/internal/demoserver"
)

// cmdDemoServer serves the bundled demo MCP server on stdin and stdout. It
// is the server `aegis demo` wraps, and a small real server to try aegis on.
func cmdDemoServer(argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("demo-server", stderr)
	root := fs.String("root", ".", "the `directory` read_file serves")
	updated := fs.Bool("updated", false, "serve a later version whose read_file takes one more argument (to show tool pinning)")
	quiet := fs.Bool("quiet", false, "write no line to stderr per tool call")
	defaultPath := fs.String("default-path", "", "add a tool read_default whose path argument defaults to `PATH` (to show schema defaults)")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 0 {
		return usageError(stderr, "usage: aegis demo-server [--root DIR] [--updated] [--quiet] [--default-path PATH]")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := &demoserver.Options{Root: *root, CallLog: stderr, Updated: *updated, DefaultPath: *defaultPath}
	if *quiet {
		opts.CallLog = nil
	}
	return demoserver.Run(ctx, stdin, stdout, opts)
}
