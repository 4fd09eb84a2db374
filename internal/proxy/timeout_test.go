package proxy

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeTimers stands in for time.AfterFunc: each timer started is sent on
// the channel, and fires when the test says.
type fakeTimers chan *fakeTimer

type fakeTimer struct {
	d       time.Duration
	f       func()
	stopped chan struct{}
}

func (ft fakeTimers) after(d time.Duration, f func()) stopper {
	t := &fakeTimer{d: d, f: f, stopped: make(chan struct{}, 1)}
	ft <- t
	return t
}

func (t *fakeTimer) Stop() bool {
	select {
	case t.stopped <- struct{}{}:
		return true
	default:
		return false
	}
}

func (t *fakeTimer) isStopped() bool { return len(t.stopped) > 0 }

func (ft fakeTimers) next(t *testing.T) *fakeTimer {
	t.Helper()
	select {
	case tm := <-ft:
		return tm
	case <-time.After(failAfter):
		t.Fatal("no call timeout started")
		return nil
	}
}

// TestRelayCallTimeout: a call the server does not answer within the call
// timeout is answered with a tool error naming the timeout, the server is
// sent notifications/cancelled for it (after the call, before anything the
// client sends next), the gate hears it timed out, and the server's late
// answer is dropped, not sent twice. A call answered in time stops its
// timer, and a timer that fires all the same does nothing.
func TestRelayCallTimeout(t *testing.T) {
	timers := make(fakeTimers, 10)
	gate := &lossGate{testGate: &testGate{}}
	h := newHarnessOpts(t, gate, options{maxMsg: 1 << 20, maxDepth: 64, maxReqs: 100, callTimeout: 30 * time.Second, afterFunc: timers.after})
	hang := `{"jsonrpc":"2.0","id":"h-1","method":"tools/call","params":{"name":"hang","arguments":{}}}`

	h.fromClient(hang)
	h.serverGetsOnly(hang)
	tm := timers.next(t)
	if tm.d != 30*time.Second {
		t.Errorf("timeout %v, want 30s", tm.d)
	}
	// A request that is not a call has no timeout.
	h.barrier(1)
	tm.f()
	h.serverGetsOnly(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"h-1","reason":"aegis: no answer within the call timeout (30s)"}}`)
	wantToolError(t, h.clientGets(), `"h-1"`, "aegis cancelled this call: the MCP server did not answer it within the call timeout (30s). The tool may have run, in part or whole; check before calling it again.")
	h.fromServer(`{"jsonrpc":"2.0","id":"h-1","result":{"content":[]}}`)
	h.barrier(2) // the late answer was dropped
	tm.f()       // firing again does nothing
	h.barrier(3)

	// Answered in time: the timer is stopped, and firing it anyway does
	// nothing.
	h.fromClient(toolCall(2, "x"))
	h.serverGetsOnly(toolCall(2, "x"))
	tm2 := timers.next(t)
	h.fromServer(toolResult(2))
	h.clientGetsOnly(toolResult(2))
	if !tm2.isStopped() {
		t.Error("the timer of a call answered in time was not stopped")
	}
	tm2.f()
	h.barrier(4)

	// Cancelled by the client once sent: stopped too.
	h.fromClient(toolCall(3, "x"))
	h.serverGetsOnly(toolCall(3, "x"))
	tm3 := timers.next(t)
	cancel3 := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`
	h.fromClient(cancel3)
	h.serverGetsOnly(cancel3)
	if !tm3.isStopped() {
		t.Error("the timer of a cancelled call was not stopped")
	}
	tm3.f()
	h.barrier(5)

	// At the server when it goes: settled there, and stopped.
	h.fromClient(toolCall(4, "x"))
	h.serverGetsOnly(toolCall(4, "x"))
	tm4 := timers.next(t)
	h.r.serverGone(errors.New("the MCP server exited"))
	wantError(t, h.clientGets(), "4", codeServerGone, "before answering")
	if !tm4.isStopped() {
		t.Error("the timer of a call settled by the server's going was not stopped")
	}
	tm4.f()

	if diff := cmp.Diff([]string{`"h-1" timed-out`, "4 no-answer"}, gate.reported()); diff != "" {
		t.Errorf("reported (-want +got)\n%s", diff)
	}
	select {
	case tm := <-timers:
		t.Errorf("an unexpected timer was started: %v", tm.d)
	default:
	}
}

// TestRelayNoCallTimeout: with no call timeout, no timer is started.
func TestRelayNoCallTimeout(t *testing.T) {
	timers := make(fakeTimers, 1)
	h := newHarnessOpts(t, &testGate{}, options{maxMsg: 1 << 20, maxDepth: 64, maxReqs: 100, afterFunc: timers.after})
	h.fromClient(toolCall(1, "x"))
	h.serverGetsOnly(toolCall(1, "x"))
	h.fromServer(toolResult(1))
	h.clientGetsOnly(toolResult(1))
	if len(timers) != 0 {
		t.Error("a timer was started with no call timeout")
	}
}
