// Package serve is aegis's MCP front end over HTTP (`aegis serve`): the
// Streamable HTTP transport of protocol revisions 2025-03-26 to
// 2025-11-25, one path per configured server (/mcp/NAME), in front of the
// same relay and pipeline as `aegis run`.
//
// Each MCP session is its own relay and its own instance of the server,
// started when the session's initialize arrives and stopped when the
// session ends (DELETE, idle, shutdown, or the server's exit): sessions of
// different principals never share a server process, nor provenance, caps,
// taint or approvals, which live in the session's gateway.Session. A
// session belongs to the principal that opened it, with the roles it
// had; a request naming it with another identity, or other roles, is
// answered as if it did not exist.
//
// The transport is aegis's own, not the Go SDK's: the relay is byte
// faithful, and so is the way to it. A POSTed message is handed to the
// relay as it came (compacted onto one line, the relay's framing); each
// message the relay writes to the client goes, as written, to the POST of
// the request it answers or whose progress it reports, and anything else
// (the server's own requests and notifications, aegis's questions) to the
// session's GET stream, else to an open POST stream, else it waits, in a
// bounded backlog, for one.
package serve

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aegis-mcp/aegis/internal/proxy"
)

// Identity is who a request is from, as the authentication in front of
// the handler established it.
type Identity struct {
	Principal string
	Roles     []string
}

// An Upstream is what one session's relay runs: the server's command (not
// started, its standard streams nil) or, for a server reached from aegis's
// own process, its bridge; the gate that decides for the session, the
// relay's options, and what to call once the relay ended.
type Upstream struct {
	Cmd     *exec.Cmd
	Bridge  proxy.Bridge
	Gate    proxy.Gate
	Options *proxy.Options
	Close   func()
}

// A Server is one configured server, served at /mcp/NAME: Start makes
// the upstream of a new session.
type Server struct {
	Start func(ctx context.Context, s Started) (*Upstream, error)
}

// Started is a session being started: its id, who it is for, and
// whether it is the relay of who's stateless requests (revision
// 2026-07-28) rather than one MCP session.
type Started struct {
	ID        string
	Who       Identity
	Stateless bool
}

// Config configures a [Handler].
type Config struct {
	Servers map[string]*Server
	// Who returns the identity the authentication in front of the
	// handler put on the request; false refuses it (401).
	Who func(*http.Request) (Identity, bool)
	// Origins are the browser origins allowed besides the request's own
	// host: a request with another Origin header is refused (DNS
	// rebinding, R28).
	Origins []string
	// Hosts, if not empty, are the only host names or IP addresses a
	// request's Host header may name (with any port); a request naming
	// another is refused (403). A page that DNS rebinding points at the
	// listener names its own host, and is then its own origin, which the
	// Origin check lets in: only the Host tells. Empty: any host, for a
	// listener whose names aegis cannot know (behind a proxy).
	Hosts []string
	// IdleTimeout ends a session without requests or streams for that
	// long; MaxSessions caps the sessions open at once (stateless relays
	// included), and MaxSessionsPerPrincipal those of one principal, so
	// that one principal cannot take them all from the others (zero: a
	// quarter of MaxSessions, at least one).
	IdleTimeout             time.Duration
	MaxSessions             int
	MaxSessionsPerPrincipal int
	// MaxMessageBytes caps one POSTed message (the relay's cap too).
	MaxMessageBytes int64
	// BodyTimeout bounds the reading of one POSTed message.
	BodyTimeout time.Duration
	// MaxDepth is the relay's nesting cap, which messages are read with.
	MaxDepth int
	Logger   *slog.Logger
	// Observe, if set, is told of each HTTP request's outcome, for
	// metrics: the server's name ("" when none matched) and the status.
	Observe func(server string, status int)
	// Ended, if set, is told of each session's end: err is the relay's
	// (nil when the session ended cleanly) or the start's.
	Ended func(server, session string, err error)
}

