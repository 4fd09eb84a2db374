package demoserver

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call is one tool call of a scripted session, or with Resource set, a
// resources/read of that URI.
type Call struct {
	Tool     string
	Args     map[string]any
	Resource string
}

// Drive runs one MCP session, as the official Go SDK client, with the
// server that cmd starts (for `aegis demo`, `aegis run` wrapping the demo
// server): it lists the tools, makes the calls, and says on out what came
// back, each call forwarded or refused, then what aegis said on stderr.
func Drive(ctx context.Context, cmd *exec.Cmd, calls []Call, out io.Writer) error {
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	var aegisSays strings.Builder
	cmd.Stderr = &aegisSays // aegis's warnings, and the demo server's log of each call it serves
	client := mcp.NewClient(&mcp.Implementation{Name: "aegis-demo-client", Version: "v1"}, nil)
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("connecting to aegis run: %w", err)
	}
	defer s.Close()
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	say("tools: %s\n", strings.Join(names, ", "))
	for _, c := range calls {
		if c.Resource != "" {
			say("read resource %s", c.Resource)
			res, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: c.Resource})
			if err != nil {
				// aegis answers a refused request of another method with a
				// JSON-RPC error, which the SDK returns as an error.
				say("  REFUSED:   %v\n", err)
				continue
			}
			var text []string
			for _, rc := range res.Contents {
				text = append(text, strings.TrimSpace(rc.Text))
			}
			say("  forwarded: %s\n", strings.Join(text, " "))
			continue
		}
		say("call %s %v", c.Tool, c.Args)
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: c.Tool, Arguments: c.Args})
		if err != nil {
			return err
		}
		var text []string
		for _, part := range res.Content {
			if t, ok := part.(*mcp.TextContent); ok {
				text = append(text, strings.TrimSpace(t.Text))
			}
		}
		verdict := "  forwarded: "
		if res.IsError {
			verdict = "  REFUSED:   "
		}
		say("%s%s\n", verdict, strings.Join(text, " "))
	}
	if err := s.Close(); err != nil {
		return err
	}
	for _, line := range strings.Split(aegisSays.String(), "\n") {
		if strings.HasPrefix(line, "aegis: ") {
			say("  (aegis on stderr) %s", line)
		}
	}
	return nil
}
