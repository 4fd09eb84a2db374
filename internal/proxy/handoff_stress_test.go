package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stressGate decides by tool name: fast, spin (computes), yield, sleep,
// deny, mutate (changes c.ID and c.Arguments in place and appends).
type stressGate struct {
	calls atomic.Int64
	seen  sync.Map // tool -> "entered" / "returned"
}

func (g *stressGate) Call(ctx context.Context, c *Call) (Verdict, error) {
	g.calls.Add(1)
	g.seen.Store(c.Tool, "entered")
	defer g.seen.Store(c.Tool, "returned")
	kind, _, _ := strings.Cut(c.Tool, "-")
	switch kind {
	case "spin":
		x := 0
		for i := range 20000 {
			x += i
		}
		_ = x
	case "yield":
		runtime.Gosched()
	case "sleep":
		select {
		case <-time.After(time.Duration(rand.IntN(300)) * time.Microsecond):
		case <-ctx.Done():
			return Verdict{}, ctx.Err()
		}
	case "deny":
		return Verdict{Reason: "no"}, nil
	case "mutate":
		for i := range c.ID {
			c.ID[i] = 'X'
		}
		for i := range c.Arguments {
			c.Arguments[i] = ' '
		}
		c.Arguments = append(c.Arguments, "garbage"...)
		c.ID = append(c.ID, "garbage"...)
		if c.Meta != nil {
			c.Meta = append(c.Meta, "zz"...)
		}
	}
	return Verdict{Forward: true}, nil
}

// TestHandoffStress sends a long random script in one go and checks
// that non-call messages reach the server once each in order, that every
// allowed call arrives once and byte for byte, that no denied call arrives,
// and that a call's cancellation never precedes it.
func TestHandoffStress(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("procs", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for round := range 30 {
				stressRound(t, round, 600)
			}
		})
	}
}

