package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/aegis-mcp/aegis/internal/proxy"
)

// denyShell is a Gate that refuses one tool and lets every other call
// through.
type denyShell struct{}

func (denyShell) Call(_ context.Context, c *proxy.Call) (proxy.Verdict, error) {
	if c.Tool == "run_shell" {
		return proxy.Verdict{Reason: "denied by rule no-shell (policy.yaml:4)"}, nil
	}
	return proxy.Verdict{Forward: true}, nil
}

// Wrapping a stdio MCP server, as `aegis run -- CMD ARGS…` does.
func ExampleRun() {
	cmd := exec.Command("npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/shared")
	err := proxy.Run(context.Background(), os.Stdin, os.Stdout, cmd, denyShell{}, &proxy.Options{
		StderrLog: "/var/log/aegis/filesystem.log",
	})
	var exit *proxy.ServerExitError
	switch {
	case errors.As(err, &exit):
		fmt.Fprintln(os.Stderr, err)
		os.Exit(max(exit.ExitCode(), 1))
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