// Defaults.
const (
	DefaultIdleTimeout     = 30 * time.Minute
	DefaultMaxSessions     = 1000
	DefaultMaxMessageBytes = proxy.DefaultMaxMessageBytes
	// maxBacklog and maxBacklogBytes bound the messages that wait for a
	// stream to the client, in number and in bytes (a message may be
	// MaxMessageBytes long: a thousand of them would be gigabytes); past
	// either the oldest is dropped, and said. The newest always waits.
	maxBacklog      = 1024
	maxBacklogBytes = 16 << 20
	// DefaultBodyTimeout bounds the reading of one POSTed message.
	DefaultBodyTimeout = 30 * time.Second
	// keepAlive is how often an idle stream gets an SSE comment, so that
	// a proxy on the way does not close it.
	keepAlive = 25 * time.Second
)

// revisions are the protocol revisions this transport serves with
// sessions; revision 2026-07-28 is served statelessly (stateless.go).
var revisions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// A Handler serves the configured servers.
type Handler struct {
	cfg Config
	log *slog.Logger

	mu        sync.Mutex
	sessions  map[string]*session
	owned     map[string]int      // the sessions open, by principal
	stateless map[string]*session // the stateless relays, by server, principal and roles
	startMu   sync.Mutex          // one stateless relay starts at a time
	legacy    map[string]bool     // servers that speak no stateless revision, by name
	closing   bool
	relays    sync.WaitGroup
	stop      chan struct{}
}

// New returns a Handler; Close (or Shutdown) ends its sessions.
func New(c *Config) *Handler {
	h := &Handler{cfg: *c, sessions: map[string]*session{}, owned: map[string]int{}, stateless: map[string]*session{}, legacy: map[string]bool{}, stop: make(chan struct{})}
	if h.cfg.IdleTimeout <= 0 {
		h.cfg.IdleTimeout = DefaultIdleTimeout
	}
	if h.cfg.MaxSessions <= 0 {
		h.cfg.MaxSessions = DefaultMaxSessions
	}
	if h.cfg.MaxSessionsPerPrincipal <= 0 {
		h.cfg.MaxSessionsPerPrincipal = max(h.cfg.MaxSessions/4, 1)
	}
	if h.cfg.MaxMessageBytes <= 0 {
		h.cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if h.cfg.BodyTimeout <= 0 {
		h.cfg.BodyTimeout = DefaultBodyTimeout
	}
	if h.cfg.MaxDepth <= 0 {
		h.cfg.MaxDepth = 256
	}
	h.log = h.cfg.Logger
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	go h.reap()
	return h
}

// Sessions returns the number of sessions open.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// Shutdown stops taking sessions, ends every session (each relay closes
// its server's input, relays what the server still answers, and stops
// it), and waits for the relays until ctx is done. A request in flight
// gets its answer, or the relay's error saying the server ended.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	if !h.closing {
		h.closing = true
		close(h.stop)
	}
	all := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		all = append(all, s)
	}
	h.mu.Unlock()
	for _, s := range all {
		s.end()
	}
	done := make(chan struct{})
	go func() { h.relays.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		// Out of time: the servers are stopped now, and what is still in
		// flight is answered with the relay's error.
		for _, s := range all {
			s.kill()
		}
		<-done
		return ctx.Err()
	}
}

// reap ends the sessions idle for longer than IdleTimeout.
func (h *Handler) reap() {
	every := min(h.cfg.IdleTimeout/4, time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case now := <-t.C:
			h.mu.Lock()
			var idle []*session
			for _, s := range h.sessions {
				if s.idleSince(now) > h.cfg.IdleTimeout {
					idle = append(idle, s)
				}
			}
			h.mu.Unlock()
			for _, s := range idle {
				h.log.Info("serve: session idle, ended", "server", s.server, "session", s.id)
				s.end()
			}
		}
	}
}

