package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// A relay moves messages between one client and one server, gating
// tools/call and checking tools/list and tools/call results. See the package
// documentation for what it guarantees.
type relay struct {
	gate     Gate
	tools    ToolsChecker  // nil if the gate does not check tool lists
	results  ResultChecker // nil if the gate does not check results
	log      *slog.Logger
	maxMsg   int
	maxDepth int
	maxReqs  int

	ctx context.Context // parent of every gate's context; cancelled when the relay stops

	// cmu serialises writes to the client.
	cmu        sync.Mutex
	client     io.Writer
	clientErr  error         // the first failed write; no write follows it
	clientGone chan struct{} // closed with clientErr set
	stopped    atomic.Bool   // Run has returned: nothing more is written

	// smu serialises writes to the server. It is held across "decide the
	// fate of a gated call and write it", and across "is this cancellation's
	// call still being gated, else write it", so a cancellation never
	// overtakes its call. Lock order: smu before mu. It is a channel so
	// that shutdown can give up waiting for a write a deaf server blocks.
	smu       chanMutex
	server    io.Writer
	serverEOF atomic.Bool // the server's input has been closed

	mu       sync.Mutex
	inflight map[string]*request // the client's requests being gated or at the server, by requestKey
	gone     error               // set when the server has gone; later requests are answered with it

	idle     chan *reading  // readers waiting to take over the client's input
	gates    sync.WaitGroup // gate goroutines, until they have written
	deciding sync.WaitGroup // gate goroutines, until their gate returned
}

// A chanMutex is a mutex whose Lock can be given up.
type chanMutex chan struct{}

func (m chanMutex) Lock()   { m <- struct{}{} }
func (m chanMutex) Unlock() { <-m }

