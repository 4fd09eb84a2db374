package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aegis-mcp/aegis/internal/approval"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/envelope"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/pin"
	"github.com/aegis-mcp/aegis/internal/proxy"
	"github.com/aegis-mcp/aegis/internal/serve"
	"github.com/aegis-mcp/aegis/internal/sharedstate"
)

// shutdownGrace is how long aegis serve lets the calls in flight finish
// once told to stop.
const shutdownGrace = 30 * time.Second

// cmdServe serves the configured servers over MCP Streamable HTTP, one
// path per server, each session its own relay and server instance.
func cmdServe(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	cfgPath := fs.String("config", "", "configuration `file` (default ~/.config/aegis/aegis.yaml, or $AEGIS_HOME/aegis.yaml when AEGIS_HOME is set)")
	listen := fs.String("listen", "", "`address` to listen on (default: the configuration's serve.listen, else "+config.DefaultListen+")")
	if err := fs.Parse(argv); err != nil {
		return exitError{2}
	}
	if fs.NArg() != 0 {
		return usageError(stderr, "usage: aegis serve [--config FILE] [--listen ADDR]")
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
	if cfg.Serve == nil {
		return fmt.Errorf("%s: no serve: section: aegis serve needs one saying who may call (docs/config.md, \"aegis serve\")", *cfgPath)
	}
	var names []string
	bases := map[string][]string{}
	wd, _ := os.Getwd()
	for _, s := range cfg.Servers {
		if cmd := cfg.Relay[s.Name].Command; len(cmd) > 0 {
			names = append(names, s.Name)
			// A server that takes its allowed directories on its
			// command line resolves relative paths against them.
			bases[s.Name] = cfg.ServerArgs(s.Name, cmd, wd)
		} else if cfg.Relay[s.Name].URL != "" {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("%s: no server has a command: aegis serve starts each server it serves from its command: [...], or reaches it at its url:", *cfgPath)
	}
	sort.Strings(names)
	eng, err := cfg.Engine()
	if err != nil {
		return err
	}
	who, err := authenticator(context.Background(), cfg.Serve)
	if err != nil {
		return err
	}
	addr := *listen
	if addr == "" {
		addr = cfg.Serve.Listen
	}
	if cfg.Serve.Auth.None != "" && !config.LoopbackListen(addr) {
		return fmt.Errorf("%s: serve: auth: none: only on a loopback address, not %q: anyone who reaches it would act as %q", *cfgPath, addr, cfg.Serve.Auth.None)
	}
	if err := os.MkdirAll(state.Logs(), 0o700); err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	approvals, err := openApprovals(cfg, state)
	if err != nil {
		return err
	}
	defer approvals.Close()
	if cfg.StatePostgres != "" {
		// A principal's stateless requests reach any replica: its caps
		// are counted where every replica counts them.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		caps, err := sharedstate.OpenCaps(ctx, cfg.StatePostgres, nil)
		cancel()
		if err != nil {
			return err
		}
		defer caps.Close()
		eng.ShareCaps(caps)
		// And what a session read and was shown (taint, ids).
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		sessions, err := sharedstate.OpenSessions(ctx, cfg.StatePostgres)
		cancel()
		if err != nil {
			return err
		}
		defer sessions.Close()
		eng.ShareSessions(sessions)
	}

	var h *serve.Handler
	metrics := newServeMetrics(func() int { return h.Sessions() }, approvals)
	observe := metrics.decision
	var tr *tracing
	if cfg.Serve.OTLP != "" {
		if tr, err = newTracing(context.Background(), cfg.Serve.OTLP); err != nil {
			return fmt.Errorf("serve: otlp: %w", err)
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			tr.shutdown(ctx)
		}()
		observe = func(o gateway.Observation) {
			metrics.decision(o)
			tr.decision(o)
		}
	}
	servers := map[string]*serve.Server{}
	for _, name := range names {
		srv, closeSrv, err := serveServer(name, cfg, eng, bases[name], state, approvals, metrics, observe, logger, stderr)
		if err != nil {
			return err
		}
		defer closeSrv()
		servers[name] = srv
	}
	h = serve.New(&serve.Config{
		Servers: servers, Who: who.identity, Origins: cfg.Serve.Origins, Hosts: loopbackHosts(addr, cfg.Serve.PublicURL),
		IdleTimeout: cfg.Serve.IdleTimeout, MaxSessions: cfg.Serve.MaxSessions, MaxSessionsPerPrincipal: cfg.Serve.MaxSessionsPerPrincipal,
		Logger: logger, Observe: metrics.request,
		Ended: func(server, _ string, err error) {
			if err != nil {
				metrics.upstream.WithLabelValues(server).Inc()
			}
		},
	})
	mux := http.NewServeMux()
	var mcpHandler http.Handler = who.wrap(h)
	if tr != nil {
		mcpHandler = tr.wrap(mcpHandler)
	}
	mux.Handle("/mcp/", mcpHandler)
	if who.metadata != nil {
		// RFC 9728: where a client learns which authorization server
		// issues aegis's tokens.
		mux.Handle("GET /.well-known/oauth-protected-resource", who.metadata)
		mux.Handle("GET /.well-known/oauth-protected-resource/", who.metadata)
	}
	// The metrics name servers and rules: whoever may call may read them.
	mux.Handle("GET /metrics", who.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := who.identity(r); !ok {
			http.Error(w, "aegis: not authenticated", http.StatusUnauthorized)
			return
		}
		metrics.handler().ServeHTTP(w, r)
	})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	ready := make(chan struct{})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-ready:
			io.WriteString(w, "ready\n")
		default:
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// An idle keep-alive connection is closed after two minutes: an
	// unauthenticated client cannot hold file descriptors for ever.
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	for _, name := range names {
		fmt.Fprintf(stdout, "aegis: serving %s at http://%s/mcp/%s\n", name, ln.Addr(), name)
	}
	close(ready)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}
	logger.Info("serve: shutting down: the calls in flight finish, then the servers stop", "grace", shutdownGrace.String())
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- h.Shutdown(sctx) }()
	err = hs.Shutdown(sctx)
	if herr := <-errc; herr != nil {
		err = errors.Join(err, herr)
	}
	if err != nil {
		logger.Warn("serve: shut down before every call finished", "err", err)
	}
	return nil
}