// ServeHTTP serves /mcp/NAME.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/mcp/")
	srv := h.cfg.Servers[name]
	if !ok || srv == nil {
		h.fail(w, "", http.StatusNotFound, "no MCP server at %s: the servers are at /mcp/NAME", r.URL.Path)
		return
	}
	if !h.hostAllowed(r.Host) {
		h.fail(w, name, http.StatusForbidden, "host %q is not served here", r.Host)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !h.originAllowed(o, r) {
		h.fail(w, name, http.StatusForbidden, "origin %q is not allowed", o)
		return
	}
	who, ok := h.cfg.Who(r)
	if !ok {
		h.fail(w, name, http.StatusUnauthorized, "not authenticated")
		return
	}
	v := r.Header.Get("Mcp-Protocol-Version")
	if v == statelessRevision {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			h.fail(w, name, http.StatusMethodNotAllowed, "revision %s has no GET stream and no sessions: every message is a POST", statelessRevision)
			return
		}
		h.postStateless(w, r, name, srv, who)
		return
	}
	if v != "" && !slices.Contains(revisions, v) {
		h.fail(w, name, http.StatusBadRequest, "protocol version %q is not served here (served: %s, %s)", v, strings.Join(revisions, ", "), statelessRevision)
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r, name, srv, who)
	case http.MethodGet:
		s, ok := h.lookup(w, r, name, who)
		if ok {
			h.observe(name, s.serveGET(w, r))
		}
	case http.MethodDelete:
		s, ok := h.lookup(w, r, name, who)
		if ok {
			s.end()
			w.WriteHeader(http.StatusNoContent)
			h.observe(name, http.StatusNoContent)
		}
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		h.fail(w, name, http.StatusMethodNotAllowed, "method %s: want POST, GET or DELETE", r.Method)
	}
}

func (h *Handler) observe(server string, status int) {
	if h.cfg.Observe != nil {
		h.cfg.Observe(server, status)
	}
}

// hostAllowed reports whether a request's Host header names one of the
// configured hosts, in any case and with any port.
func (h *Handler) hostAllowed(hostport string) bool {
	if len(h.cfg.Hosts) == 0 {
		return true
	}
	host := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		host = hh
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return slices.ContainsFunc(h.cfg.Hosts, func(a string) bool { return strings.EqualFold(a, host) })
}

// originAllowed reports whether a request from browser origin o may
// call: the request's own origin, or one the configuration lists.
func (h *Handler) originAllowed(o string, r *http.Request) bool {
	if slices.Contains(h.cfg.Origins, o) {
		return true
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return o == scheme+"://"+r.Host
}

// fail answers a request the transport refuses, with a plain reason.
func (h *Handler) fail(w http.ResponseWriter, server string, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, "aegis: "+msg+"\n")
	h.observe(server, status)
}

// failRPC answers a request whose message is refused with a JSON-RPC
// error, so that a client that reads the body sees the reason too.
func (h *Handler) failRPC(w http.ResponseWriter, server string, status int, id []byte, code int, format string, args ...any) {
	if len(id) == 0 {
		id = []byte("null")
	}
	msg, _ := json.Marshal("aegis: " + fmt.Sprintf(format, args...))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", id, code, msg)
	h.observe(server, status)
}

// lookup finds the session the request names, for who; it answers the
// request itself when there is none.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request, server string, who Identity) (*session, bool) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		h.fail(w, server, http.StatusBadRequest, "no Mcp-Session-Id: initialize first")
		return nil, false
	}
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	// Another principal's session is answered as one that does not
	// exist: its id tells nobody else anything. So is the principal's
	// own for a token with other roles: the session decides with the
	// roles it was opened with, which a token that lost one must not
	// keep using.
	if s == nil || s.stateless || s.server != server || s.who.Principal != who.Principal || !sameRoles(s.who.Roles, who.Roles) || s.isDone() {
		h.fail(w, server, http.StatusNotFound, "no session %q here: initialize a new one", truncate(id, 64))
		return nil, false
	}
	return s, true
}

