package proxy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/approval"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestElicitorAnswers: the client's answer to aegis's own question
// answers the approval; what the question did not offer, an error, a
// cancel or an id aegis never sent answers nothing, and an answer to an
// id aegis never sent is not taken (it goes on to the server's checks).
func TestElicitorAnswers(t *testing.T) {
	for _, tt := range []struct {
		name   string
		result string // the client's response after "id":ID, ("" for the raw line below)
		raw    string // a whole line instead, with $ID
		taken  bool
		state  approval.State
		scope  approval.Scope
	}{
		{name: "accept", result: `"result":{"action":"accept","content":{"scope":"call"}}`, taken: true, state: approval.Approved, scope: approval.ScopeCall},
		{name: "accept for the session", result: `"result":{"action":"accept","content":{"scope":"session"}}`, taken: true, state: approval.Approved, scope: approval.ScopeSession},
		{name: "accept without content", result: `"result":{"action":"accept"}`, taken: true, state: approval.Approved, scope: approval.ScopeCall},
		{name: "decline", result: `"result":{"action":"decline"}`, taken: true, state: approval.Denied},
		{name: "cancel leaves it open", result: `"result":{"action":"cancel"}`, taken: true, state: approval.Pending},
		{name: "a scope never offered", result: `"result":{"action":"accept","content":{"scope":"forever"}}`, taken: true, state: approval.Pending},
		{name: "an action never offered", result: `"result":{"action":"yes"}`, taken: true, state: approval.Pending},
		{name: "an error", result: `"error":{"code":-32601,"message":"no"}`, taken: true, state: approval.Pending},
		{name: "an id aegis never sent", raw: `{"jsonrpc":"2.0","id":"aegis-approval-0000000000000000-0000000000000000","result":{"action":"accept"}}`, taken: false, state: approval.Pending},
		{name: "a number id", raw: `{"jsonrpc":"2.0","id":7,"result":{"action":"accept"}}`, taken: false, state: approval.Pending},
		{name: "the id written back with escapes", raw: "$ESCAPED", taken: true, state: approval.Denied},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := approval.Open(filepath.Join(t.TempDir(), "a.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			req := &approval.Request{ID: approval.NewID(), Created: time.Now(), Expires: time.Now().Add(time.Minute),
				Server: "fs", Tool: "write_file", Caps: []string{"fs.write /x"}, Reason: "asks", Arguments: []byte(`{}`)}
			if err := st.Put(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			e := NewElicitor(st, "alice")
			sent := &syncBuffer{}
			r := &relay{client: sent, clientGone: make(chan struct{}), log: testLogger(t)}
			e.attach(r)
			e.sawInitialize([]byte(`{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}`))
			settled := e.Ask(req)
			m, err := parseMessage([]byte(sent.String()), 64)
			if err != nil || string(m.method) != "elicitation/create" {
				t.Fatalf("sent %q (%v), want elicitation/create", sent.String(), err)
			}
			line := tt.raw
			if line == "$ESCAPED" {
				// "aegis-…" with its a written \u0061: the same id.
				esc := `"\u0061` + string(m.id[2:])
				line = `{"jsonrpc":"2.0","id":` + esc + `,"result":{"action":"decline"}}`
			}
			if line == "" {
				line = `{"jsonrpc":"2.0","id":` + string(m.id) + `,` + tt.result + `}`
			}
			am, err := parseMessage([]byte(line), 64)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.answer([]byte(line), am); got != tt.taken {
				t.Errorf("taken %v, want %v", got, tt.taken)
			}
			var ap *approval.Approval
			for range 100 { // the answer is stored from a goroutine of its own
				if ap, err = st.Get(context.Background(), req.ID); err == nil && ap.State != approval.Pending {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if ap.State != tt.state || (ap.Answer != nil && (ap.Answer.Scope != tt.scope || ap.Answer.Channel != approval.ChannelElicitation || ap.Answer.By != "alice")) {
				t.Errorf("approval %s %+v, want %s scope %q", ap.State, ap.Answer, tt.state, tt.scope)
			}
			before := len(sent.String())
			settled()
			if withdrawn := len(sent.String()) > before; withdrawn != !tt.taken {
				t.Errorf("withdrawn on settling: %v, want %v (only a question the client has not answered)", withdrawn, !tt.taken)
			}
		})
	}
}

// TestElicitorAsksOnlyAbleClients: a client that did not declare
// elicitation is not sent one.
func TestElicitorAsksOnlyAbleClients(t *testing.T) {
	for _, init := range []string{
		`{"capabilities":{}}`,
		`{"capabilities":{"elicitation":null}}`,
		`{"capabilities":{"elicitation":true}}`,
		`not json`,
	} {
		e := NewElicitor(nil, "alice")
		sent := &syncBuffer{}
		e.attach(&relay{client: sent, clientGone: make(chan struct{}), log: testLogger(t)})
		e.sawInitialize([]byte(init))
		e.Ask(&approval.Request{ID: "0123456789abcdef"})()
		if sent.String() != "" {
			t.Errorf("%s: sent %q, want nothing", init, sent.String())
		}
	}
}

// TestHeldCallProgress: a call held for a person's approval, sent with a
// progress token, gets progress notifications that say what it waits for,
// until the answer lets it through to the server.
func TestHeldCallProgress(t *testing.T) {
	defer func(d time.Duration) { gateway.WaitingEvery = d }(gateway.WaitingEvery)
	gateway.WaitingEvery = 20 * time.Millisecond
	p, err := policy.Parse("p.yaml", []byte("version: 1\nrules:\n  - {id: ask-echo, effect: ask, server: demo, tool: echo, unbound: true}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := gateway.New(p, []*gateway.Server{{Name: "demo"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := approval.Open(filepath.Join(t.TempDir(), "a.db"), &approval.Options{Poll: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	asked := make(chan string, 1)
	sess, err := eng.NewSession(&gateway.SessionConfig{Server: "demo", ID: "s", Principal: "alice", Origin: capability.Interactive,
		Approvals: &gateway.Approvals{Store: st, Timeout: time.Minute, Asked: func(r *approval.Request) func() { asked <- r.ID; return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rn := startRun(t, ctx, childCtx(t.Context(), "demo"), SessionGate(sess), nil)
	ev := newEvents()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, ev.clientOptions()).Connect(ctx, rn.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		id := <-asked
		// Two notifications, then the answer.
		for range 2 {
			if msg := <-ev.progress; !strings.Contains(msg, "waiting for a person's approval (aegis approvals approve "+id+")") {
				t.Errorf("progress %q", msg)
			}
		}
		if _, err := st.Answer(ctx, id, approval.Answer{Approve: true, Scope: approval.ScopeCall, By: "bob", Channel: approval.ChannelCLI}); err != nil {
			t.Error(err)
		}
	}()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}, Meta: mcp.Meta{"progressToken": "tok"}})
	if err != nil || res.IsError || textOf(t, res) != "hi" {
		t.Fatalf("held echo: %v %v", res, err)
	}
	cs.Close()
	rn.wait(t)
}
