package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/console"
)

// cmdConsole serves the local web console: `aegis console [--addr
// 127.0.0.1:PORT]`. It prints the URL to open (with its token) and serves
// until interrupted.
func cmdConsole(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("console", stderr)
	cfgPath := fs.String("config", "", "the configuration `file` whose bindings to show (default: as aegis run, if it exists)")
	addr := fs.String("addr", "", "the loopback `address` to serve on (default: a random 127.x.y.z on Linux, else 127.0.0.1, any free port)")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 0 {
		return usageError(stderr, "usage: aegis console [--addr 127.0.0.1:PORT]")
	}
	if *addr != "" {
		host, _, err := net.SplitHostPort(*addr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return usageError(stderr, "console: --addr %q: want a loopback address and port (127.0.0.1:8377, [::1]:0)", *addr)
		}
	}
	state, err := config.DefaultState()
	if err != nil {
		return err
	}
	// The configuration says where the approvals are (a shared
	// PostgreSQL).
	cfg, err := optionalConfig(*cfgPath, state)
	if err != nil {
		return err
	}
	st, err := openApprovals(cfg, state)
	if err != nil {
		return err
	}
	defer st.Close()
	ln, err := consoleListener(*addr)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	by := "unknown"
	if u, err := user.Current(); err == nil {
		by = u.Username
	}
	path := *cfgPath
	if path == "" {
		path = config.DefaultConfig(state)
	}
	var bindings func() ([]string, error)
	if _, err := os.Stat(path); err == nil || *cfgPath != "" {
		bindings = func() ([]string, error) { return consoleBindings(path) }
	}
	c, url, err := console.New(console.Config{Approvals: st, By: by, Decisions: consoleDecisions, Pins: consolePins, Bindings: bindings}, ln.Addr())
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	fmt.Fprintf(stdout, "aegis console: %s\n", url)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("console: %w", err)
	}
	return nil
}

// consoleListener listens on addr, or by default on a random address of
// 127.0.0.0/8 where the system routes them all to loopback (Linux): a
// browser sends a host's cookies to every port of it, so on 127.0.0.1 any
// local server the user opens would receive the console's; on an address
// of its own nobody else serves, none does. Elsewhere, 127.0.0.1.
func consoleListener(addr string) (net.Listener, error) {
	if addr != "" {
		return net.Listen("tcp", addr)
	}
	if runtime.GOOS == "linux" {
		var b [3]byte
		rand.Read(b[:])
		ip := net.IPv4(127, 1+b[0]%254, 1+b[1]%254, 1+b[2]%254)
		if ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0")); err == nil {
			return ln, nil
		}
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// consoleDecisions returns the last n decisions of every chain, oldest
// first.
func consoleDecisions(n int) ([]console.Decision, error) {
	lanes, err := allLanes("", "")
	if err != nil {
		return nil, err
	}
	var recent []laneEntry
	for _, ln := range lanes {
		ring, err := lastEntries(ln, n)
		if err != nil {
			return nil, err
		}
		recent = append(recent, ring...)
	}
	sort.SliceStable(recent, func(i, j int) bool { return recent[i].e.Time.Before(recent[j].e.Time) })
	if len(recent) > n {
		recent = recent[len(recent)-n:]
	}
	out := make([]console.Decision, len(recent))
	for i, le := range recent {
		e := le.e
		d := console.Decision{Name: le.lane.EntryName(e.Seq), Time: e.Time, Decision: e.Decision,
			Target: target(e.Server, e.Method, e.Tool), Principal: e.Principal, Reason: e.Reason}
		for j := range e.Caps {
			d.Caps = append(d.Caps, (&e.Caps[j]).Text())
		}
		out[i] = d
	}
	return out, nil
}

// consoleBindings returns, for each server of the configuration at path,
// what each tool's arguments are bound to.
func consoleBindings(path string) ([]string, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range cfg.Servers {
		names := make([]string, 0, len(s.Bindings))
		for n := range s.Bindings {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) == 0 {
			out = append(out, s.Name+": no bindings (every tool is unbound)")
		}
		for _, n := range names {
			out = append(out, s.Name+": "+s.Bindings[n].String())
		}
	}
	return out, nil
}

// consolePins returns every server's pinned tools.
func consolePins() ([]console.Pin, error) {
	var out []console.Pin
	for _, f := range allPinFiles() {
		s, err := openPins(f)
		if err != nil {
			return nil, err
		}
		all, err := s.All()
		if err != nil {
			return nil, err
		}
		server := strings.TrimSuffix(filepath.Base(f), ".json")
		for name, p := range all {
			out = append(out, console.Pin{Server: server, Tool: name, Held: p.Held(), Shape: fmt.Sprint(p.Shape)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Server != out[j].Server {
			return out[i].Server < out[j].Server
		}
		return out[i].Tool < out[j].Tool
	})
	return out, nil
}