// sameRoles reports whether a and b hold the same roles, in any order.
func sameRoles(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// JSON-RPC error codes of the transport's own refusals.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
)

// post serves a POSTed message: a request gets its answer in the
// response (as JSON, or as an SSE stream with the messages about it); a
// notification or a response is accepted (202).
func (h *Handler) post(w http.ResponseWriter, r *http.Request, name string, srv *Server, who Identity) {
	line, msg, ok := h.readMessage(w, r, name)
	if !ok {
		return
	}
	var s *session
	var err error
	if r.Header.Get("Mcp-Session-Id") == "" && msg.Kind == proxy.Request && msg.Method == "initialize" {
		s, err = h.open(r.Context(), name, srv, who, false)
		if err != nil {
			status := http.StatusServiceUnavailable
			h.log.Warn("serve: a session could not start", "server", name, "principal", who.Principal, "err", err)
			h.failRPC(w, name, status, msg.ID, codeInvalidRequest, "the session could not start: %v", err)
			return
		}
		w.Header().Set("Mcp-Session-Id", s.id)
	} else {
		var ok bool
		if s, ok = h.lookup(w, r, name, who); !ok {
			return
		}
	}
	if msg.Kind != proxy.Request {
		if err := s.send(line); err != nil {
			h.fail(w, name, http.StatusNotFound, "the session has ended: %v", err)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		h.observe(name, http.StatusAccepted)
		return
	}
	h.observe(name, s.call(w, r, line, msg, nil))
}

// readMessage reads a POSTed message: one JSON-RPC message, within the
// size and time bounds, whose Mcp-Method and Mcp-Name headers agree with
// it. It answers the request itself when ok is false.
func (h *Handler) readMessage(w http.ResponseWriter, r *http.Request, name string) (line []byte, msg proxy.Inspected, ok bool) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
		h.fail(w, name, http.StatusUnsupportedMediaType, "Content-Type %q: want application/json", ct)
		return nil, msg, false
	}
	// A client that sends its body slowly holds a connection and a
	// goroutine: it has BodyTimeout to finish.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(h.cfg.BodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxMessageBytes))
	if err != nil {
		// The deadline stays: the server would otherwise wait for the
		// rest of the body before it answers.
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			h.fail(w, name, http.StatusRequestEntityTooLarge, "message larger than %d bytes", mbe.Limit)
			return nil, msg, false
		}
		h.fail(w, name, http.StatusBadRequest, "reading the body: %v", err)
		return nil, msg, false
	}
	rc.SetReadDeadline(time.Time{})
	line, err = oneLine(body)
	if err != nil {
		h.failRPC(w, name, http.StatusBadRequest, nil, codeParse, "%v", err)
		return nil, msg, false
	}
	msg, err = proxy.Inspect(line, h.cfg.MaxDepth)
	if err != nil {
		h.failRPC(w, name, http.StatusBadRequest, msg.ID, codeInvalidRequest, "invalid message: %v", err)
		return nil, msg, false
	}
	if msg.Kind == proxy.Batch {
		h.failRPC(w, name, http.StatusBadRequest, nil, codeInvalidRequest, "batches are not served (revision 2025-06-18 removed them): send one message per request")
		return nil, msg, false
	}
	if err := headersAgree(r, msg); err != nil {
		h.failRPC(w, name, http.StatusBadRequest, msg.ID, codeInvalidRequest, "%v", err)
		return nil, msg, false
	}
	return line, msg, true
}

// oneLine is body as the relay's framing wants it: one line. JSON
// outside strings has no meaningful whitespace, so a pretty-printed
// message is compacted; one already on a line goes as it came.
func oneLine(body []byte) ([]byte, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, errors.New("empty body: want one JSON-RPC message")
	}
	if bytes.IndexByte(body, '\n') < 0 && bytes.IndexByte(body, '\r') < 0 {
		return body, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, body); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	return b.Bytes(), nil
}

