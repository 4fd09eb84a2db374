package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegis-mcp/aegis/internal/approval"
	"github.com/aegis-mcp/aegis/internal/gateway"
)

// An Elicitor puts aegis's questions to the person at the MCP client
// (DESIGN.md R21): while a call is held for a person's approval, the relay
// sends the client an elicitation/create request of its own, showing the
// server, the tool, every argument (secrets redacted) and what aegis
// derived, and the client's accept or decline answers the question in the
// approval store, as `aegis approvals` would. The question stays open to
// the other channels: whichever answers first decides, and the others are
// cancelled.
//
// Only a client that declared the elicitation capability in its
// initialize is asked, in the request form of protocol revisions before
// 2026-07-28. The relay's own requests carry string ids that begin
// "aegis-approval-" and end in 64 random bits, so no server can name one;
// the client's answer to them goes to the Elicitor, never to the server.
type Elicitor struct {
	store *approval.Store
	by    string // who answers at the client: the session's principal

	mu      sync.Mutex
	r       *relay
	able    bool              // the client declared elicitation
	pending map[string]string // our request's id (its key, unescaped) → the approval's id
}

// NewElicitor returns an Elicitor that answers in store, as principal.
func NewElicitor(store *approval.Store, principal string) *Elicitor {
	return &Elicitor{store: store, by: principal, pending: map[string]string{}}
}

// attach gives the Elicitor its relay.
func (e *Elicitor) attach(r *relay) {
	e.mu.Lock()
	e.r = r
	e.mu.Unlock()
}

// sawInitialize notes whether the client's initialize declares
// elicitation.
func (e *Elicitor) sawInitialize(params []byte) {
	var p struct {
		Capabilities struct {
			Elicitation json.RawMessage `json:"elicitation"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	el := bytes.TrimSpace(p.Capabilities.Elicitation)
	e.mu.Lock()
	e.able = len(el) > 0 && el[0] == '{'
	e.mu.Unlock()
}

// Ask puts req to the person at the client, if the client can be asked,
// and returns what to call once the question is settled: it withdraws the
// request if the client has not answered it. It is gateway.Approvals'
// Asked.
func (e *Elicitor) Ask(req *approval.Request) (settled func()) {
	e.mu.Lock()
	r, able := e.r, e.able
	e.mu.Unlock()
	if r == nil || !able {
		return func() {}
	}
	var nonce [8]byte
	rand.Read(nonce[:])
	id := `"aegis-approval-` + req.ID + "-" + hex.EncodeToString(nonce[:]) + `"`
	params, err := elicitParams(req, "")
	if err != nil {
		return func() {}
	}
	// Keyed as the relay keys ids: unescaped, so that a client that
	// writes the id back with escapes still answers this question.
	key, _ := responseKey([]byte(id))
	e.mu.Lock()
	e.pending[key] = req.ID
	e.mu.Unlock()
	r.toClient(append(append(append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"method":"elicitation/create","params":`...), params...), "}\n"...))
	return func() {
		e.mu.Lock()
		_, open := e.pending[key]
		delete(e.pending, key)
		e.mu.Unlock()
		if open {
			r.toClient(append(append([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`), id...),
				`,"reason":"answered elsewhere, or no longer waiting"}}`+"\n"...))
		}
	}
}

// answer takes the client's response m if it answers one of the
// Elicitor's requests, and reports whether it did.
func (e *Elicitor) answer(line []byte, m message) bool {
	if len(m.id) == 0 || m.id[0] != '"' {
		return false
	}
	key, _ := responseKey(m.id)
	e.mu.Lock()
	apID, ok := e.pending[key]
	delete(e.pending, key)
	e.mu.Unlock()
	if !ok {
		return false
	}
	if !m.result.ok() {
		return true // the client could not ask: the other channels remain
	}
	var res struct {
		Action  string `json:"action"`
		Content struct {
			Scope string `json:"scope"`
		} `json:"content"`
	}
	if json.Unmarshal(m.result.of(line), &res) != nil {
		return true
	}
	a := approval.Answer{By: e.by, Channel: approval.ChannelElicitation}
	switch res.Action {
	case "accept":
		sc, err := approval.ParseScope(res.Content.Scope)
		if res.Content.Scope == "" {
			sc, err = approval.ScopeCall, nil
		}
		if err != nil {
			return true // an answer the question did not offer answers nothing
		}
		a.Approve, a.Scope = true, sc
	case "decline":
	default:
		return true // cancel, or nothing known: the question stays open
	}
	go e.store.Answer(context.Background(), apID, a)
	return true
}

// elicitParams are the params of the elicitation that asks req; mode
// names its mode (revision 2025-11-25 and later), "" none.
func elicitParams(req *approval.Request, mode string) ([]byte, error) {
	p := map[string]any{
		"message": question(req),
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"scope": map[string]any{
					"type":      "string",
					"title":     "Approve for",
					"enum":      []string{string(approval.ScopeCall), string(approval.ScopeSession)},
					"enumNames": []string{"this call only", "the rest of this session, for the same capabilities"},
					"default":   string(approval.ScopeCall),
				},
			},
			"required": []string{"scope"},
		},
	}
	if mode != "" {
		p["mode"] = mode
	}
	return json.Marshal(p)
}

// question is what the person reads: the call, every argument, what aegis
// derived, and why it asks.
func question(req *approval.Request) string {
	var b strings.Builder
	what := "call " + req.Server + "/" + req.Tool
	if req.Method != "" {
		what = req.Method + " " + req.Tool + " on " + req.Server
	}
	fmt.Fprintf(&b, "aegis: approve this %s?\n\n", what)
	fmt.Fprintf(&b, "Arguments (secrets redacted): %s\n", req.Arguments)
	if len(req.Caps) > 0 {
		b.WriteString("It would:\n")
		for _, c := range req.Caps {
			fmt.Fprintf(&b, "  - %s\n", c)
		}
	}
	fmt.Fprintf(&b, "Asked because: %s\n", req.Reason)
	fmt.Fprintf(&b, "(approval %s; it can also be answered with `aegis approvals`)", req.ID)
	return b.String()
}

// progressToken returns the progressToken of a request's _meta, raw, if
// it is a string or a number; else nil.
func progressToken(meta []byte) []byte {
	if len(meta) == 0 || meta[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return nil
	}
	t := bytes.TrimSpace(m["progressToken"])
	if len(t) == 0 || !(t[0] == '"' || t[0] == '-' || t[0] >= '0' && t[0] <= '9') {
		return nil
	}
	return bytes.Clone(t)
}

// waitingProgress returns what turns a held call's wait into progress
// notifications under the progress token of meta (the call's _meta): each
// with a greater progress, and a message saying what it waits for. A
// token that is not a string or a number gets none.
func (r *relay) waitingProgress(meta []byte) gateway.Waiting {
	var n atomic.Int64
	var once sync.Once
	var token []byte
	return func(id string, left time.Duration) {
		once.Do(func() { token = progressToken(meta) })
		if token == nil {
			return
		}
		msg := fmt.Sprintf("waiting for a person's approval (aegis approvals approve %s), %v left", id, left.Round(time.Second))
		b := append([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`), token...)
		b = strconv.AppendInt(append(b, `,"progress":`...), n.Add(1), 10)
		b = appendString(append(b, `,"message":`...), msg)
		r.toClient(append(b, "}}\n"...))
	}
}