func stressRound(t *testing.T, round, n int) {
	gate := &stressGate{}
	cr, cw := io.Pipe()
	rr, rw := io.Pipe()
	sr, sw := io.Pipe()
	or, ow := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRelay(ctx, rw, sw, gate, options{maxMsg: 1 << 20, maxDepth: 64, maxReqs: 1 << 20, log: testLogger(t)})
	loopDone := make(chan error, 1)
	go func() { loopDone <- r.clientLoop(cr) }()
	go r.serverLoop(or)
	toCli := readLines(rr)
	toSrv := readLines(sr)

	kinds := []string{"fast", "spin", "yield", "sleep", "deny", "mutate"}
	var (
		sent        []string
		wantOrdered []string            // non-call messages, in order
		wantCalls   = map[string]bool{} // allowed calls
		denied      = map[int]bool{}
		cancelOf    = map[string]int{} // cancel line -> call id
		callLine    = map[int]string{}
	)
	for i := range n {
		id := round*100000 + i
		switch rand.IntN(6) {
		case 0, 1, 2:
			k := kinds[rand.IntN(len(kinds))]
			l := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s-%d","arguments":{"a":%d},"_meta":{"m":1}}}`, id, k, i, i)
			sent = append(sent, l)
			callLine[id] = l
			if k == "deny" {
				denied[id] = true
			} else {
				wantCalls[l] = true
			}
		case 3:
			l := fmt.Sprintf(`{"jsonrpc":"2.0","id":"p%d","method":"ping"}`, id)
			sent = append(sent, l)
			wantOrdered = append(wantOrdered, l)
		case 4:
			l := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":%d}}`, id)
			sent = append(sent, l)
			wantOrdered = append(wantOrdered, l)
		case 5:
			// cancel a random earlier call
			if len(callLine) == 0 {
				continue
			}
			var target int
			for k := range callLine {
				target = k
				break
			}
			l := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"r":%d}}`, target, id)
			sent = append(sent, l)
			cancelOf[l] = target
			delete(callLine, target) // cancel each at most once
		}
	}
	go func() {
		var b strings.Builder
		for _, l := range sent {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		io.WriteString(cw, b.String())
		cw.Close()
	}()
	// The server answers nothing; drain the client.
	var cliMu sync.Mutex
	var cli []string
	cliDone := make(chan struct{})
	go func() {
		for l := range toCli {
			cliMu.Lock()
			cli = append(cli, l)
			cliMu.Unlock()
		}
		close(cliDone)
	}()
	if err := <-loopDone; err != io.EOF {
		t.Fatalf("clientLoop: %v", err)
	}
	// All calls read were registered; wait for their gates to write.
	r.gates.Wait()
	sw.Close()
	var got []string
	for l := range toSrv {
		got = append(got, l)
	}
	seenCall := map[string]int{}
	pos := map[int]int{} // call id -> position at server
	var ordered []string
	for i, l := range got {
		var m struct {
			ID     json.RawMessage
			Method string
		}
		json.Unmarshal([]byte(l), &m)
		switch {
		case m.Method == "tools/call":
			seenCall[l]++
			var id int
			json.Unmarshal(m.ID, &id)
			pos[id] = i
			if !wantCalls[l] {
				t.Fatalf("round %d: unexpected call at server: %s", round, l)
			}
		case m.Method == "notifications/cancelled":
			target := cancelOf[l]
			if p, ok := pos[target]; !ok && !denied[target] {
				// the call must not come later
				for _, later := range got[i:] {
					if later == fmt.Sprint(target) {
						_ = p
					}
				}
				for j := i + 1; j < len(got); j++ {
					if strings.Contains(got[j], fmt.Sprintf(`"id":%d,"method":"tools/call"`, target)) {
						t.Fatalf("round %d: cancel of %d reached the server before its call", round, target)
					}
				}
			}
		default:
			ordered = append(ordered, l)
		}
	}
	for l := range wantCalls {
		if seenCall[l] != 1 {
			// A cancelled allowed call may be refused by a gate seeing ctx cancelled (sleep kind).
			var m struct{ ID int }
			json.Unmarshal([]byte(l), &m)
			cancelled := false
			for _, tgt := range cancelOf {
				cancelled = cancelled || tgt == m.ID
			}
			if !(cancelled && seenCall[l] == 0) {
				t.Fatalf("round %d: call seen %d times at server: %s", round, seenCall[l], l)
			}
		}
	}
	if len(ordered) != len(wantOrdered) {
		t.Fatalf("round %d: %d ordered messages at server, want %d", round, len(ordered), len(wantOrdered))
	}
	for i := range ordered {
		if ordered[i] != wantOrdered[i] {
			t.Fatalf("round %d: ordered message %d: got %s want %s", round, i, ordered[i], wantOrdered[i])
		}
	}
	// Denied calls: exactly one tool error each, unless cancelled.
	r.stop()
	rw.Close()
	<-cliDone
	cliMu.Lock()
	defer cliMu.Unlock()
	answers := map[int]int{}
	for _, l := range cli {
		var m struct{ ID int }
		json.Unmarshal([]byte(l), &m)
		answers[m.ID]++
		if strings.Contains(l, "X") || strings.Contains(l, "garbage") {
			t.Fatalf("round %d: client got mutated id: %s", round, l)
		}
	}
	for id := range denied {
		cancelled := false
		for _, tgt := range cancelOf {
			cancelled = cancelled || tgt == id
		}
		if answers[id] != 1 && !(cancelled && answers[id] == 0) {
			t.Fatalf("round %d: denied call %d answered %d times", round, id, answers[id])
		}
	}
	ow.Close()
}

// TestHandoffCancelMidway cancels the relay's context while calls are
// being decided and the client keeps writing; then closes the input. The
// loop must end, with no two readers at once (race detector) and no hang.
func TestHandoffCancelMidway(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		for round := range 40 {
			gate := &stressGate{}
			cr, cw := io.Pipe()
			rr, rw := io.Pipe()
			sr, sw := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			r := newRelay(ctx, rw, sw, gate, options{maxMsg: 1 << 20, maxDepth: 64, maxReqs: 1 << 20, log: testLogger(t)})
			loopDone := make(chan error, 1)
			go func() { loopDone <- r.clientLoop(cr) }()
			go io.Copy(io.Discard, rr)
			go io.Copy(io.Discard, sr)
			kinds := []string{"fast", "spin", "yield", "sleep", "deny"}
			go func() {
				for i := range 400 {
					l := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s-%d"}}`+"\n", i, kinds[rand.IntN(len(kinds))], i)
					if _, err := io.WriteString(cw, l); err != nil {
						return
					}
					if i == 100+round {
						cancel()
					}
				}
				cw.Close()
			}()
			select {
			case <-loopDone:
			case <-time.After(20 * time.Second):
				t.Fatalf("round %d: clientLoop did not end", round)
			}
			r.stop()
			cancel()
			r.gates.Wait()
			rw.Close()
			sw.Close()
		}
	}
}
