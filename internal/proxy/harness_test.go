package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/args"
)

// testGate is a Gate for tests: it forwards every call unless deny names
// the tool (or the method, of a request of another method), and records the calls it saw. Its optional fields make it a
// ToolsChecker and ResultChecker.
type testGate struct {
	deny    map[string]string // tool -> reason
	block   chan struct{}     // if non-nil, Call waits for it (or ctx)
	entered chan struct{}     // if non-nil, Call sends on it first
	err     error
	args    json.RawMessage // replacement arguments
	unbound map[string]bool // tools whose calls run unbound
	mu      sync.Mutex
	calls   []*Call
	ctxErr  []error // ctx.Err() after each Call returned
}

func (g *testGate) Call(ctx context.Context, c *Call) (Verdict, error) {
	g.mu.Lock()
	g.calls = append(g.calls, c)
	g.mu.Unlock()
	if g.entered != nil {
		g.entered <- struct{}{}
	}
	if g.block != nil {
		select {
		case <-g.block:
		case <-ctx.Done():
			g.mu.Lock()
			g.ctxErr = append(g.ctxErr, ctx.Err())
			g.mu.Unlock()
			return Verdict{}, ctx.Err()
		}
	}
	if g.err != nil {
		return Verdict{}, g.err
	}
	key := c.Tool
	if c.Method != "" {
		key = c.Method // a request of another method is denied by method
	}
	if reason, ok := g.deny[key]; ok {
		return Verdict{Reason: reason}, nil
	}
	return Verdict{Forward: true, Arguments: g.args, RunUnbound: g.unbound[key]}, nil
}

func (g *testGate) seen() []*Call {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*Call(nil), g.calls...)
}

// checkingGate adds ToolsChecker and ResultChecker to a testGate.
type checkingGate struct {
	*testGate
	tools  func([]json.RawMessage) ([]json.RawMessage, error)
	result func(*Call, json.RawMessage) (json.RawMessage, error)
}

func (g *checkingGate) Tools(_ context.Context, tools []json.RawMessage) ([]json.RawMessage, error) {
	return g.tools(tools)
}

func (g *checkingGate) Result(_ context.Context, c *Call, res json.RawMessage) (json.RawMessage, error) {
	return g.result(c, res)
}

// A harness runs a relay between a scripted client and a scripted server,
// both raw: the test writes and reads lines on each side.
type harness struct {
	t      *testing.T
	r      *relay
	client io.Writer   // the client's output, the relay's input
	server io.Writer   // the server's output, the relay's input
	toCli  chan string // what the relay sent the client
	toSrv  chan string // what the relay sent the server
	cancel context.CancelFunc
}

func newHarness(t *testing.T, gate Gate) *harness {
	t.Helper()
	return newHarnessOpts(t, gate, options{maxMsg: 1 << 20, maxDepth: 64, maxReqs: 100})
}

func newHarnessOpts(t *testing.T, gate Gate, o options) *harness {
	t.Helper()
	return newHarnessWrap(t, gate, o, nil)
}

// newHarnessWrap is newHarnessOpts with the relay writing to the client
// through wrap(w), if wrap is not nil.
func newHarnessWrap(t *testing.T, gate Gate, o options, wrap func(io.Writer) io.Writer) *harness {
	t.Helper()
	cr, cw := io.Pipe() // client -> relay
	rr, rw := io.Pipe() // relay -> client
	sr, sw := io.Pipe() // relay -> server
	or, ow := io.Pipe() // server -> relay
	ctx, cancel := context.WithCancel(context.Background())
	if o.log == nil {
		o.log = testLogger(t)
	}
	var toClient io.Writer = rw
	if wrap != nil {
		toClient = wrap(rw)
	}
	r := newRelay(ctx, toClient, sw, gate, o)
	h := &harness{t: t, r: r, client: cw, server: ow, toCli: readLines(rr), toSrv: readLines(sr), cancel: cancel}
	go r.clientLoop(cr)
	go r.serverLoop(or)
	t.Cleanup(func() {
		cancel()
		cw.Close()
		ow.Close()
		r.stop()
		rw.Close()
		sw.Close()
		r.gates.Wait()
	})
	return h
}

func readLines(r io.Reader) chan string {
	ch := make(chan string, 1000)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// fromClient writes lines as the client.
func (h *harness) fromClient(lines ...string) {
	h.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(h.client, l+"\n"); err != nil {
			h.t.Fatalf("client write: %v", err)
		}
	}
}

// fromServer writes lines as the server.
func (h *harness) fromServer(lines ...string) {
	h.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(h.server, l+"\n"); err != nil {
			h.t.Fatalf("server write: %v", err)
		}
	}
}

// failAfter bounds how long a test waits for a message it expects; it is a
// guard against hanging, not a timing assertion.
const failAfter = 20 * time.Second

func next(t *testing.T, ch chan string, who string) string {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatalf("%s: stream closed", who)
		}
		return l
	case <-time.After(failAfter):
		t.Fatalf("%s: nothing arrived", who)
	}
	return ""
}

// clientGets returns the next line the client receives.
func (h *harness) clientGets() string { h.t.Helper(); return next(h.t, h.toCli, "client") }

// serverGets returns the next line the server receives.
func (h *harness) serverGets() string { h.t.Helper(); return next(h.t, h.toSrv, "server") }

// serverGetsOnly checks that the next line the server receives is want. Used
// after a marker message, it proves nothing else reached the server before
// the marker.
func (h *harness) serverGetsOnly(want string) {
	h.t.Helper()
	if got := h.serverGets(); got != want {
		h.t.Fatalf("server received\n  %s\nwant\n  %s", got, want)
	}
}

func (h *harness) clientGetsOnly(want string) {
	h.t.Helper()
	if got := h.clientGets(); got != want {
		h.t.Fatalf("client received\n  %s\nwant\n  %s", got, want)
	}
}

// ping is a marker request: ordered with other non-gated messages, it
// proves what did not reach the server before it.
func ping(id int) string {
	return `{"jsonrpc":"2.0","id":"ping-` + strconv.Itoa(id) + `","method":"ping"}`
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// decode parses a line the relay produced, failing the test if it is not
// strict JSON.
func decode(t *testing.T, line string) map[string]any {
	t.Helper()
	if _, err := args.Validate([]byte(line), 64); err != nil {
		t.Fatalf("relay produced invalid JSON %q: %v", line, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("relay produced %q: %v", line, err)
	}
	return m
}