// lockWithin locks m unless that takes longer than d.
func (m chanMutex) lockWithin(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case m <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

// A request is one client request aegis is waiting on: being gated, or
// forwarded and awaiting the server's response.
type request struct {
	key       string
	id        []byte // raw, the relay's own copy
	class     class
	call      *Call // tools/call only
	forwarded bool
	cancelled bool     // the client sent notifications/cancelled while it was gated
	held      [][]byte // messages to forward right after the call (its cancellation)
	cancel    context.CancelFunc
}

type options struct {
	maxMsg, maxDepth, maxReqs int
	log                       *slog.Logger
}

func newRelay(ctx context.Context, client, server io.Writer, gate Gate, o options) *relay {
	r := &relay{
		gate:       gate,
		log:        o.log,
		maxMsg:     o.maxMsg,
		maxDepth:   o.maxDepth,
		maxReqs:    o.maxReqs,
		ctx:        ctx,
		client:     client,
		clientGone: make(chan struct{}),
		smu:        make(chanMutex, 1),
		idle:       make(chan *reading),
		server:     server,
		inflight:   make(map[string]*request),
	}
	r.tools, _ = gate.(ToolsChecker)
	r.results, _ = gate.(ResultChecker)
	return r
}

// ---- client → server ----

// clientLoop relays the client's messages until its input ends (io.EOF) or
// fails.
func (r *relay) clientLoop(in io.Reader) error {
	end := make(chan error, 1)
	r.readClient(&reading{lr: newLineReader(in, r.maxMsg), end: end, done: make(chan struct{})})
	return <-end
}

// reading is the client's input, held by one reader at a time.
type reading struct {
	lr   *lineReader
	end  chan<- error  // receives the end of the input
	done chan struct{} // closed at the end of the input; idle readers leave
}

// readClient reads and relays the client's messages. When one is a
// tools/call, the goroutine that read it, hot on its CPU, decides and
// forwards it, and hands the reading to an idle reader (or a new one): the
// call's path to the server has no hand-off between goroutines, and the
// client's later messages do not wait for the gate. After deciding, the
// goroutine waits, idle, to read again; readers are reused so that their
// stacks, grown by parsing, stay grown.
func (r *relay) readClient(in *reading) {
	for {
		decide := r.readUntilCall(in)
		if decide == nil {
			return
		}
		select {
		case r.idle <- in:
		default:
			go r.readClient(in)
		}
		decide()
		select {
		case <-in.done:
			return
		case <-r.ctx.Done():
			return
		case in = <-r.idle:
		}
	}
}

// readUntilCall relays the client's messages until one is a tools/call, and
// returns the function that decides it; or until the input ends, and
// returns nil.
func (r *relay) readUntilCall(in *reading) func() {
	for {
		line, err := in.lr.next()
		var tooLong *tooLongError
		switch {
		case errors.As(err, &tooLong):
			r.log.Warn("proxy: dropped oversized message from client", "limit", r.maxMsg)
			if tooLong.ID != nil {
				r.toClient(errorResponse(tooLong.ID, codeInvalidRequest, "aegis: "+tooLong.Error()))
			}
			continue
		case err != nil:
		case r.stopped.Load():
			// The relay has stopped: the input ends here.
		default:
			if decide := r.fromClient(line); decide != nil {
				return decide
			}
			continue
		}
		in.end <- err
		close(in.done)
		return nil
	}
}

// fromClient relays one message from the client. For a tools/call it
// returns the function that decides and forwards it; line is no longer
// needed by then.
func (r *relay) fromClient(line []byte) (decide func()) {
	m, err := parseMessage(line, r.maxDepth)
	if err != nil {
		r.refuseInvalid(m.id, err)
		return nil
	}
	switch m.kind {
	case kindBatch:
		r.clientBatch(line)
	case kindRequest:
		if m.class == classToolsCall {
			return r.startCall(line, m)
		}
		r.forwardRequest(line, m)
	case kindNotification:
		switch m.class {
		case classToolsCall:
			r.log.Warn("proxy: dropped tools/call without an id (it could not be answered)")
		case classCancelled:
			r.forwardCancel(line, m)
		default:
			r.toServer(line)
		}
	case kindResponse:
		r.toServer(line)
	}
	return nil
}

// refuseInvalid answers a client message that could not be read strictly,
// if it had a usable id; otherwise the message is only logged.
func (r *relay) refuseInvalid(id []byte, err error) {
	r.log.Warn("proxy: refused invalid message from client", "err", err)
	if !usableID(id) {
		return
	}
	code := codeInvalidRequest
	if errors.Is(err, errInvalidJSON) {
		code = codeParseError
	}
	r.toClient(errorResponse(id, code, "aegis: invalid message: "+err.Error()))
}

func usableID(id []byte) bool {
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9')
}

func (r *relay) forwardRequest(line []byte, m message) {
	key, err := requestKey(m.id)
	if err != nil {
		r.toClient(errorResponse(m.id, codeInvalidRequest, "aegis: "+err.Error()))
		return
	}
	req := &request{key: key, id: bytes.Clone(m.id), class: m.class, forwarded: true}
	if code, err := r.register(req); err != nil {
		r.toClient(errorResponse(m.id, code, err.Error()))
		return
	}
	r.toServer(line)
}

// register records requests the client is waiting on, all or none.
func (r *relay) register(reqs ...*request) (code int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone != nil {
		return codeServerGone, fmt.Errorf("aegis: %v", r.gone)
	}
	if len(r.inflight)+len(reqs) > r.maxReqs {
		return codeInternalError, fmt.Errorf("aegis: more than %d requests awaiting an answer", r.maxReqs)
	}
	for i, req := range reqs {
		_, dup := r.inflight[req.key]
		for _, earlier := range reqs[:i] {
			dup = dup || earlier.key == req.key
		}
		if dup {
			// The id would make the server's answers ambiguous, and the
			// relay could pass a result to the wrong call's checks.
			return codeInvalidRequest, fmt.Errorf("aegis: request id %.40s is already awaiting an answer", req.id)
		}
	}
	for _, req := range reqs {
		r.inflight[req.key] = req
		if req.class == classToolsCall {
			// Counted under mu, so that once the server is marked gone no
			// gate starts and the counts can be waited on.
			r.gates.Add(1)
			r.deciding.Add(1)
		}
	}
	return 0, nil
}

// startCall validates and registers a tools/call, and returns the function
// that decides and forwards it, or nil if it was refused already.
func (r *relay) startCall(line []byte, m message) func() {
	key, err := requestKey(m.id)
	if err != nil {
		r.toClient(errorResponse(m.id, codeInvalidRequest, "aegis: "+err.Error()))
		return nil
	}
	call, args, err := parseCall(line, m)
	if err != nil {
		r.log.Warn("proxy: refused invalid tools/call", "err", err)
		r.toClient(errorResponse(m.id, codeInvalidParams, "aegis: invalid tools/call: "+err.Error()))
		return nil
	}
	ctx, cancel := context.WithCancel(r.ctx)
	req := &request{key: key, id: call.ID, class: classToolsCall, call: call, cancel: cancel}
	if code, err := r.register(req); err != nil {
		cancel()
		r.toClient(errorResponse(m.id, code, err.Error()))
		return nil
	}
	msg := bytes.Clone(line)
	return func() { r.decide(ctx, req, msg, args, m.params) }
}

// parseCall reads a tools/call's params. args is the span of
// params.arguments, zero if absent.
func parseCall(line []byte, m message) (c *Call, args span, err error) {
	if !m.params.ok() || line[m.params[0]] != '{' {
		return nil, span{}, errors.New("params must be an object")
	}
	ms := members(line, m.params[0])
	if err := caseVariant(ms, "name", "arguments", "_meta", "task"); err != nil {
		return nil, span{}, err
	}
	name := find(ms, "name")
	if !name.ok() || line[name[0]] != '"' {
		return nil, span{}, errors.New("params.name must be a string")
	}
	c = &Call{ID: bytes.Clone(m.id), Tool: string(unquote(name.of(line))), Arguments: json.RawMessage("{}")}
	if c.Tool == "" {
		return nil, span{}, errors.New("params.name is empty")
	}
	args = find(ms, "arguments")
	if args.ok() {
		if line[args[0]] != '{' {
			return nil, span{}, errors.New("params.arguments must be an object")
		}
		c.Arguments = bytes.Clone(args.of(line))
	}
	if find(ms, "task").ok() {
		// A task-augmented call returns its result later, through
		// tasks/result, where no ResultChecker would see it.
		return nil, span{}, errors.New("task-augmented calls (params.task) are not supported by aegis")
	}
	if meta := find(ms, "_meta"); meta.ok() {
		c.Meta = bytes.Clone(meta.of(line))
	}
	return c, args, nil
}

// decide runs a call's gate and forwards or refuses the call. Calls are
// decided concurrently, each on its own goroutine.
func (r *relay) decide(ctx context.Context, req *request, msg []byte, args, params span) {
	defer r.gates.Done()
	defer req.cancel()
	v, err := r.gate.Call(ctx, req.call)
	r.deciding.Done()
	forward := err == nil && v.Forward
	reason := v.Reason
	switch {
	case err != nil:
		r.log.Warn("proxy: gate failed; call refused", "tool", req.call.Tool, "err", err)
		reason = reasonUnchecked
	case !forward && reason == "":
		reason = reasonRefused
	case forward && v.Arguments != nil:
		msg, err = replaceArguments(msg, args, params, v.Arguments, r.maxDepth)
		if err != nil {
			r.log.Error("proxy: gate returned invalid arguments; call refused", "tool", req.call.Tool, "err", err)
			forward, reason = false, reasonUnchecked
		}
	}
	if !forward {
		r.mu.Lock()
		delete(r.inflight, req.key)
		cancelled := req.cancelled
		r.mu.Unlock()
		if !cancelled { // a cancelled request expects no answer
			r.toClient(toolError(req.id, reason))
		}
		return
	}
	r.smu.Lock()
	r.mu.Lock()
	if gone := r.gone; gone != nil {
		delete(r.inflight, req.key)
		r.mu.Unlock()
		r.smu.Unlock()
		r.toClient(errorResponse(req.id, codeServerGone, fmt.Sprintf("aegis: %v", gone)))
		return
	}
	req.forwarded = true
	held := req.held
	req.held = nil
	r.mu.Unlock()
	r.writeServer(msg)
	for _, h := range held {
		r.writeServer(h)
	}
	r.smu.Unlock()
}

// replaceArguments returns msg with params.arguments replaced by a gate's
// arguments.
func replaceArguments(msg []byte, args, params span, repl []byte, maxDepth int) ([]byte, error) {
	obj, err := object(repl, maxDepth)
	if err != nil {
		return nil, err
	}
	if args.ok() {
		return splice(msg, args, obj), nil
	}
	end := params[1] - 1 // the closing brace
	sep := []byte(`"arguments":`)
	if len(members(msg, params[0])) > 0 {
		sep = []byte(`,"arguments":`)
	}
	return splice(msg, span{end, end}, sep, obj), nil
}

// forwardCancel forwards notifications/cancelled, unless it names a call
// still being gated: then the gate is cancelled and the notification waits
// to follow the call, if the call is forwarded at all.
func (r *relay) forwardCancel(line []byte, m message) {
	key, ok := "", false
	if m.params.ok() && line[m.params[0]] == '{' {
		if rid := find(members(line, m.params[0]), "requestId"); rid.ok() {
			key, ok = responseKey(rid.of(line))
		}
	}
	r.smu.Lock()
	defer r.smu.Unlock()
	if ok {
		r.mu.Lock()
		if req := r.inflight[key]; req != nil && !req.forwarded {
			req.cancelled = true
			req.held = append(req.held, bytes.Clone(line))
			req.cancel()
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
	}
	r.writeServer(line)
}

// clientBatch relays a JSON-RPC batch (protocol versions before 2025-06-18).
// A batch holding a tools/call, or anything invalid, is refused whole: each
// request in it is answered with an error, in one batch.
func (r *relay) clientBatch(line []byte) {
	els := elements(line, skipSpace(line, 0))
	if len(els) == 0 {
		r.log.Warn("proxy: dropped empty batch from client")
		return
	}
	var (
		reqs   []*request
		ids    [][]byte
		reason error
	)
	for _, e := range els {
		el := line[e[0]:e[1]]
		m, err := parseMessage(el, r.maxDepth)
		if usableID(m.id) && (err != nil || m.kind == kindRequest) {
			ids = append(ids, m.id)
		}
		switch {
		case reason != nil:
		case err != nil:
			reason = fmt.Errorf("invalid message in batch: %w", err)
		case m.kind == kindBatch:
			reason = errors.New("nested batch")
		case m.class == classToolsCall:
			reason = errors.New("a batch may not hold tools/call; send each call as its own message")
		case m.kind == kindRequest:
			key, err := requestKey(m.id)
			if err != nil {
				reason = err
				break
			}
			reqs = append(reqs, &request{key: key, id: bytes.Clone(m.id), class: m.class, forwarded: true})
		}
	}
	code := codeInvalidRequest
	if reason == nil {
		var err error
		if code, err = r.register(reqs...); err == nil {
			r.toServer(line)
			return
		}
		reason = err
	}
	r.log.Warn("proxy: refused batch from client", "err", reason)
	if len(ids) == 0 {
		return
	}
	var b []byte
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		resp := errorResponse(id, code, "aegis: batch refused: "+reason.Error())
		b = append(b, resp[:len(resp)-1]...)
	}
	r.toClient(append(b, "]\n"...))
}

// ---- server → client ----

// serverLoop relays the server's messages until its output ends (io.EOF) or
// fails.
func (r *relay) serverLoop(out io.Reader) error {
	lr := newLineReader(out, r.maxMsg)
	for {
		line, err := lr.next()
		var tooLong *tooLongError
		switch {
		case errors.As(err, &tooLong):
			r.log.Warn("proxy: dropped oversized message from server", "limit", r.maxMsg)
			r.answerDropped(tooLong.ID, tooLong)
			continue
		case err != nil:
			return err
		}
		r.fromServer(line)
	}
}

func (r *relay) fromServer(line []byte) {
	m, err := parseMessage(line, r.maxDepth)
	if err != nil {
		r.log.Warn("proxy: dropped invalid message from server", "err", err)
		r.answerDropped(m.id, err)
		return
	}
	switch m.kind {
	case kindResponse:
		if out := r.response(line, m); out != nil {
			r.toClient(out)
		}
	case kindBatch:
		r.serverBatch(line)
	default: // requests and notifications from the server pass unchanged
		r.toClient(line)
	}
}

// answerDropped tells the client that the server's answer to one of its
// requests was dropped, if id names one.
func (r *relay) answerDropped(id []byte, why error) {
	key, ok := responseKey(id)
	if !ok {
		return
	}
	if req := r.take(key); req != nil {
		r.toClient(errorResponse(req.id, codeInternalError, "aegis: the server's response was withheld: "+why.Error()))
	}
}

// take removes and returns the forwarded request with key, or nil.
func (r *relay) take(key string) *request {
	r.mu.Lock()
	defer r.mu.Unlock()
	req := r.inflight[key]
	if req == nil || !req.forwarded {
		return nil
	}
	delete(r.inflight, key)
	return req
}

// response returns what to send the client for a response from the server,
// or nil to send nothing.
func (r *relay) response(msg []byte, m message) []byte {
	var req *request
	if key, ok := responseKey(m.id); ok {
		req = r.take(key)
	}
	if req == nil {
		if string(m.id) == "null" {
			return msg // an error the server could not attribute to a request
		}
		// It answers nothing the client is waiting for: a forgery of an id
		// aegis answered itself or is still gating, or a stray.
		r.log.Warn("proxy: dropped response from server that matches no request", "id", truncate(m.id))
		return nil
	}
	switch req.class {
	case classToolsList:
		return r.checkTools(msg, m, req)
	case classToolsCall:
		return r.checkResult(msg, m, req)
	}
	return msg
}

func (r *relay) checkTools(msg []byte, m message, req *request) []byte {
	if r.tools == nil || !m.result.ok() {
		return msg
	}
	withhold := func(err error) []byte {
		r.log.Warn("proxy: withheld tools/list result", "err", err)
		return errorResponse(req.id, codeInternalError, "aegis: the tool list was withheld: it could not be checked")
	}
	if msg[m.result[0]] != '{' {
		return withhold(errors.New("result is not an object"))
	}
	ms := members(msg, m.result[0])
	if err := caseVariant(ms, "tools"); err != nil {
		return withhold(err)
	}
	ts := find(ms, "tools")
	if !ts.ok() || msg[ts[0]] != '[' {
		return withhold(errors.New("result has no tools array"))
	}
	own := bytes.Clone(ts.of(msg)) // the checker may keep what it is given
	els := elements(own, 0)
	tools := make([]json.RawMessage, len(els))
	for i, e := range els {
		if own[e[0]] != '{' {
			return withhold(fmt.Errorf("tool %d is not an object", i))
		}
		tools[i] = own[e[0]:e[1]:e[1]]
	}
	out, err := r.tools.Tools(r.ctx, tools)
	if err != nil {
		return withhold(err)
	}
	if sameTools(out, tools) {
		return msg
	}
	arr := []byte{'['}
	for i, t := range out {
		obj, err := object(t, r.maxDepth)
		if err != nil {
			return withhold(fmt.Errorf("checker returned tool %d: %w", i, err))
		}
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, obj...)
	}
	return splice(msg, ts, append(arr, ']'))
}

