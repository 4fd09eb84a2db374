package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/aegis-mcp/aegis/internal/approval"
	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/console"
)

// cmdConsole serves the local web console: `aegis console [--addr
// 127.0.0.1:PORT]`. It prints the URL to open (with its token) and serves
// until interrupted.
func cmdConsole(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("console", stderr)
	addr := fs.String("addr", "127.0.0.1:0", "the loopback `address` to serve on (port 0: any free port)")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 0 {
		return usageError(stderr, "usage: aegis console [--addr 127.0.0.1:PORT]")
	}
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return usageError(stderr, "console: --addr %q: want a loopback address and port (127.0.0.1:8377, [::1]:0)", *addr)
	}
	state, err := config.DefaultState()
	if err != nil {
		return err
	}
	st, err := approval.Open(state.Approvals(), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	by := "unknown"
	if u, err := user.Current(); err == nil {
		by = u.Username
	}
	c, url, err := console.New(console.Config{Approvals: st, By: by, Decisions: consoleDecisions, Pins: consolePins}, ln.Addr())
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
