package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/egressproxy"
	"github.com/aegis-mcp/aegis/internal/envelope"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/pin"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/proxy"
	"github.com/aegis-mcp/aegis/internal/sandbox"
	"github.com/aegis-mcp/aegis/internal/serve"
)

// stringsFlag collects a repeated flag.
type stringsFlag []string

func (s *stringsFlag) String() string     { return fmt.Sprint(*s) }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// stateDir is aegis's one state directory (config.DefaultState).
func stateDir() (string, error) {
	s, err := config.DefaultState()
	return string(s), err
}

// cmdRun wraps one stdio MCP server: every tools/call is decided, recorded
// and then forwarded or refused.
func cmdRun(argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	cfgPath := fs.String("config", "", "configuration `file` (default ~/.config/aegis/aegis.yaml, or $AEGIS_HOME/aegis.yaml when AEGIS_HOME is set)")
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
	origin, ok := capability.ParseOrigin(*originFlag)
	if !ok {
		return usageError(stderr, "--origin %q: want interactive or unattended", *originFlag)
	}
	state, err := config.DefaultState()
	if err != nil {
		return err
	}
	if *cfgPath == "" {
		*cfgPath = config.DefaultConfig(state)
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	if cfg.HomeDefaulted {
		// "~" in the policy and in arguments is this home: a server run
		// as another user, or for another home, needs home: set.
		fmt.Fprintf(stderr, "aegis: %s sets no home: \"~\" means %s, the home of the user running aegis\n", *cfgPath, cfg.Home)
	}
	name := *serverName
	if name == "" {
		if len(cfg.Servers) != 1 {
			return usageError(stderr, "the configuration has %d servers: say which one this is with --server", len(cfg.Servers))
		}
		name = cfg.Servers[0].Name
	}
	// A server that takes its allowed directories on its command line
	// resolves relative paths against them: so does aegis.
	var bases []string
	if wd, err := os.Getwd(); err == nil {
		bases = cfg.ServerArgs(name, fs.Args(), wd)
	}
	eng, err := cfg.Engine()
	if err != nil {
		return err
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

	if err := os.MkdirAll(state.Logs(), 0o700); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Another aegis may be recording this server (a second client or
	// agent session): this one takes the first lane free (chain.OpenLane).
	chainRoot := state.Chains()
	log, ln, err := chain.OpenLane(chainRoot, name, &chain.Options{Logger: logger})
	if err != nil {
		return fmt.Errorf("opening the chain: %w", err)
	}
	defer log.Close()
	if ln.N > 1 {
		fmt.Fprintf(stderr, "aegis: another aegis is recording server %q: this one records in lane %d of its chain (%s)\n", name, ln.N, ln.Dir)
	}
	// A lane an earlier aegis crashed in, and nobody has opened since, is
	// signed now.
	if err := chain.TidyLanes(chainRoot, name, ln, &chain.Options{Logger: logger}); err != nil {
		warnEach(stderr, err)
	}

	pins, err := pin.Open(state.PinFile(name))
	if err != nil {
		return err
	}
	// A call the policy asks about waits for a person, who answers with
	// `aegis approvals` from another terminal (R21).
	approvals, err := openApprovals(cfg, state)
	if err != nil {
		return err
	}
	defer approvals.Close()
	lane := ""
	if ln.N > 1 {
		lane = strconv.Itoa(ln.N)
	}
	// The person at the client is asked too, if the client can be
	// (elicitation): whichever channel answers first decides.
	elicitor := proxy.NewElicitor(approvals, *principal)
	sc := &gateway.SessionConfig{
		Server: name, ID: *session, Principal: *principal, Roles: roles, Origin: origin,
		Pins: pins, Log: log, Logger: logger, Notify: stderr,
		Approvals: &gateway.Approvals{Store: approvals, Timeout: cfg.ApprovalTimeout, Lane: lane, Asked: elicitor.Ask},
	}
	if cfg.Envelopes {
		envs, err := envelope.Open(state.Envelopes(name), cfg.EnvelopeRetention)
		if err != nil {
			return err
		}
		defer envs.Close()
		sc.Envelopes = envs
	}
	sess, err := eng.NewSession(sc)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := launch(name, cfg, eng, sess, fs.Args(), bases, stderr)
	if err != nil {
		return err
	}
	defer srv.close()
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
	err = srv.run(ctx, stdin, stdout, proxy.SessionGate(sess), &proxy.Options{
		MaxMessageBytes: int(relay.MaxMessageBytes),
		MaxInFlight:     relay.MaxInFlight,
		CallTimeout:     relay.CallTimeout,
		StderrLog:       state.StderrLog(name),
		StderrLogBytes:  relay.StderrLogBytes,
		Stderr:          stderr,
		Logger:          logger,
		Twin:            srv.twin,
		Elicitor:        elicitor,
	})
	// The server's own exit status is aegis's, so that the client sees
	// how its server ended.
	var ee *proxy.ServerExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		fmt.Fprintf(stderr, "aegis: server %q exited: %v\n", name, err)
		return exitError{ee.ExitCode()}
	}
	return err
}

// launched is a server ready to start: its command (sandboxed, as the
// configuration says), its unbound twin if it has one, and what to close
// once it has exited (its sandbox, its egress proxy).
type launched struct {
	cmd     *exec.Cmd
	bridge  proxy.Bridge // in place of cmd, for a server at a URL
	twin    func() (*exec.Cmd, func(), error)
	closers []func()
}

// run relays between the client on stdin and stdout and the server.
func (l *launched) run(ctx context.Context, stdin io.Reader, stdout io.Writer, gate proxy.Gate, o *proxy.Options) error {
	if l.bridge != nil {
		return proxy.RunBridge(ctx, stdin, stdout, l.bridge, gate, o)
	}
	return proxy.Run(ctx, stdin, stdout, l.cmd, gate, o)
}

func (l *launched) close() {
	for i := len(l.closers) - 1; i >= 0; i-- {
		l.closers[i]()
	}
	l.closers = nil
}

// launch makes server name's command line argv ready to run under
// session sess: in the sandbox the policy allows, with the egress proxy
// that decides its connections in sess's name. bases are the directories
// the server takes on its command line.
func launch(name string, cfg *config.Config, eng *gateway.Engine, sess *gateway.Session, argv, bases []string, stderr io.Writer) (*launched, error) {
	relay := cfg.Relay[name]
	if relay.URL != "" {
		return remote(name, relay)
	}
	l := &launched{cmd: exec.Command(argv[0], argv[1:]...)}
	ok := false
	defer func() {
		if !ok {
			l.close()
		}
	}()
	if relay.Sandbox != sandbox.Off && cfg.Policy.Mode() == policy.Shadow {
		// A shadow policy enforces nothing (every call goes through): a
		// sandbox built from it would enforce what it only reports.
		if relay.Sandbox == sandbox.Required {
			return nil, fmt.Errorf("server %q: sandbox: required, but the policy is in shadow mode, which enforces nothing to build a sandbox from", name)
		}
		fmt.Fprintf(stderr, "aegis: server %q: no sandbox: the policy is in shadow mode\n", name)
		relay.Sandbox = sandbox.Off
	}
	// The kernel holds the server to what the policy could allow (R29):
	// the trees any rule could grant it, with aegis's own paths and the
	// unconditional denials hidden.
	reach := cfg.Policy.FileReach(name)
	// aegis's own files are hidden, but for its executable, which a server
	// may be (the demo server) or run: read-only.
	masked, readOnly := sandboxProtected(cfg.Protected)
	spec := &sandbox.Spec{
		Mode: relay.Sandbox,
		Read: reach.Read, Write: reach.Write,
		// The server's own allowed directories, which it walks.
		List:     bases,
		Masked:   append(reach.Masked, masked...),
		ReadOnly: append(reach.ReadOnly, readOnly...), Conditional: reach.Conditional,
		Env: relay.Env,
		// The server's one way out: aegis's egress proxy, which decides
		// each connection at dial time.
		Network: sandbox.ProxyNetwork,
	}
	if relay.Sandbox != sandbox.Off {
		// The proxy is made first: the server is to trust its CA, which
		// intercepts the TLS of its https credentials' hosts. The runtime's
		// hosts are the sandbox's, known once it is built and before the
		// proxy serves.
		var runtimeHosts []string
		ep, err := egressProxy(name, eng.Server(name), sess, relay.Credentials, func() []string { return runtimeHosts }, stderr)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		l.closers = append(l.closers, func() { ep.Close() })
		spec.CACert = ep.CACert()
		cmd, sb, err := sandbox.Command(spec, argv)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		l.cmd = cmd
		l.closers = append(l.closers, func() { sb.Close() })
		rep := sb.Report()
		runtimeHosts = rep.RuntimeHosts
		fmt.Fprintf(stderr, "aegis: server %q sandbox: %s\n", name, rep.String())
		if ln := sb.Listener(); ln != nil {
			if hosts := credentialHosts(relay.Credentials); len(hosts) > 0 {
				fmt.Fprintf(stderr, "aegis: server %q egress: the proxy sets credentials for %s (https through this run's CA, which the server trusts for those hosts only)\n", name, strings.Join(hosts, ", "))
			}
			go ep.Serve(ln)
		}
	}
	if unboundTools(eng.Server(name)) {
		// The tools marked unbound run in a second instance of the server
		// with no file or network authority at all (R29), whatever the
		// server's own sandbox setting: started on the first such call.
		l.twin = unboundTwin(name, spec.Unbound(), argv, stderr)
	}
	ok = true
	return l, nil
}

// remote is a server at a URL: aegis's own bridge (serve.Remote) in
// place of its process, in aegis's process. There is no process of the
// server's here to confine; the bridge presents the token bearer_env
// names, and nothing of the client's.
func remote(name string, relay config.Relay) (*launched, error) {
	header := http.Header{}
	if relay.BearerEnv != "" {
		token := os.Getenv(relay.BearerEnv)
		if token == "" {
			return nil, fmt.Errorf("server %q: bearer_env %s is not set", name, relay.BearerEnv)
		}
		header.Set("Authorization", "Bearer "+token)
	}
	r := serve.Remote{URL: relay.URL, Client: upstreamClient, Header: header, MaxMessage: int(relay.MaxMessageBytes)}
	return &launched{bridge: r.Bridge}, nil
}

// upstreamClient is the HTTP client of every bridge: the sessions of a
// server at a URL share its connections. It takes no proxy from the
// environment: the server is at the URL the configuration chose.
var upstreamClient = &http.Client{Transport: &http.Transport{
	Proxy:               nil,
	MaxIdleConnsPerHost: 256,
	IdleConnTimeout:     90 * time.Second,
}}

// unboundTools reports whether any tool of srv runs unbound.
func unboundTools(srv *gateway.Server) bool {
	for _, t := range srv.Tools {
		if t != nil && t.RunUnbound {
			return true
		}
	}
	return false
}

// unboundTwin returns what starts the server's unbound twin in spec, a
// sandbox that must apply whole: said on stderr, as the server's is.
func unboundTwin(name string, spec *sandbox.Spec, argv []string, stderr io.Writer) func() (*exec.Cmd, func(), error) {
	return func() (*exec.Cmd, func(), error) {
		cmd, sb, err := sandbox.Command(spec, argv)
		if err != nil {
			fmt.Fprintf(stderr, "aegis: server %q: no unbound twin: %v\n", name, err)
			return nil, nil, err
		}
		rep := sb.Report()
		fmt.Fprintf(stderr, "aegis: server %q unbound twin sandbox: %s\n", name, rep.String())
		return cmd, func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if _, err := sb.Ready(ctx); err != nil {
				fmt.Fprintf(stderr, "aegis: server %q: unbound twin: %v\n", name, err)
			}
			sb.Close()
		}, nil
	}
}

// sandboxProtected splits aegis's protected paths for the sandbox: the
// executable (in every form) is mounted read-only, so that a server may
// be or run aegis but not replace it; everything else is hidden.
func sandboxProtected(protected []string) (masked, readOnly []string) {
	exe := map[string]bool{}
	if p, err := os.Executable(); err == nil {
		exe[p] = true
		if r, err := filepath.EvalSymlinks(p); err == nil {
			exe[r] = true
		}
	}
	for _, p := range protected {
		if exe[p] {
			readOnly = append(readOnly, p)
		} else {
			masked = append(masked, p)
		}
	}
	return masked, readOnly
}

// egressProxy is the egress proxy of a sandboxed server: each connection
// the server makes through it is decided as the server's own action
// (gateway.MethodConnect) and recorded, then dialled by the server's
// egress gate, which resolves the name once and connects only to a
// checked address. A refused connection is said on stderr.
func egressProxy(name string, srv *gateway.Server, sess *gateway.Session, creds []egressproxy.Credential, runtimeHosts func() []string, stderr io.Writer) (*egressproxy.Proxy, error) {
	return egressproxy.New(&egressproxy.Config{
		Checker: srv.Egress,
		Decide: func(ctx context.Context, c capability.Capability) (bool, string) {
			// The registry a package runner fetches the server from, over
			// TLS: the program's runtime, as its files are (recorded).
			if c.Port == 443 && slices.Contains(runtimeHosts(), c.Host) {
				if err := sess.ConnectRuntime(ctx, c, "the server's program fetches the server from its registry"); err != nil {
					return false, "aegis could not record the decision"
				}
				return true, ""
			}
			o, err := sess.Connect(ctx, c)
			if err != nil {
				return false, "aegis could not record the decision"
			}
			return o.Forward, o.Reason
		},
		OnRefuse: func(r egressproxy.Refusal) {
			fmt.Fprintf(stderr, "aegis: server %q: egress refused %s (%s): %s\n", name, r.Target, r.Stage, r.Reason)
			// The policy's refusals are in the chain already (Connect);
			// one of the gate at dial time follows the policy's allow.
			if r.Stage == egressproxy.Egress {
				if err := sess.ConnectRefused(context.Background(), r.Capability, r.Reason); err != nil {
					fmt.Fprintf(stderr, "aegis: server %q: %v\n", name, err)
				}
			}
		},
		Credentials: creds,
	})
}

// credentialHosts names the credentials' targets for the log, once each:
// scheme, host and port, never a value.
func credentialHosts(creds []egressproxy.Credential) []string {
	var out []string
	for _, c := range creds {
		scheme, port := c.Scheme, c.Port
		if scheme == "" {
			scheme = "https"
		}
		if port == 0 {
			port = 443
			if scheme == "http" {
				port = 80
			}
		}
		h := scheme + "://" + net.JoinHostPort(c.Host, strconv.Itoa(int(port)))
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}
