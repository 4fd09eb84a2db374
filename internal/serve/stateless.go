package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/aegis-mcp/aegis/internal/proxy"
)

// This file serves revision 2026-07-28, whose requests are stateless:
// no initialize, no session id, no GET stream; every request is a POST
// carrying its revision and the client's capabilities in _meta, answered
// on its own response (JSON, or an SSE stream of that request's messages);
// the server asks the client for input inside input_required results, and
// its notifications reach a client through a subscriptions/listen request.
//
// aegis keeps one relay and one server instance per server and principal
// (and roles) for them, started by the first request and ended when idle:
// a principal's requests share its gateway session (provenance, caps,
// taint), and no two principals share anything. Two clients of one
// principal may use the same request ids at once, so aegis gives each
// request an id of its own ("aegis-N") on the way in and the client's
// back on the way out; the relay and the server see aegis's.

// statelessRevision is the revision served statelessly.
const statelessRevision = "2026-07-28"

// metaProtocolVersion is the _meta key of a request's revision.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// postStateless serves a POST of revision 2026-07-28.
func (h *Handler) postStateless(w http.ResponseWriter, r *http.Request, name string, srv *Server, who Identity) {
	line, msg, ok := h.readMessage(w, r, name)
	if !ok {
		return
	}
	if r.Header.Get("Mcp-Session-Id") != "" {
		h.failRPC(w, name, http.StatusBadRequest, msg.ID, codeInvalidRequest, "revision %s has no sessions: send no Mcp-Session-Id", statelessRevision)
		return
	}
	switch msg.Kind {
	case proxy.Response:
		h.failRPC(w, name, http.StatusBadRequest, msg.ID, codeInvalidRequest, "at revision %s a client answers nothing: the server asks in input_required results", statelessRevision)
		return
	case proxy.Request:
		if len(r.Header.Values("Mcp-Method")) == 0 {
			h.failRPC(w, name, http.StatusBadRequest, msg.ID, codeInvalidRequest, "revision %s requires the Mcp-Method header", statelessRevision)
			return
		}
		var rev string
		if raw := proxy.Member(proxy.Member(msg.Params, "_meta"), metaProtocolVersion); len(raw) > 0 && raw[0] == '"' {
			json.Unmarshal(raw, &rev)
		}
		if rev != statelessRevision {
			h.failRPC(w, name, http.StatusBadRequest, msg.ID, codeInvalidRequest, "the request's _meta names revision %q, its Mcp-Protocol-Version header %s", rev, statelessRevision)
			return
		}
	}
	if h.isLegacy(name) && msg.Kind == proxy.Request {
		// The server speaks the older revisions only: the client falls
		// back to initialize, as the revision says it does.
		data, _ := json.Marshal(map[string]any{"supported": revisions, "requested": statelessRevision})
		id := msg.ID
		msgText, _ := json.Marshal(fmt.Sprintf("aegis: server %q speaks revisions up to %s, not %s", name, revisions[len(revisions)-1], statelessRevision))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s,"data":%s}}`+"\n", id, codeUnsupportedProtocolVersion, msgText, data)
		h.observe(name, http.StatusBadRequest)
		return
	}
	s, err := h.statelessSession(r.Context(), name, srv, who)
	if err != nil {
		h.log.Warn("serve: a server could not start", "server", name, "principal", who.Principal, "err", err)
		h.failRPC(w, name, http.StatusServiceUnavailable, msg.ID, codeInvalidRequest, "the server could not start: %v", err)
		return
	}
	if msg.Kind == proxy.Notification {
		// A cancel names the client's id, which the relay never saw;
		// the request it cancels ends on its own, answered.
		if msg.Method != "notifications/cancelled" {
			if err := s.send(line); err != nil {
				h.fail(w, name, http.StatusServiceUnavailable, "the server has ended: %v", err)
				return
			}
		}
		w.WriteHeader(http.StatusAccepted)
		h.observe(name, http.StatusAccepted)
		return
	}
	n := s.next.Add(1)
	restore := slices.Clone(msg.ID)
	own := fmt.Appendf(nil, `"aegis-%d"`, n)
	line = proxy.WithMember(line, "id", own)
	msg.ID = own
	// So is its progress token, which two clients may share as well.
	var token []byte
	if meta := proxy.Member(msg.Params, "_meta"); meta != nil {
		if t := proxy.Member(meta, "progressToken"); t != nil {
			token = slices.Clone(t)
			ownToken := fmt.Appendf(nil, `"aegis-p-%d"`, n)
			params := proxy.WithMember(msg.Params, "_meta", proxy.WithMember(meta, "progressToken", ownToken))
			line = proxy.WithMember(line, "params", params)
			m, err := proxy.Inspect(line, h.cfg.MaxDepth)
			if err != nil { // not reached: one valid value replaced another
				h.failRPC(w, name, http.StatusBadRequest, restore, codeInvalidRequest, "invalid message: %v", err)
				return
			}
			msg = m
		}
	}
	h.observe(name, s.call(w, r, line, msg, &restored{id: restore, token: token}))
}

// restored is what aegis replaced in a stateless request and gives back
// in what the relay sends about it: the client's id, and its progress
// token (nil when it sent none).
type restored struct {
	id, token []byte
}

// statelessSession is the relay serving who's stateless requests to
// server name, started if need be.
func (h *Handler) statelessSession(ctx context.Context, name string, srv *Server, who Identity) (*session, error) {
	roles := slices.Clone(who.Roles)
	slices.Sort(roles)
	key := name + "\x00" + who.Principal + "\x00" + strings.Join(roles, "\x00")
	h.mu.Lock()
	s := h.stateless[key]
	h.mu.Unlock()
	if s != nil && !s.isDone() {
		return s, nil
	}
	// One start at a time: two first requests of a principal must not
	// start two servers.
	h.startMu.Lock()
	defer h.startMu.Unlock()
	h.mu.Lock()
	s = h.stateless[key]
	h.mu.Unlock()
	if s != nil && !s.isDone() {
		return s, nil
	}
	s, err := h.open(ctx, name, srv, who, true)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.stateless[key] = s
	h.mu.Unlock()
	return s, nil
}

// codeUnsupportedProtocolVersion is the JSON-RPC error of a revision the
// server does not speak, whose data lists those it does.
const codeUnsupportedProtocolVersion = -32022

// speaksNoStateless reports whether the error answer to a server/discover
// (raw JSON, nil for a result) says the server does not know it: method
// not found, or the revision refused.
func speaksNoStateless(errObj []byte) bool {
	var e struct {
		Code int `json:"code"`
	}
	if len(errObj) == 0 || json.Unmarshal(errObj, &e) != nil {
		return false
	}
	return e.Code == -32601 || e.Code == codeUnsupportedProtocolVersion
}

func (h *Handler) markLegacy(server string) {
	h.mu.Lock()
	h.legacy[server] = true
	h.mu.Unlock()
}

func (h *Handler) isLegacy(server string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.legacy[server]
}

// statelessID is the session id of who's stateless requests to server:
// derived, not drawn, so that every replica names it alike. It never
// leaves aegis as a session id (a session-id lookup refuses it).
func statelessID(server string, who Identity) string {
	roles := slices.Clone(who.Roles)
	slices.Sort(roles)
	h := sha256.New()
	for _, s := range append([]string{"aegis.stateless.v1", server, who.Principal}, roles...) {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return "stateless-" + hex.EncodeToString(h.Sum(nil)[:16])
}
