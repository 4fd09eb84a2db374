package proxy

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// slowToolGate forwards every call; a call to a tool named in slow waits
// for that tool's channel first.
type slowToolGate struct {
	mu   sync.Mutex
	slow map[string]chan struct{}
}

func (g *slowToolGate) Call(ctx context.Context, c *Call) (Verdict, error) {
	g.mu.Lock()
	ch := g.slow[c.Tool]
	g.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return Verdict{}, ctx.Err()
		}
	}
	return Verdict{Forward: true}, nil
}

func toolCall(id int, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool)
}

func toolResult(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}`, id)
}

// TestRelayHandoff holds the reading of the client's input across the ways
// it passes between readers (see handoff): calls decided without blocking
// (the reader takes its input back and reads on), a gate that blocks (the
// standby takes over, and the client's later messages reach the server
// while the call waits), blocked gates in a row (no standby is free; an
// idle reader, or a new one, takes over), and calls decided while others
// wait. Every call reaches the server, every marker overtakes only the
// calls still waiting, and nothing is read twice or lost.
func TestRelayHandoff(t *testing.T) {
	tests := []struct {
		name string
		// script: f = a call decided at once, s = a call whose gate waits
		// until released, r = release every waiting call, p = a marker.
		script string
	}{
		{"fast calls only", "ffffffffffffffffffff"},
		{"a slow call after fast ones", "fffspr"},
		{"slow calls alternate", "fspfrfspfrfsprf"},
		{"slow calls in a row", "fsssppfrff"},
		{"slow first", "spfpr"},
		{"slow calls while others wait", "ffsfspsfpfrffspr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for round := range 20 {
				gate := &slowToolGate{slow: map[string]chan struct{}{}}
				h := newHarness(t, gate)
				var waiting []string // slow calls sent and not released
				id, marker := 0, 0
				for _, op := range tt.script {
					switch op {
					case 'f':
						id++
						h.fromClient(toolCall(id, "fast"))
						h.serverGetsOnly(toolCall(id, "fast"))
						h.fromServer(toolResult(id))
						h.clientGetsOnly(toolResult(id))
					case 's':
						id++
						tool := fmt.Sprintf("slow-%d", id)
						gate.mu.Lock()
						gate.slow[tool] = make(chan struct{})
						gate.mu.Unlock()
						h.fromClient(toolCall(id, tool))
						waiting = append(waiting, toolCall(id, tool))
					case 'p':
						marker++
						h.barrier(round*100 + marker)
					case 'r':
						gate.mu.Lock()
						for _, ch := range gate.slow {
							close(ch)
						}
						gate.slow = map[string]chan struct{}{}
						gate.mu.Unlock()
						got := map[string]bool{}
						for range waiting {
							got[h.serverGets()] = true
						}
						for _, w := range waiting {
							if !got[w] {
								t.Fatalf("round %d: %s did not reach the server; it got %v", round, w, got)
							}
						}
						waiting = nil
					}
				}
				h.barrier(round*100 + 99)
			}
		})
	}
}

// TestHandoffStates holds the handoff's transitions: a pass needs a free
// standby, an input passed and not taken is taken back, one taken is not,
// and closing ends the standby's wait.
func TestHandoffStates(t *testing.T) {
	var h handoff
	h.open()
	if h.bell == nil {
		t.Skip("no bell on this system")
	}
	in := &reading{}
	if h.pass(in) {
		t.Fatal("pass without a standby succeeded")
	}
	if h.reclaim(in) {
		t.Fatal("reclaim of an input never passed succeeded")
	}
	took := make(chan *reading)
	standby := func() { took <- h.wait() }
	go standby()
	for !h.hasStandby() {
		runtime.Gosched()
	}
	if h.wait() != nil {
		t.Fatal("a second standby was accepted")
	}
	// Passed, and taken back if the standby has not run since; then
	// passed again for it to take.
	if !h.pass(in) {
		t.Fatal("pass to a waiting standby failed")
	}
	if h.pass(in) {
		t.Fatal("a second pass before the standby took the first succeeded")
	}
	if h.reclaim(in) {
		// Taken back: pass again and let the standby have it.
		if !h.pass(in) {
			t.Fatal("pass after a reclaim failed")
		}
	}
	if got := <-took; got != in {
		t.Fatalf("the standby took %p, want %p", got, in)
	}
	if h.reclaim(in) {
		t.Fatal("reclaim of an input the standby took succeeded")
	}
	go standby()
	for !h.hasStandby() {
		runtime.Gosched()
	}
	h.close()
	if got := <-took; got != nil {
		t.Fatalf("the standby took %p after close, want nil", got)
	}
	if h.pass(in) || h.wait() != nil {
		t.Fatal("a closed handoff passed or waited")
	}
}

func (h *handoff) hasStandby() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.standby
}
