package proxy

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// A valve is the client's side of the relay's output: shut, every write
// waits until it is opened (a client that stops reading); open, writes
// pass through.
type valve struct {
	opened chan struct{}
	once   sync.Once
	w      io.Writer
}

func newValve() *valve { return &valve{opened: make(chan struct{})} }

func (v *valve) wrap(w io.Writer) io.Writer { v.w = w; return v }

func (v *valve) open() { v.once.Do(func() { close(v.opened) }) }

func (v *valve) Write(p []byte) (int, error) {
	<-v.opened
	return v.w.Write(p)
}

// watchLog returns a test logger that also signals on, without blocking,
// each time the relay logs a message containing msg.
func watchLog(t *testing.T, msg string, on chan<- struct{}) *slog.Logger {
	return slog.New(&watchHandler{Handler: testLogger(t).Handler(), msg: msg, on: on})
}

type watchHandler struct {
	slog.Handler
	msg string
	on  chan<- struct{}
}

func (h *watchHandler) Handle(ctx context.Context, rec slog.Record) error {
	if strings.Contains(rec.Message, h.msg) {
		select {
		case h.on <- struct{}{}:
		default:
		}
	}
	return h.Handler.Handle(ctx, rec)
}

// idOf returns the numeric id of a response line.
func idOf(t *testing.T, line string) int {
	t.Helper()
	var m struct{ ID int }
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return m.ID
}

// TestRelayRefusalsCountAgainstTheCap: a client that sends calls aegis
// refuses and never reads its answers is throttled. A refusal's answer
// holds its in-flight slot until it is written, so once maxReqs answers
// wait, the next request is refused with the cap's JSON-RPC error, whose
// write waits too, and the relay stops reading the client: it gates no
// more calls and holds no more answers, however many the client sends.
// (Before, a refusal left the table before its answer was written, and
// the relay read and refused every call, one goroutine and message per
// unwritten answer: 50,000 of them took 550 MiB.) Once the client reads
// again, every call is answered exactly once.
func TestRelayRefusalsCountAgainstTheCap(t *testing.T) {
	const maxReqs, n = 4, 2000
	gate := &testGate{deny: map[string]string{"x": "denied by rule r"}}
	full := make(chan struct{}, 1)
	v := newValve()
	h := newHarnessWrap(t, gate, options{maxMsg: 1 << 20, maxDepth: 64, maxReqs: maxReqs, log: watchLog(t, "too many awaiting", full)}, v.wrap)
	t.Cleanup(v.open) // before the harness's cleanup, which waits for the gates' writes

	sent := make(chan error, 1)
	go func() {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			b.WriteString(toolCall(i, "x") + "\n")
		}
		// n calls are far more than the relay's input buffer holds: the
		// write returns only if the relay reads them all.
		_, err := io.WriteString(h.client, b.String())
		sent <- err
	}()
	select {
	case <-full:
	case err := <-sent:
		t.Fatalf("the relay read all %d calls (%v) while the client read none of its answers", n, err)
	case <-time.After(failAfter):
		t.Fatal("the in-flight cap never filled")
	}
	h.r.mu.Lock()
	held := len(h.r.inflight) + h.r.answering
	h.r.mu.Unlock()
	if held != maxReqs {
		t.Errorf("calls held by the relay = %d, want the cap, %d", held, maxReqs)
	}
	if got := len(gate.seen()); got > maxReqs {
		t.Errorf("the gate saw %d calls while the client read nothing; want at most %d", got, maxReqs)
	}
	select {
	case <-sent:
		t.Fatal("the relay read every call while the client read nothing")
	default:
	}

	// The client reads again: every call gets one answer, a refusal by
	// the gate or by the cap.
	v.open()
	answered := make(map[int]bool)
	capped := 0
	for len(answered) < n {
		line := h.clientGets()
		id := idOf(t, line)
		if answered[id] {
			t.Fatalf("call %d answered twice; the second: %s", id, line)
		}
		answered[id] = true
		if strings.Contains(line, `"error"`) {
			wantError(t, line, strings.TrimSpace(mustJSON(id)), codeInternalError, "more than 4 requests awaiting an answer")
			capped++
			continue
		}
		wantToolError(t, line, mustJSON(id), "denied by rule r")
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if capped == 0 {
		t.Error("no call was refused by the cap")
	}
	h.barrier(1) // and nothing more
	if got := len(gate.seen()); got+capped != n {
		t.Errorf("gated %d + capped %d calls, want %d", got, capped, n)
	}
}

// TestRelayCancelledWhileGatedFreesItsSlot: a call the client cancels while
// it is gated, and that the gate then lets through (ignoring its context),
// goes to the server with its cancellation right behind, and leaves the
// in-flight table: the client expects no answer, and a server that honours
// the cancel sends none. Before, it held its slot until the session ended.
func TestRelayCancelledWhileGatedFreesItsSlot(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"user"}}`
	gate := &ignoringGate{release: make(chan struct{})}
	h := newHarnessOpts(t, gate, options{maxMsg: 1 << 20, maxDepth: 64, maxReqs: 2})
	h.fromClient(call, cancel)
	h.barrier(1) // the cancellation was read, and waits behind the gated call
	close(gate.release)
	h.serverGetsOnly(call)
	h.serverGetsOnly(cancel)
	// Both slots are free: two requests that wait for their answers fit.
	a, b := `{"jsonrpc":"2.0","id":"a","method":"x"}`, `{"jsonrpc":"2.0","id":"b","method":"x"}`
	h.fromClient(a, b)
	h.serverGetsOnly(a)
	h.serverGetsOnly(b)
	h.fromServer(toolResult(3), `{"jsonrpc":"2.0","id":"a","result":{}}`)
	// The late answer to the cancelled call is dropped: it answers
	// nothing awaited.
	h.clientGetsOnly(`{"jsonrpc":"2.0","id":"a","result":{}}`)
}