func sameTools(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func (r *relay) checkResult(msg []byte, m message, req *request) []byte {
	if r.results == nil || !m.result.ok() {
		return msg
	}
	out, err := r.results.Result(r.ctx, req.call, bytes.Clone(m.result.of(msg)))
	if err == nil && out != nil {
		out, err = object(out, r.maxDepth)
	}
	switch {
	case err != nil:
		r.log.Warn("proxy: withheld tools/call result", "tool", req.call.Tool, "err", err)
		return toolError(req.id, reasonResultWithheld)
	case out == nil:
		return msg
	default:
		return splice(msg, m.result, out)
	}
}

// serverBatch relays a batch from the server. Its elements are handled as
// single messages; if none of them changes, the batch is relayed byte for
// byte, else the surviving elements are relayed one by one.
func (r *relay) serverBatch(line []byte) {
	var (
		outs    [][]byte
		changed bool
	)
	for _, e := range elements(line, skipSpace(line, 0)) {
		el := line[e[0]:e[1]]
		m, err := parseMessage(el, r.maxDepth)
		switch {
		case err == nil && m.kind == kindBatch:
			err = errors.New("nested batch")
		case err == nil && m.kind == kindResponse:
			out := r.response(el, m)
			changed = changed || !bytes.Equal(out, el)
			if out != nil {
				outs = append(outs, out)
			}
			continue
		case err == nil:
			outs = append(outs, el)
			continue
		}
		r.log.Warn("proxy: dropped invalid message in batch from server", "err", err)
		r.answerDropped(m.id, err)
		changed = true
	}
	if !changed {
		r.toClient(line)
		return
	}
	for _, o := range outs {
		r.toClient(o)
	}
}

// serverGone records that the server has gone and answers every request
// that was waiting on it. Requests still being gated are answered when
// their gate returns.
func (r *relay) serverGone(why error) {
	r.answerGone(why, r.markGone(why))
}

// markGone records that the server has gone: no request is registered, and
// no gate started, after it. It returns the requests that were waiting on
// the server.
func (r *relay) markGone(why error) []*request {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gone = why
	var waiting []*request
	for key, req := range r.inflight {
		if req.forwarded {
			waiting = append(waiting, req)
			delete(r.inflight, key)
		}
	}
	return waiting
}

// answerGone tells the client that the server went before answering.
func (r *relay) answerGone(why error, waiting []*request) {
	msg := fmt.Sprintf("aegis: %v before answering", why)
	for _, req := range waiting {
		r.toClient(errorResponse(req.id, codeServerGone, msg))
	}
}

// ---- writing ----

// toClient writes one message to the client. After a failed write, or once
// the relay has stopped, it writes nothing.
func (r *relay) toClient(msg []byte) {
	if r.stopped.Load() {
		return
	}
	r.cmu.Lock()
	defer r.cmu.Unlock()
	if r.stopped.Load() || r.clientErr != nil {
		return
	}
	if err := writeLine(r.client, msg); err != nil {
		r.clientErr = err
		close(r.clientGone)
	}
}

func (r *relay) toServer(msg []byte) {
	r.smu.Lock()
	defer r.smu.Unlock()
	r.writeServer(msg)
}

// writeServer writes one message to the server; r.smu must be held. A failed
// write is logged: the server is gone, which its reader will notice.
func (r *relay) writeServer(msg []byte) {
	if r.serverEOF.Load() {
		return
	}
	if err := writeLine(r.server, msg); err != nil && !r.serverEOF.Load() {
		r.log.Warn("proxy: writing to server", "err", err)
	}
}

// closeServer closes the server's input, after the write in progress if
// it completes within grace; otherwise the close cuts it short (a server
// that does not read cannot be written to anyway).
func (r *relay) closeServer(c io.Closer, grace time.Duration) {
	locked := r.smu.lockWithin(grace)
	r.serverEOF.Store(true)
	c.Close()
	if locked {
		r.smu.Unlock()
	} else {
		r.log.Warn("proxy: the MCP server is not reading its input; closing it mid-message")
	}
}

// stop makes every later write to the client a no-op. It does not wait for
// a write in progress.
func (r *relay) stop() { r.stopped.Store(true) }

// writeLine writes msg as one line with one Write.
func writeLine(w io.Writer, msg []byte) error {
	if len(msg) == 0 || msg[len(msg)-1] != '\n' {
		msg = append(msg[:len(msg):len(msg)], '\n')
	}
	_, err := w.Write(msg)
	return err
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