// headersAgree checks the Mcp-Method and Mcp-Name headers, when sent,
// against the message: a router that reads the headers and aegis, which
// reads the body, must never see two different calls.
func headersAgree(r *http.Request, msg proxy.Inspected) error {
	if vs := r.Header.Values("Mcp-Method"); len(vs) > 0 {
		if len(vs) > 1 || vs[0] != msg.Method {
			return fmt.Errorf("the Mcp-Method header %q disagrees with the message's method %q", strings.Join(vs, ", "), msg.Method)
		}
	}
	if vs := r.Header.Values("Mcp-Name"); len(vs) > 0 {
		key := nameKey(msg.Method)
		var name string
		if raw := proxy.Member(msg.Params, key); len(raw) > 0 && raw[0] == '"' {
			json.Unmarshal(raw, &name)
		}
		if len(vs) > 1 || vs[0] != name {
			return fmt.Errorf("the Mcp-Name header %q disagrees with the message's %s %q", strings.Join(vs, ", "), key, name)
		}
	}
	return nil
}

// nameKey is the member of a request's params that its Mcp-Name header
// names: a resource's uri, else a tool's or prompt's name. aegis checks
// a client's header, and the bridge writes its own, by it.
func nameKey(method string) string {
	switch method {
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		return "uri"
	}
	return "name"
}

// open starts a new session of srv for who.
func (h *Handler) open(ctx context.Context, name string, srv *Server, who Identity, stateless bool) (*session, error) {
	var b [16]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	if stateless {
		// The same on every replica: what the session's state shares
		// across them (its caps) is keyed by it.
		id = statelessID(name, who)
	}
	h.mu.Lock()
	switch {
	case h.closing:
		h.mu.Unlock()
		return nil, errors.New("aegis is shutting down")
	case len(h.sessions) >= h.cfg.MaxSessions:
		h.mu.Unlock()
		return nil, fmt.Errorf("%d sessions are open, the most this aegis serves", h.cfg.MaxSessions)
	case h.owned[who.Principal] >= h.cfg.MaxSessionsPerPrincipal:
		h.mu.Unlock()
		return nil, fmt.Errorf("%d sessions of yours are open, the most this aegis serves one principal: end one (DELETE)", h.cfg.MaxSessionsPerPrincipal)
	}
	s := newSession(h, id, name, who)
	s.stateless = stateless
	h.sessions[id] = s
	h.owned[who.Principal]++
	h.relays.Add(1)
	h.mu.Unlock()
	// The relay outlives the request that opened the session.
	up, err := srv.Start(context.WithoutCancel(ctx), Started{ID: id, Who: who, Stateless: stateless})
	if err != nil {
		h.forget(s)
		h.relays.Done()
		if h.cfg.Ended != nil {
			h.cfg.Ended(name, id, err)
		}
		return nil, err
	}
	go func() {
		defer h.relays.Done()
		var err error
		if up.Bridge != nil {
			err = proxy.RunBridge(s.ctx, s.in, s, up.Bridge, up.Gate, up.Options)
		} else {
			err = proxy.Run(s.ctx, s.in, s, up.Cmd, up.Gate, up.Options)
		}
		if up.Close != nil {
			up.Close()
		}
		s.finish(err)
		h.forget(s)
		if err != nil {
			h.log.Warn("serve: a session's relay ended with an error", "server", name, "session", id, "err", err)
		}
		if h.cfg.Ended != nil {
			h.cfg.Ended(name, id, err)
		}
	}()
	return s, nil
}

func (h *Handler) forget(s *session) {
	h.mu.Lock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
		if h.owned[s.who.Principal]--; h.owned[s.who.Principal] <= 0 {
			delete(h.owned, s.who.Principal)
		}
	}
	for k, v := range h.stateless {
		if v == s {
			delete(h.stateless, k)
		}
	}
	h.mu.Unlock()
}
