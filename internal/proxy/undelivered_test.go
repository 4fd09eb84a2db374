package proxy

import (
	"context"
	"errors"
	"regexp"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lossGate is a testGate that records what the relay reports through
// UndeliveredRecorder, as "id why".
type lossGate struct {
	*testGate
	mu     sync.Mutex
	losses []string
}

func (g *lossGate) Undelivered(ctx context.Context, c *Call, why Loss) {
	if ctx.Err() != nil {
		panic("Undelivered's context is cancelled")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.losses = append(g.losses, string(c.ID)+" "+why.String())
}

func (g *lossGate) reported() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := append([]string(nil), g.losses...)
	sort.Strings(out)
	return out
}

// TestRelayUndelivered: every call the gate let through and the server did
// not answer is reported to the gate once, with why, and the client gets an
// error for it; calls answered, refused or cancelled after they were sent,
// and requests that are not calls, are not reported.
func TestRelayUndelivered(t *testing.T) {
	call := func(id, tool string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	}
	gate := &lossGate{testGate: &testGate{deny: map[string]string{"no": "denied by rule r"}}}
	h := newHarness(t, gate)

	// Answered, refused, cancelled once sent: none is reported.
	h.fromClient(call("1", "x"))
	h.serverGetsOnly(call("1", "x"))
	h.fromServer(toolResult(1))
	h.clientGetsOnly(toolResult(1))
	h.fromClient(call("2", "no"))
	wantToolError(t, h.clientGets(), "2", "denied by rule r")
	h.fromClient(call("3", "x"))
	h.serverGetsOnly(call("3", "x"))
	cancel3 := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`
	h.fromClient(cancel3)
	h.serverGetsOnly(cancel3)

	// At the server when it goes: reported as no-answer, as is a request
	// of another method the gate let through (resources/read).
	// The two are gated side by side, so they may reach the server in
	// either order.
	read5 := `{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"u"}}`
	h.fromClient(call("4", "x"), read5)
	sent := []string{h.serverGets(), h.serverGets()}
	sort.Strings(sent)
	if diff := cmp.Diff([]string{call("4", "x"), read5}, sent); diff != "" {
		t.Fatalf("server received (-want +got)\n%s", diff)
	}
	// Being gated when it goes: let through, and reported as not sent.
	gate.block, gate.entered = make(chan struct{}), make(chan struct{}, 1)
	h.fromClient(call("6", "x"))
	<-gate.entered
	h.r.serverGone(errors.New("the MCP server exited (exit status 3)"))
	got := map[string]string{}
	for range 2 {
		l := h.clientGets()
		got[mustJSON(idOf(t, l))] = l
	}
	wantError(t, got["4"], "4", codeServerGone, "exited (exit status 3) before answering")
	wantError(t, got["5"], "5", codeServerGone, "exited (exit status 3) before answering")
	close(gate.block)
	wantError(t, h.clientGets(), "6", codeServerGone, "(exit status 3); the call was not sent")
	h.r.gates.Wait()

	want := []string{"4 no-answer", "5 no-answer", "6 not-sent"}
	if diff := cmp.Diff(want, gate.reported()); diff != "" {
		t.Errorf("reported (-want +got)\n%s", diff)
	}
}

// TestRelayUnsentCall: a call whose write to the server fails (the
// server's input is closed; here as closeServer leaves it) is not left
// looking forwarded: it is reported as not sent, once, and the client gets
// an error saying it did not run.
func TestRelayUnsentCall(t *testing.T) {
	gate := &lossGate{testGate: &testGate{}}
	h := newHarness(t, gate)
	h.r.serverEOF.Store(true)
	h.fromClient(toolCall(1, "x"))
	wantError(t, h.clientGets(), "1", codeServerGone, "could not be sent to the MCP server; it did not run")
	// Its slot is free, and the server's going later does not report it
	// again.
	h.r.serverGone(errors.New("the MCP server exited"))
	h.r.gates.Wait()
	if diff := cmp.Diff([]string{"1 not-sent"}, gate.reported()); diff != "" {
		t.Errorf("reported (-want +got)\n%s", diff)
	}
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	if n := len(h.r.inflight) + h.r.answering; n != 0 {
		t.Errorf("%d requests left in flight", n)
	}
}

// TestRunUndeliveredOnCrash: through Run, a server that crashes mid-call
// leaves that call reported to the gate as no-answer, once.
func TestRunUndeliveredOnCrash(t *testing.T) {
	ctx := context.Background()
	gate := &lossGate{testGate: &testGate{}}
	rn := startRun(t, ctx, childCtx(t.Context(), "demo"), gate, nil)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, rn.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}}); err == nil {
		t.Fatal("CallTool(crash) succeeded")
	}
	rn.wait(t)
	losses := gate.reported()
	if len(losses) != 1 || !regexp.MustCompile(`^\d+ no-answer$`).MatchString(losses[0]) {
		t.Errorf("reported %q, want one no-answer", losses)
	}
}
