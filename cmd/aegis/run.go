package main

import (
	"bytes"
	"context"
	"crypto/rand"
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
	"time"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/envelope"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/pin"
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
	// Another aegis may be recording this server (a second client or
	// agent session): this one takes the first lane free (lanes.go).
	chainRoot := filepath.Join(state, "chain")
	log, ln, err := openLane(chainRoot, name, chain.Options{Logger: logger})
	if err != nil {
		return fmt.Errorf("opening the chain: %w", err)
	}
	defer log.Close()
	if ln.n > 1 {
		fmt.Fprintf(stderr, "aegis: another aegis is recording server %q: this one records in lane %d of its chain (%s)\n", name, ln.n, ln.dir)
	}
	// A lane an earlier aegis crashed in, and nobody has opened since, is
	// signed now.
	tidyLanes(chainRoot, name, ln, chain.Options{Logger: logger}, stderr)

	pins, err := pin.Open(filepath.Join(state, "pins", name+".json"))
	if err != nil {
		return err
	}
	eng.OpenSession(*session, origin)
	rec := &gateway.Recorder{Engine: eng, Log: log}
	if cfg.Envelopes {
		envs, err := envelope.Open(filepath.Join(state, "envelopes", name), cfg.EnvelopeRetention)
		if err != nil {
			return err
		}
		defer envs.Close()
		rec.Envelopes = envs
		rec.Redact = redactEnvelope
	}
	g := &runGate{
		rec:     rec,
		pins:    pins,
		schemas: map[pin.Digest][]byte{},
		stderr:  stderr,
		server:  name,
		session: *session, principal: *principal, roles: roles, origin: origin,
		logger: logger,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	if in, ok := stdin.(*os.File); ok {
		if out, ok := stdout.(*os.File); ok {
			// The client's pipes or sockets, waited for by Go's poller
			// rather than by a thread blocked in read(2).
			var closeStdio func()
			stdin, stdout, closeStdio = proxy.ClientStdio(in, out)
			defer closeStdio()
		}
	}
	relay := cfg.Relay[name]
	err = proxy.Run(ctx, stdin, stdout, cmd, g, &proxy.Options{
		MaxMessageBytes: int(relay.MaxMessageBytes),
		StderrLog:       filepath.Join(state, "logs", name+".stderr.log"),
		StderrLogBytes:  relay.StderrLogBytes,
		Stderr:          stderr,
		Logger:          logger,
	})
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		fmt.Fprintf(stderr, "aegis: server %q exited: %v\n", name, err)
		return exitError{ee.ExitCode()}
	}
	return err
}

// redactEnvelope takes every secret DLP finds out of arguments before they
// enter an envelope, whatever the server's DLP actions say: an envelope
// keeps what a call carried, never a secret. Arguments aegis cannot read
// are kept out whole. Arguments in which DLP finds nothing, most of them,
// are kept as they are rather than re-encoded: the same JSON value, as
// forwarded (TestRedactEnvelopeFastPath holds this to the re-encoding).
func redactEnvelope(a []byte) ([]byte, []envelope.Redaction) {
	if found, ok := hasFindings(a); ok && !found {
		return a, nil
	}
	return redactAll(a)
}

// redactAll is redactEnvelope without its fast path: the arguments
// re-encoded by dlp.RedactJSON, secrets taken out.
func redactAll(a []byte) ([]byte, []envelope.Redaction) {
	out, found, err := dlp.RedactJSON(a, nil, nil)
	if err != nil {
		return []byte(`"(arguments aegis could not read are not kept)"`), nil
	}
	reds := make([]envelope.Redaction, 0, len(found))
	for _, f := range found {
		reds = append(reds, envelope.Redaction{Pointer: f.Pointer, Kind: string(f.Kind)})
	}
	return out, reds
}