// loopbackHosts are the names a request's Host may give a listener on
// a loopback address (serve.Config.Hosts): the loopback names and
// addresses, and public_url's host. A page on another host that DNS
// rebinding points at the listener names its own, and is refused: on
// loopback, where auth none lets anyone who reaches aegis in, a browser
// must not reach it for a page. nil (any host) for another listener,
// which requires authentication, and whose names a proxy may rewrite.
func loopbackHosts(addr, publicURL string) []string {
	if !config.LoopbackListen(addr) {
		return nil
	}
	host, _, _ := net.SplitHostPort(addr)
	hosts := []string{"localhost", "127.0.0.1", "::1", host}
	if u, err := url.Parse(publicURL); publicURL != "" && err == nil {
		hosts = append(hosts, u.Hostname())
	}
	return hosts
}

// serveServer is server name as aegis serve serves it: its chain lane,
// pins and envelopes, shared by its sessions, and what starts a session.
func serveServer(name string, cfg *config.Config, eng *gateway.Engine, bases []string, state config.State, approvals *approval.Store, metrics *serveMetrics, observe func(gateway.Observation), logger *slog.Logger, stderr io.Writer) (*serve.Server, func(), error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	chainRoot := state.Chains()
	log, ln, err := chain.OpenLane(chainRoot, name, &chain.Options{Logger: logger})
	if err != nil {
		return nil, nil, fmt.Errorf("opening server %q's chain: %w", name, err)
	}
	closers = append(closers, func() { log.Close() })
	if err := chain.TidyLanes(chainRoot, name, ln, &chain.Options{Logger: logger}); err != nil {
		warnEach(stderr, err)
	}
	var pins *pin.Store
	if cfg.StatePostgres != "" {
		// A tool one replica holds is held on all.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		pins, err = pin.OpenPostgres(ctx, cfg.StatePostgres, name)
		cancel()
	} else {
		pins, err = pin.Open(state.PinFile(name))
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closers = append(closers, func() { pins.Close() })
	var envs *envelope.Store
	if cfg.Envelopes {
		if envs, err = envelope.Open(state.Envelopes(name), cfg.EnvelopeRetention); err != nil {
			closeAll()
			return nil, nil, err
		}
		closers = append(closers, func() { envs.Close() })
	}
	lane := ""
	if ln.N > 1 {
		lane = strconv.Itoa(ln.N)
	}
	relay := cfg.Relay[name]
	// The pipeline logs what goes wrong; each decision is in the chain
	// and the metrics, not the log.
	quiet := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	start := func(ctx context.Context, st serve.Started) (*serve.Upstream, error) {
		id, who := st.ID, st.Who
		elicitor := proxy.NewElicitor(approvals, who.Principal)
		sc := &gateway.SessionConfig{
			Server: name, ID: id, Principal: who.Principal, Roles: who.Roles, Origin: capability.Interactive,
			Pins: pins, Log: log, Logger: quiet.With("server", name, "session", id), Notify: stderr,
			Observe:   observe,
			Approvals: &gateway.Approvals{Store: approvals, Timeout: cfg.ApprovalTimeout, Lane: lane, Asked: elicitor.Ask},
		}
		if envs != nil {
			sc.Envelopes = envs
		}
		sess, err := eng.NewSession(sc)
		if err != nil {
			return nil, err
		}
		l, err := launch(name, cfg, eng, sess, relay.Command, bases, stderr)
		if err != nil {
			return nil, err
		}
		what := "serve: session started"
		if st.Stateless {
			what = "serve: stateless relay started"
		} else {
			metrics.sessions.WithLabelValues(name).Inc()
		}
		logger.Info(what, "server", name, "session", id, "principal", who.Principal, "roles", strings.Join(who.Roles, ","))
		return &serve.Upstream{
			Cmd:    l.cmd,
			Bridge: l.bridge,
			Gate:   proxy.SessionGate(sess),
			Options: &proxy.Options{
				MaxMessageBytes: int(relay.MaxMessageBytes),
				MaxInFlight:     relay.MaxInFlight,
				CallTimeout:     relay.CallTimeout,
				Stderr:          stderr,
				Logger:          logger.With("server", name, "session", id),
				Twin:            l.twin,
				Elicitor:        elicitor,
			},
			Close: l.close,
		}, nil
	}
	return &serve.Server{Start: start}, closeAll, nil
}
