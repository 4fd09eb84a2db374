package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegis-mcp/aegis/internal/proxy"
)

// A session is one MCP session: its relay's input, and where the relay's
// messages to the client go.
type session struct {
	h          *Handler
	id, server string
	who        Identity
	// stateless marks the relay that serves one principal's requests of
	// revision 2026-07-28 (see stateless.go): its requests' ids are
	// aegis's own, and only listen streams take unrelated messages.
	stateless bool
	next      atomic.Int64 // the last id aegis gave a stateless request

	ctx    context.Context
	cancel context.CancelFunc
	in     *input     // what the relay reads
	inMu   sync.Mutex // one message into the relay at a time

	// partial holds what the relay wrote of a line not yet ended.
	partial []byte

	mu      sync.Mutex
	calls   map[string]*exchange // the POSTs waiting, by their request's id key
	tokens  map[string]*exchange // the same, by their progress token's key
	streams []*exchange          // the POSTs answering as SSE streams, oldest first
	get     *exchange            // the session's GET stream, if open
	backlog [][]byte             // messages no stream could take yet
	held    int                  // the bytes of backlog
	dropped int                  // messages the backlog dropped since it was last drained
	active  int                  // requests and streams open
	last    time.Time            // when the last one ended
	done    bool
	doneCh  chan struct{}
	err     error
}

// An exchange is one HTTP response the relay's messages go to: a POST's
// (whose request's answer ends it) or the session's GET stream.
type exchange struct {
	out  chan item
	gone chan struct{} // closed when the handler stopped reading out
	sse  bool
	// restore, if set, is what aegis replaced in a stateless request
	// (its id, its progress token): what the relay sends about it gets
	// the client's back.
	restore *restored
	// listen says the request is a subscriptions/listen: its stream takes
	// the server's notifications (stateless).
	listen bool
	// discover says the request is a stateless server/discover, whose
	// answer tells whether the server speaks the revision.
	discover bool
}

// An item is one message for an exchange; final marks the answer that
// ends a POST's.
type item struct {
	msg   []byte
	final bool
}

func newSession(h *Handler, id, server string, who Identity) *session {
	ctx, cancel := context.WithCancel(context.Background())
	return &session{
		h: h, id: id, server: server, who: who,
		ctx: ctx, cancel: cancel, in: newInput(),
		calls: map[string]*exchange{}, tokens: map[string]*exchange{},
		last: time.Now(), doneCh: make(chan struct{}),
	}
}

func newExchange(sse bool) *exchange {
	return &exchange{out: make(chan item, 64), gone: make(chan struct{}), sse: sse}
}

// deliver hands it to ex, unless ex's handler has gone; it reports
// whether ex took it.
func (ex *exchange) deliver(it item) bool {
	select {
	case ex.out <- it:
		return true
	case <-ex.gone:
		return false
	}
}