// runGate is the proxy's gate for one wrapped server: it decides each call
// with the engine and records it before the relay forwards anything.
type runGate struct {
	rec                        *gateway.Recorder
	server, session, principal string
	roles                      []string
	origin                     capability.Origin
	pins                       *pin.Store
	logger                     *slog.Logger
	stderr                     io.Writer

	mu      sync.Mutex
	schemas map[pin.Digest][]byte // input schemas by pinned definition

	// mem lends each call's check its storage (gateway.CallMem), taken
	// back when Call returns: what Call returns is copied out of it.
	mem sync.Pool
}

// ruleHeld is the rule id recorded for a call to a held tool.
const ruleHeld = "aegis:pin"

func (g *runGate) Call(ctx context.Context, c *proxy.Call) (proxy.Verdict, error) {
	call := &gateway.Call{
		Session:   g.session,
		Principal: g.principal,
		Roles:     g.roles,
		Origin:    g.origin,
		Taint:     g.origin == capability.Unattended,
		Server:    g.server,
		Tool:      c.Tool,
		Arguments: c.Arguments,
	}
	var schema [32]byte
	p, pinned, err := g.pins.Lookup(c.Tool)
	switch {
	case err != nil:
		// Pins aegis cannot read cannot say the tool is the approved one.
		g.logger.Error("reading the pins", "err", err)
		call.Refuse = &gateway.Refusal{Rule: ruleHeld, Err: errors.New("the pinned tool definitions cannot be read")}
	case pinned && p.Held():
		call.Refuse = &gateway.Refusal{Rule: ruleHeld, Err: fmt.Errorf("tool %q changed its input schema since it was pinned and is held until a person accepts the change", c.Tool)}
		schema = p.Pending.Full
	case pinned:
		schema = p.Full
		call.SchemaKey = p.Full
		call.Schema, err = g.inputSchema(p)
		if err != nil {
			call.Refuse = &gateway.Refusal{Rule: gateway.RuleSchema, Err: err}
		}
	case !g.rec.Engine.Server(g.server).SchemaOff:
		// The closed schema is the one the server listed: a tool the
		// client calls without its having been listed has none.
		call.Refuse = &gateway.Refusal{Rule: gateway.RuleSchema, Err: fmt.Errorf("tool %q was never listed by the server, so its arguments cannot be checked against its schema", c.Tool)}
	}
	m, _ := g.mem.Get().(*gateway.CallMem)
	if m == nil {
		m = new(gateway.CallMem)
	}
	defer g.mem.Put(m)
	v, err := g.rec.CallWith(ctx, call, schema, m)
	if err != nil {
		return proxy.Verdict{}, err
	}
	if g.logger.Enabled(ctx, slog.LevelInfo) { // off by default: build the record only when logged
		g.logger.Info("decision", "tool", c.Tool, "decision", v.Effect.String())
	}
	switch v.Effect {
	case policy.Allow:
		out := proxy.Verdict{Forward: true}
		if !bytes.Equal(v.Arguments, c.Arguments) {
			// Shaped (pinned fields, identity, neutralised templates), in
			// m, which the next call reuses: copied out.
			out.Arguments = bytes.Clone(v.Arguments)
		}
		return out, nil
	case policy.Ask:
		// Approvals (DESIGN.md R21) are not built yet: an ask cannot be
		// answered, so it is refused, saying so.
		return proxy.Verdict{Reason: "aegis: this call needs a person's approval, which this gateway cannot ask for yet: " + v.Reason()}, nil
	default:
		return proxy.Verdict{Reason: "aegis denied this call: " + v.Reason()}, nil
	}
}

// inputSchema returns the input schema of a pinned definition, parsed
// once per definition.
func (g *runGate) inputSchema(p pin.Pin) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s, ok := g.schemas[p.Full]; ok {
		return s, nil
	}
	d, err := pin.Parse(p.Def)
	if err != nil {
		return nil, fmt.Errorf("the pinned definition: %w", err)
	}
	s := d.InputSchema
	if s == nil {
		s = []byte(`{"type":"object"}`) // no schema listed: no arguments
	}
	if len(g.schemas) > 4096 {
		clear(g.schemas)
	}
	g.schemas[p.Full] = s
	return s, nil
}

