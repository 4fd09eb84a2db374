package proxy

import (
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// serverGate is a testGate that also decides the server's requests,
// refusing the methods in refuse, and records those it saw.
type serverGate struct {
	*testGate
	refuse map[string]string
	mu     sync.Mutex
	seen   []string
}

func (g *serverGate) ServerRequest(_ context.Context, method string, params json.RawMessage) (Verdict, error) {
	g.mu.Lock()
	g.seen = append(g.seen, method+" "+string(params))
	g.mu.Unlock()
	if reason, ok := g.refuse[method]; ok {
		return Verdict{Reason: reason}, nil
	}
	return Verdict{Forward: true}, nil
}

// TestRelayDecidesEveryMethod: a request that acts goes through the gate
// with its method and params as sent; a refused one never reaches the
// server and is answered with a JSON-RPC error holding the reason; the
// protocol's housekeeping passes without the gate.
func TestRelayDecidesEveryMethod(t *testing.T) {
	gate := &testGate{deny: map[string]string{"prompts/get": "no prompts here", "x-vendor/thing": "unknown method"}}
	h := newHarness(t, gate)

	read := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}`
	h.fromClient(read)
	h.serverGetsOnly(read) // let through: byte for byte
	for i, refused := range []struct{ line, id, reason string }{
		{`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"run","arguments":{"cmd":"id"}}}`, "2", "no prompts here"},
		{`{"jsonrpc":"2.0","id":"v","method":"x-vendor/thing","params":[1,2]}`, `"v"`, "unknown method"},
	} {
		h.fromClient(refused.line, ping(i))
		wantError(t, h.clientGets(), refused.id, codeRefused, refused.reason)
		h.serverGetsOnly(ping(i))
	}
	list := `{"jsonrpc":"2.0","id":3,"method":"resources/list"}`
	h.fromClient(list)
	h.serverGetsOnly(list)

	var got []string
	for _, c := range gate.seen() {
		got = append(got, c.Method+" "+string(c.Params))
	}
	want := []string{
		`resources/read {"uri":"file:///etc/passwd"}`,
		`prompts/get {"name":"run","arguments":{"cmd":"id"}}`,
		`x-vendor/thing [1,2]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("gated\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRelayRefusesTaskAugmentedRequests: a task's result would come back
// through tasks/result, past the checks.
func TestRelayRefusesTaskAugmentedRequests(t *testing.T) {
	h := newHarness(t, &testGate{})
	h.fromClient(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"u","task":{}}}`, ping(1))
	wantError(t, h.clientGets(), "1", codeInvalidParams, "task-augmented")
	h.serverGetsOnly(ping(1))
}

// TestRelayChecksEveryResult: the result of a request of another method
// passes the result check, and a withheld one becomes a JSON-RPC error.
func TestRelayChecksEveryResult(t *testing.T) {
	gate := &checkingGate{testGate: &testGate{}, result: func(c *Call, res json.RawMessage) (json.RawMessage, error) {
		if strings.Contains(string(res), "SECRET") {
			return nil, &Withheld{Reason: "aegis:dlp: a secret"}
		}
		return nil, nil
	}}
	h := newHarness(t, gate)
	h.fromClient(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"u"}}`)
	h.serverGets()
	h.fromServer(`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","text":"SECRET"}]}}`)
	wantError(t, h.clientGets(), "1", codeRefused, "aegis:dlp: a secret")
	h.fromClient(`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"p"}}`)
	h.serverGets()
	ok := `{"jsonrpc":"2.0","id":2,"result":{"messages":[]}}`
	h.fromServer(ok)
	h.clientGetsOnly(ok)
}

// TestRelayBatchWithDecidedRequest: a batch may not carry a request aegis
// decides past it.
func TestRelayBatchWithDecidedRequest(t *testing.T) {
	h := newHarness(t, &testGate{})
	h.fromClient(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"u"}}]`, ping(1))
	if got := h.clientGets(); !strings.Contains(got, "resources/read, which aegis decides") {
		t.Errorf("client got %s", got)
	}
	h.serverGetsOnly(ping(1))
}

// TestRelayDecidesServerRequests: the server's requests go through the
// gate; a refused one never reaches the client, and the server is
// answered; ping passes unasked.
func TestRelayDecidesServerRequests(t *testing.T) {
	gate := &serverGate{testGate: &testGate{}, refuse: map[string]string{"sampling/createMessage": "no sampling"}}
	h := newHarness(t, gate)
	sampling := `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":9}}`
	h.fromServer(sampling)
	wantError(t, h.serverGets(), `"s1"`, codeRefused, "no sampling")
	roots := `{"jsonrpc":"2.0","id":"s2","method":"roots/list"}`
	h.fromServer(roots)
	h.clientGetsOnly(roots)
	sping := `{"jsonrpc":"2.0","id":"s3","method":"ping"}`
	h.fromServer(sping)
	h.clientGetsOnly(sping)
	// In a batch too: the refused element is answered, the rest relayed.
	h.fromServer(`[` + sampling + `,` + roots + `]`)
	wantError(t, h.serverGets(), `"s1"`, codeRefused, "no sampling")
	h.clientGetsOnly(roots)
	gate.mu.Lock()
	defer gate.mu.Unlock()
	want := []string{`sampling/createMessage {"messages":[],"maxTokens":9}`, "roots/list ", `sampling/createMessage {"messages":[],"maxTokens":9}`, "roots/list "}
	if strings.Join(gate.seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("decided\n%s\nwant\n%s", strings.Join(gate.seen, "\n"), strings.Join(want, "\n"))
	}
}

// TestRelayBoundsAnswersToADeafServer: a server that sends requests aegis
// refuses, and reads nothing, holds at most maxReqs answers (and their
// goroutines) in the relay; the rest are dropped.
func TestRelayBoundsAnswersToADeafServer(t *testing.T) {
	gate := &serverGate{testGate: &testGate{}, refuse: map[string]string{"sampling/createMessage": "no"}}
	sr, sw := io.Pipe() // nobody reads sr: the server is deaf
	r := newRelay(context.Background(), io.Discard, sw, gate, options{maxMsg: 1 << 20, maxDepth: 64, maxReqs: 8, log: testLogger(t)})
	for i := range 50 {
		line := []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"sampling/createMessage","params":{}}`)
		m, err := parseMessage(line, 64)
		if err != nil {
			t.Fatal(err)
		}
		if r.serverRequest(line, m) {
			t.Fatal("a refused request was passed on")
		}
	}
	if n := r.srvAnswering.Load(); n != 8 {
		t.Errorf("%d answers held for a deaf server, want the bound, 8", n)
	}
	sr.Close() // the writes fail; the goroutines end
	for r.srvAnswering.Load() > 0 {
		runtime.Gosched()
	}
}
