package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/proxy"
)

// stringsFlag collects a repeated flag.
type stringsFlag []string

func (s *stringsFlag) String() string     { return fmt.Sprint(*s) }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// stateDir is aegis's one state directory: $AEGIS_HOME, else the XDG state
// directory.
func stateDir() (string, error) {
	if d := os.Getenv("AEGIS_HOME"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "aegis"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory: set AEGIS_HOME (%v)", err)
	}
	return filepath.Join(home, ".local", "state", "aegis"), nil
}

// cmdRun wraps one stdio MCP server: every tools/call is decided, recorded
// and then forwarded or refused.
func cmdRun(argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	cfgPath := fs.String("config", "", "configuration `file` (default $AEGIS_HOME/aegis.yaml)")
	serverName := fs.String("server", "", "the configured `name` of the wrapped server (default: the only server in the configuration)")
	principal := fs.String("principal", "", "who the session acts for (default: the user running aegis)")
	var roles stringsFlag
	fs.Var(&roles, "role", "a `role` of the principal (repeatable)")
	originFlag := fs.String("origin", "interactive", "interactive (a person is at the client) or unattended (started by a trigger)")
	session := fs.String("session", "", "session `id` recorded in the chain (default: random)")
	if err := fs.Parse(argv); err != nil {
		return exitError{2}
	}
	if fs.NArg() == 0 {
		return usageError(stderr, "usage: aegis run [--config FILE] [--server NAME] -- COMMAND [ARG...]")
	}
	origin, err := parseOrigin(*originFlag)
	if err != nil {
		return usageError(stderr, "--origin: %v", err)
	}
	state, err := stateDir()
	if err != nil {
		return err
	}
	if *cfgPath == "" {
		*cfgPath = filepath.Join(state, "aegis.yaml")
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	eng, err := cfg.Engine()
	if err != nil {
		return err
	}
	name := *serverName
	if name == "" {
		if len(cfg.Servers) != 1 {
			return usageError(stderr, "the configuration has %d servers: say which one this is with --server", len(cfg.Servers))
		}
		name = cfg.Servers[0].Name
	}
	if eng.Server(name) == nil {
		return fmt.Errorf("%s: no server %q in the configuration", *cfgPath, name)
	}
	if *principal == "" {
		if u, err := user.Current(); err == nil {
			*principal = u.Username
		}
	}
	if *session == "" {
		var b [8]byte
		rand.Read(b[:])
		*session = hex.EncodeToString(b[:])
	}

	if err := os.MkdirAll(filepath.Join(state, "logs"), 0o700); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	log, err := chain.Open(filepath.Join(state, "chain", name), &chain.Options{Logger: logger})
	if err != nil {
		return fmt.Errorf("opening the chain: %w", err)
	}
	defer log.Close()

	g := &runGate{
		rec:     &gateway.Recorder{Engine: eng, Log: log},
		server:  name,
		session: *session, principal: *principal, roles: roles, origin: origin,
		logger: logger,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	err = proxy.Run(ctx, stdin, stdout, cmd, g, &proxy.Options{
		StderrLog: filepath.Join(state, "logs", name+".stderr.log"),
		Stderr:    stderr,
		Logger:    logger,
	})
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		fmt.Fprintf(stderr, "aegis: server %q exited: %v\n", name, err)
		return exitError{ee.ExitCode()}
	}
	return err
}

// runGate is the proxy's gate for one wrapped server: it decides each call
// with the engine and records it before the relay forwards anything.
type runGate struct {
	rec                        *gateway.Recorder
	server, session, principal string
	roles                      []string
	origin                     policy.Origin
	logger                     *slog.Logger

	mu      sync.Mutex
	schemas map[string][32]byte // tool → hash of its listed input schema
}

func (g *runGate) Call(ctx context.Context, c *proxy.Call) (proxy.Verdict, error) {
	g.mu.Lock()
	schema := g.schemas[c.Tool]
	g.mu.Unlock()
	v, err := g.rec.Call(ctx, &gateway.Call{
		Session:   g.session,
		Principal: g.principal,
		Roles:     g.roles,
		Origin:    g.origin,
		Taint:     g.origin == policy.Unattended,
		Server:    g.server,
		Tool:      c.Tool,
		Arguments: c.Arguments,
	}, schema)
	if err != nil {
		return proxy.Verdict{}, err
	}
	g.logger.Info("decision", "tool", c.Tool, "decision", v.Effect.String())
	switch v.Effect {
	case policy.Allow:
		return proxy.Verdict{Forward: true}, nil
	case policy.Ask:
		// Approvals (DESIGN.md R21) are not built yet: an ask cannot be
		// answered, so it is refused, saying so.
		return proxy.Verdict{Reason: "aegis: this call needs a person's approval, which this gateway cannot ask for yet: " + v.Reason()}, nil
	default:
		return proxy.Verdict{Reason: "aegis denied this call: " + v.Reason()}, nil
	}
}

// Tools records the hash of each listed tool's input schema, for the
// chain. The list is passed on unchanged.
func (g *runGate) Tools(ctx context.Context, tools []json.RawMessage) ([]json.RawMessage, error) {
	var doc args.Doc
	hashes := make(map[string][32]byte, len(tools))
	for _, t := range tools {
		if doc.Decode(t, nil) != nil {
			continue
		}
		name, ok := doc.Root().Lookup("name")
		if !ok || name.Kind() != args.String {
			continue
		}
		schema, ok := doc.Root().Lookup("inputSchema")
		if !ok {
			continue
		}
		canon := schema.AppendJSON(nil)
		h := sha256.New()
		h.Write([]byte("aegis.tool-schema.v1\x00"))
		h.Write(canon)
		hashes[name.Str()] = [32]byte(h.Sum(nil))
	}
	g.mu.Lock()
	if g.schemas == nil {
		g.schemas = make(map[string][32]byte)
	}
	for k, v := range hashes {
		g.schemas[k] = v
	}
	g.mu.Unlock()
	return tools, nil
}