// send hands one message, one line, to the relay.
func (s *session) send(line []byte) error {
	s.inMu.Lock()
	defer s.inMu.Unlock()
	if s.isDone() {
		return errSessionEnded
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	return s.in.send(buf)
}

// end ends the session as its client would by closing its input: the
// relay answers what is in flight and stops the server.
func (s *session) end() {
	s.in.close()
}

// kill ends the session at once: the relay stops the server.
func (s *session) kill() {
	s.end()
	s.cancel()
}

// finish is called once the relay has returned.
func (s *session) finish(err error) {
	s.mu.Lock()
	s.done, s.err = true, err
	close(s.doneCh)
	s.mu.Unlock()
	s.in.end()
	s.cancel()
}

func (s *session) isDone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// idleSince says how long the session has had nothing open, at now.
func (s *session) idleSince(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active > 0 {
		return 0
	}
	return now.Sub(s.last)
}

// acceptsSSE reports whether the request's Accept header takes an SSE
// stream.
func acceptsSSE(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// call serves a POSTed request: it hands it to the relay and answers the
// POST with the relay's answer, as JSON, or as an SSE stream that also
// carries the messages about the request (its progress) and, when no
// other stream is open, the session's other messages. It returns the
// status written.
func (s *session) call(w http.ResponseWriter, r *http.Request, line []byte, msg proxy.Inspected, restore *restored) int {
	key, ok := proxy.IDKey(msg.ID)
	if !ok {
		s.h.failRPC(w, s.server, http.StatusBadRequest, msg.ID, codeInvalidRequest, "request id %.40s is not a string or an integer", msg.ID)
		return http.StatusBadRequest
	}
	ex := newExchange(acceptsSSE(r))
	ex.restore, ex.listen = restore, msg.Method == "subscriptions/listen"
	ex.discover = s.stateless && msg.Method == "server/discover"
	clientID := msg.ID
	if restore != nil {
		clientID = restore.id
	}
	var token string
	if t := proxy.Member(proxy.Member(msg.Params, "_meta"), "progressToken"); t != nil {
		token, _ = proxy.IDKey(t)
	}
	s.mu.Lock()
	switch {
	case s.done:
		s.mu.Unlock()
		s.h.fail(w, s.server, http.StatusNotFound, "the session has ended: initialize a new one")
		return http.StatusNotFound
	case s.calls[key] != nil:
		s.mu.Unlock()
		s.h.failRPC(w, s.server, http.StatusBadRequest, msg.ID, codeInvalidRequest, "request id %s is already in flight in this session", msg.ID)
		return http.StatusBadRequest
	}
	s.calls[key] = ex
	if token != "" && s.tokens[token] == nil {
		s.tokens[token] = ex
	} else {
		token = ""
	}
	if ex.sse {
		s.streams = append(s.streams, ex)
	}
	s.active++
	s.mu.Unlock()
	defer s.close(ex, key, token)

	if err := s.send(line); err != nil {
		s.h.fail(w, s.server, http.StatusNotFound, "the session has ended: initialize a new one")
		return http.StatusNotFound
	}
	if !ex.sse {
		select {
		case it := <-ex.out: // only the answer comes to a JSON exchange
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.Write(append(it.msg, '\n'))
		case <-s.doneCh:
			s.h.failRPC(w, s.server, http.StatusOK, clientID, codeInvalidRequest, "the server's session ended before it answered")
		case <-r.Context().Done():
		}
		return http.StatusOK
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case it := <-ex.out:
			if err := writeEvent(rc, w, it.msg); err != nil || it.final {
				return http.StatusOK
			}
		case <-tick.C:
			if err := writeComment(rc, w); err != nil {
				return http.StatusOK
			}
		case <-s.doneCh:
			// The relay answers every request in flight before it ends:
			// what is left is in ex.out.
			for {
				select {
				case it := <-ex.out:
					if writeEvent(rc, w, it.msg) != nil || it.final {
						return http.StatusOK
					}
				default:
					b := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"aegis: the server's session ended before it answered"}}`, clientID, codeInvalidRequest)
					writeEvent(rc, w, b)
					return http.StatusOK
				}
			}
		case <-r.Context().Done():
			return http.StatusOK
		}
	}
}

// close forgets the exchange of request key (and progress token) once its
// handler returns; what the relay still sends for it goes elsewhere, or
// nowhere (a disconnected client does not cancel its request).
func (s *session) close(ex *exchange, key, token string) {
	s.mu.Lock()
	if s.calls[key] == ex {
		delete(s.calls, key)
	}
	if token != "" && s.tokens[token] == ex {
		delete(s.tokens, token)
	}
	if i := indexOf(s.streams, ex); i >= 0 {
		s.streams = append(s.streams[:i], s.streams[i+1:]...)
	}
	s.active--
	s.last = time.Now()
	s.mu.Unlock()
	close(ex.gone)
}

func indexOf(xs []*exchange, x *exchange) int {
	for i, e := range xs {
		if e == x {
			return i
		}
	}
	return -1
}

// serveGET serves the session's GET stream: the server's own requests
// and notifications, and aegis's, as they come. A session has one.
func (s *session) serveGET(w http.ResponseWriter, r *http.Request) int {
	if !acceptsSSE(r) {
		s.h.fail(w, s.server, http.StatusNotAcceptable, "a GET stream is text/event-stream: say so in Accept")
		return http.StatusNotAcceptable
	}
	ex := newExchange(true)
	s.mu.Lock()
	if s.get != nil {
		s.mu.Unlock()
		s.h.fail(w, s.server, http.StatusConflict, "the session's GET stream is open already")
		return http.StatusConflict
	}
	s.get = ex
	s.active++
	backlog, dropped := s.backlog, s.dropped
	s.backlog, s.dropped, s.held = nil, 0, 0
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.get == ex {
			s.get = nil
		}
		s.active--
		s.last = time.Now()
		s.mu.Unlock()
		close(ex.gone)
	}()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if dropped > 0 {
		s.h.log.Warn("serve: messages to the client were dropped while no stream was open", "server", s.server, "session", s.id, "dropped", dropped)
	}
	for _, m := range backlog {
		if writeEvent(rc, w, m) != nil {
			return http.StatusOK
		}
	}
	rc.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case it := <-ex.out:
			if writeEvent(rc, w, it.msg) != nil {
				return http.StatusOK
			}
		case <-tick.C:
			if writeComment(rc, w) != nil {
				return http.StatusOK
			}
		case <-s.doneCh:
			return http.StatusOK
		case <-r.Context().Done():
			return http.StatusOK
		}
	}
}

// writeTimeout bounds one write to a stream: a client that stops
// reading loses its stream rather than stalling its session.
const writeTimeout = 30 * time.Second

func writeEvent(rc *http.ResponseController, w io.Writer, msg []byte) error {
	rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	b := make([]byte, 0, len(msg)+24)
	b = append(b, "event: message\ndata: "...)
	b = append(b, msg...)
	b = append(b, "\n\n"...)
	if _, err := w.Write(b); err != nil {
		return err
	}
	return rc.Flush()
}

func writeComment(rc *http.ResponseController, w io.Writer) error {
	rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
		return err
	}
	return rc.Flush()
}

// Write takes what the relay writes to the client: whole lines, each one
// message, which it routes. The relay writes one message at a time.
func (s *session) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.partial = append(s.partial, p...)
			break
		}
		line := p[:i]
		if len(s.partial) > 0 {
			line = append(s.partial, line...)
			s.partial = nil
		} else {
			line = bytes.Clone(line)
		}
		p = p[i+1:]
		if len(line) > 0 {
			s.route(line)
		}
	}
	return n, nil
}

// route sends one message of the relay's to where it belongs.
func (s *session) route(line []byte) {
	msg, err := proxy.Inspect(line, s.h.cfg.MaxDepth)
	if err != nil { // not reached: the relay writes valid messages
		s.h.log.Error("serve: the relay wrote an invalid message", "err", err)
		return
	}
	switch msg.Kind {
	case proxy.Response:
		key, _ := proxy.IDKey(msg.ID)
		s.mu.Lock()
		ex := s.calls[key]
		if ex != nil {
			delete(s.calls, key) // a later request may reuse the id
		}
		s.mu.Unlock()
		if ex != nil && ex.discover && speaksNoStateless(proxy.Member(line, "error")) {
			// A server of the older revisions only: later stateless
			// requests are told so at once, and this relay, idle, ends.
			s.h.markLegacy(s.server)
			defer s.end()
		}
		if ex != nil && ex.restore != nil {
			line = proxy.WithMember(line, "id", ex.restore.id)
		}
		if ex == nil || !ex.deliver(item{msg: line, final: true}) {
			s.h.log.Info("serve: an answer found its request gone", "server", s.server, "session", s.id, "id", string(msg.ID))
		}
		return
	case proxy.Notification:
		if msg.Method == "notifications/progress" {
			key, _ := proxy.IDKey(proxy.Member(msg.Params, "progressToken"))
			s.mu.Lock()
			ex := s.tokens[key]
			s.mu.Unlock()
			if ex != nil && ex.restore != nil && ex.restore.token != nil {
				line = proxy.WithMember(line, "params", proxy.WithMember(msg.Params, "progressToken", ex.restore.token))
			}
			if ex != nil && ex.sse && ex.deliver(item{msg: line}) {
				return
			}
		}
	}
	s.unrelated(line)
}

// unrelated sends a message that belongs to no request to the GET stream,
// else to the newest POST stream, else to the backlog. A stateless
// relay's go to its newest listen stream, or nowhere: a stateless
// request's stream carries that request's messages only.
func (s *session) unrelated(line []byte) {
	for {
		s.mu.Lock()
		ex := s.get
		if s.stateless {
			ex = nil
			for i := len(s.streams) - 1; i >= 0; i-- {
				if s.streams[i].listen {
					ex = s.streams[i]
					break
				}
			}
			if ex == nil {
				s.mu.Unlock()
				return
			}
		}
		if ex == nil && len(s.streams) > 0 {
			ex = s.streams[len(s.streams)-1]
		}
		if ex == nil {
			for len(s.backlog) > 0 && (len(s.backlog) >= maxBacklog || s.held+len(line) > maxBacklogBytes) {
				s.held -= len(s.backlog[0])
				s.backlog[0] = nil
				s.backlog = s.backlog[1:]
				s.dropped++
			}
			s.backlog = append(s.backlog, line)
			s.held += len(line)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if ex.deliver(item{msg: line}) {
			return
		}
		// That stream ended meanwhile: its handler has forgotten it.
	}
}