// Result takes in the result of a call aegis let through: ids for
// provenance, taint from an untrusted tool, secrets redacted or the result
// withheld (DLP). One aegis cannot read yields no ids (so calls naming them
// fail closed) and, when the server's results are scanned, is withheld.
func (g *runGate) Result(ctx context.Context, c *proxy.Call, result json.RawMessage) (json.RawMessage, error) {
	out, found, err := g.rec.Engine.Result(&gateway.ResultEvent{Session: g.session, Server: g.server, Tool: c.Tool, Result: result})
	var refusal *gateway.Refusal
	withheld := errors.As(err, &refusal)
	// Findings enter the chain, by kind and location; a result whose
	// findings cannot be recorded is withheld.
	call := &gateway.Call{Session: g.session, Principal: g.principal, Roles: g.roles, Origin: g.origin, Server: g.server, Tool: c.Tool}
	if rerr := g.rec.Result(ctx, call, found, withheld); rerr != nil {
		g.logger.Error("recording a result", "tool", c.Tool, "err", rerr)
		return nil, &proxy.Withheld{Reason: "its findings could not be recorded"}
	}
	switch {
	case withheld:
		fmt.Fprintf(g.stderr, "aegis: withheld a result of %s/%s: %v\n", g.server, c.Tool, err)
		return nil, &proxy.Withheld{Reason: err.Error()}
	case err != nil:
		g.logger.Warn("reading a result", "tool", c.Tool, "err", err)
	}
	if len(found) > 0 {
		g.logger.Warn("secrets in a result", "tool", c.Tool, "findings", len(found), "redacted", out != nil)
	}
	if out != nil {
		return out, nil
	}
	return nil, nil
}

// Tools pins the listed tools (package pin) and passes on the tools the
// client may see: a held tool, a definition aegis cannot read, and (with
// hide_unallowed) a tool no rule could allow are left out. The list is
// passed on byte for byte when nothing is left out.
func (g *runGate) Tools(ctx context.Context, tools []json.RawMessage) ([]json.RawMessage, error) {
	eng := g.rec.Engine
	srv := eng.Server(g.server)
	defs := make([]*pin.Def, 0, len(tools))
	keep := make([]bool, len(tools))
	at := make([]int, 0, len(tools)) // tools index of each def
	for i, t := range tools {
		d, err := pin.Parse(t)
		if err != nil {
			fmt.Fprintf(g.stderr, "aegis: server %q listed a tool aegis cannot read; it is hidden: %v\n", g.server, err)
			continue
		}
		defs = append(defs, d)
		at = append(at, i)
	}
	status, err := g.pins.Observe(defs, time.Now())
	if err != nil {
		return nil, fmt.Errorf("pinning the tools: %w", err)
	}
	hidden := len(defs) < len(tools)
	for j, d := range defs {
		switch status[j] {
		case pin.Held:
			fmt.Fprintf(g.stderr, "aegis: tool %q of server %q changed its input schema since it was pinned; it is hidden and refused until you accept it: aegis pins accept --server %s %s\n", d.Name, g.server, g.server, d.Name)
			hidden = true
			continue
		case pin.New:
			g.logger.Info("tool pinned", "tool", d.Name)
		case pin.Described:
			g.logger.Warn("tool description changed; the new one is pinned", "tool", d.Name)
		}
		if srv.HideUnallowed && !eng.Policy().MayAllow(&policy.Request{
			Server: g.server, Tool: d.Name, Principal: g.principal, Roles: g.roles,
			Bound: srv.Bindings[d.Name] != nil,
		}) {
			hidden = true
			continue
		}
		keep[at[j]] = true
	}
	if !hidden {
		return tools, nil
	}
	out := make([]json.RawMessage, 0, len(tools))
	for i, t := range tools {
		if keep[i] {
			out = append(out, t)
		}
	}
	return out, nil
}
