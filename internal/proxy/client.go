package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/gateway"
)

// This file relays the client's messages to the server.

// clientLoop relays the client's messages until its input ends (io.EOF) or
// fails.
func (r *relay) clientLoop(in io.Reader) error {
	end := r.startClient(in)
	var err error
	select {
	case err = <-end:
	case <-r.ctx.Done():
		r.handoff.close() // the standby leaves
		err = <-end
	}
	r.handoff.close()
	return err
}

// startClient starts relaying the client's messages and returns where the
// end of its input will come (io.EOF, or what failed): clientLoop, without
// a goroutine that waits for it. Whoever is done with the relay closes
// r.handoff, so that a standby reader leaves.
func (r *relay) startClient(in io.Reader) <-chan error {
	end := make(chan error, 1)
	r.handoff.open()
	go r.readClient(&reading{lr: newLineReader(in, r.maxMsg), end: end, done: make(chan struct{})})
	return end
}

// reading is the client's input, held by one reader at a time.
type reading struct {
	lr   *lineReader
	end  chan<- error  // receives the end of the input
	done chan struct{} // closed at the end of the input; idle readers leave
}

// readClient reads and relays the client's messages. When one is a
// tools/call, the goroutine that read it, hot on its CPU, decides and
// forwards it: the call's path to the server has no hand-off between
// goroutines. The client's later messages do not wait for the gate: the
// reading is passed to the standby reader (see handoff), which takes it
// as soon as the deciding goroutine blocks, and which the deciding
// goroutine need not wake; if the call is decided first, the goroutine takes
// the reading back and reads on. Without a standby, the reading goes to an
// idle reader (or a new one) at once. After deciding, a goroutine that did
// not read on becomes the standby, or waits, idle, to read again; readers
// are reused so that their stacks, grown by parsing, stay grown.
func (r *relay) readClient(in *reading) {
	for {
		call := r.readUntilCall(in)
		if call == nil {
			return
		}
		passed := r.handoff.pass(in)
		if !passed {
			select {
			case r.idle <- in:
			default:
				go r.readClient(in)
			}
		}
		r.decide(call)
		if passed && r.handoff.reclaim(in) {
			continue
		}
		if next := r.handoff.wait(); next != nil {
			in = next
			continue
		}
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
// returns it, to be decided; or until the input ends, and returns nil.
func (r *relay) readUntilCall(in *reading) *pendingCall {
	for {
		line, err := in.lr.next()
		switch tooLong := asTooLong(err); {
		case tooLong != nil:
			r.log.Warn("proxy: dropped oversized message from client", "limit", r.maxMsg)
			if tooLong.ID != nil {
				r.toClient(errorResponse(tooLong.ID, codeInvalidRequest, "aegis: "+tooLong.Error()))
			}
			continue
		case err != nil:
		case r.stopped.Load():
			// The relay has stopped: the input ends here.
		default:
			if call := r.fromClient(line); call != nil {
				return call
			}
			continue
		}
		in.end <- err
		close(in.done)
		return nil
	}
}

// fromClient relays one message from the client. For a tools/call it
// returns the call, to be decided and forwarded; line is no longer needed
// by then.
func (r *relay) fromClient(line []byte) *pendingCall {
	m, err := parseMessage(line, r.maxDepth)
	if err != nil {
		r.refuseInvalid(m.id, err)
		return nil
	}
	switch m.kind {
	case kindBatch:
		r.clientBatch(line)
	case kindRequest:
		if m.class == classToolsCall || m.class == classDecided {
			var ans *gateway.Answer
			if inBandMethods[string(m.method)] {
				// A retry that answers aegis's own question: the rest is
				// the call the client would have sent without it.
				if stripped, a := takeAnswer(line, m); a != nil {
					if m, err = parseMessage(stripped, r.maxDepth); err != nil {
						r.refuseInvalid(m.id, err)
						return nil
					}
					line, ans = stripped, a
				}
			}
			return r.startCall(line, m, ans)
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
		if r.elicit != nil && r.elicit.answer(line, m) {
			return nil // it answers aegis's own question
		}
		r.clientAnswer(line, m)
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
	if string(m.method) == "initialize" && m.params.ok() {
		if r.twin != nil {
			r.twin.sawInitialize(m.params.of(line))
		}
		if r.elicit != nil {
			r.elicit.sawInitialize(m.params.of(line))
		}
	}
	r.toServer(line)
}

// A pendingCall is a tools/call read and registered, waiting to be decided.
// One allocation holds the request, the gate's Call and the rest, and one
// more the bytes the relay keeps (see parseCallInto).
type pendingCall struct {
	req          request
	call         Call
	ctx          context.Context
	msg          []byte // the message as the client sent it, the relay's own copy
	args, params span
	inputs       span // params.inputResponses, zero if absent
}

// startCall validates and registers a tools/call, and returns it to be
// decided and forwarded, or nil if it was refused already.
func (r *relay) startCall(line []byte, m message, ans *gateway.Answer) *pendingCall {
	key, err := requestKey(m.id)
	if err != nil {
		r.toClient(errorResponse(m.id, codeInvalidRequest, "aegis: "+err.Error()))
		return nil
	}
	p := new(pendingCall)
	parse := parseCallInto
	if m.class == classDecided {
		parse = parseRequestInto
	}
	msg, id, args, inputs, err := parse(&p.call, line, m)
	if err != nil {
		r.log.Warn("proxy: refused invalid request", "method", string(m.method), "err", err)
		r.toClient(errorResponse(m.id, codeInvalidParams, fmt.Sprintf("aegis: invalid %s: %v", m.method, err)))
		return nil
	}
	ctx, cancel := context.WithCancel(r.ctx)
	if bytes.Contains(p.call.Meta, []byte("progressToken")) {
		// A call held for a person's approval tells the client how the
		// wait stands, so that a client that keeps waiting while it hears
		// progress does. (The token is read only if the call waits.)
		ctx = gateway.WithWaiting(ctx, r.waitingProgress(p.call.Meta))
	}
	p.req = request{key: key, id: id, class: m.class, call: &p.call, cancel: cancel}
	p.ctx, p.msg, p.args, p.params, p.inputs = ctx, msg, args, m.params, inputs
	if m.class == classToolsCall {
		p.call.Continues = r.takeRetry(&p.call)
	}
	p.call.Answer = ans
	// A retry of the server's own round is held, never asked in its
	// round trips: aegis's round would lose the server's.
	p.call.InBand = inBandMethods[string(m.method)] && p.call.RequestState == nil && p.call.InputResponses == nil &&
		answersInBand(p.call.Meta)
	if code, err := r.register(&p.req); err != nil {
		cancel()
		r.toClient(errorResponse(m.id, code, err.Error()))
		return nil
	}
	return p
}

// refusal is the relay's answer to req, not forwarded with verdict v: the
// question v puts in the call's round trips, or an error saying reason.
func (r *relay) refusal(req *request, v Verdict, reason string) []byte {
	if v.Question != nil && req.call.InBand {
		b, err := inputRequiredResponse(req, v.Question)
		if err == nil {
			return b
		}
		r.log.Error("proxy: the question could not be written; call refused", "err", err)
	}
	return toolError(req, reason)
}

// parseCall reads a tools/call's params. args is the span of
// params.arguments, zero if absent.
func parseCall(line []byte, m message) (c *Call, args span, err error) {
	c = new(Call)
	if _, _, args, _, err = parseCallInto(c, line, m); err != nil {
		return nil, span{}, err
	}
	return c, args, nil
}

// parseCallInto is parseCall filling c, and returning also copies of line
// and of the id for the relay (the gate may keep and change what it is
// given: c's fields are its own). The copies share one allocation, each
// capped at its own end, so that appending to one cannot write into
// another.
func parseCallInto(c *Call, line []byte, m message) (msg, id []byte, argSpan, inputs span, err error) {
	if !m.params.ok() || line[m.params[0]] != '{' {
		return nil, nil, span{}, span{}, errors.New("params must be an object")
	}
	var buf [8]args.Member
	ms := args.Members(buf[:0], line, m.params[0])
	if err := caseVariant(ms, "name", "arguments", "_meta", "task", "inputResponses", "requestState"); err != nil {
		return nil, nil, span{}, span{}, err
	}
	name := find(ms, "name")
	if !name.ok() || line[name[0]] != '"' {
		return nil, nil, span{}, span{}, errors.New("params.name must be a string")
	}
	tool := string(args.Unquote(name.of(line)))
	if tool == "" {
		return nil, nil, span{}, span{}, errors.New("params.name is empty")
	}
	arguments := []byte("{}")
	argSpan = find(ms, "arguments")
	if argSpan.ok() {
		if line[argSpan[0]] != '{' {
			return nil, nil, span{}, span{}, errors.New("params.arguments must be an object")
		}
		arguments = argSpan.of(line)
	}
	if find(ms, "task").ok() {
		// A task-augmented call returns its result later, through
		// tasks/result, where no ResultChecker would see it.
		return nil, nil, span{}, span{}, errors.New("task-augmented calls (params.task) are not supported by aegis")
	}
	inputResponses, requestState, err := retryMembers(line, ms)
	if err != nil {
		return nil, nil, span{}, span{}, err
	}
	if inputResponses != nil {
		inputs = find(ms, "inputResponses")
	}
	var meta []byte
	if s := find(ms, "_meta"); s.ok() {
		meta = s.of(line)
	}
	*c = Call{Tool: tool}
	msg, id = ownCopies(c, line, m.id, &c.Arguments, arguments, meta, inputResponses, requestState)
	return msg, id, argSpan, inputs, nil
}

// ownCopies fills c's ID, *field (its Arguments or Params, when b is not
// nil), Meta, InputResponses and RequestState with copies of id, b, meta,
// inputResponses and requestState, and returns copies of line and id for
// the relay, all in one allocation, each capped at its own end so that
// appending to one cannot write into another.
func ownCopies(c *Call, line, rawID []byte, field *json.RawMessage, b, meta, inputResponses, requestState []byte) (msg, id []byte) {
	own := make([]byte, 0, len(line)+2*len(rawID)+len(b)+len(meta)+len(inputResponses)+len(requestState))
	msg, own = appendOwn(own, line)
	id, own = appendOwn(own, rawID)
	c.ID, own = appendOwn(own, rawID)
	if b != nil {
		*field, own = appendOwn(own, b)
	}
	if meta != nil {
		c.Meta, own = appendOwn(own, meta)
	}
	if inputResponses != nil {
		c.InputResponses, own = appendOwn(own, inputResponses)
	}
	if requestState != nil {
		c.RequestState, _ = appendOwn(own, requestState)
	}
	return msg, id
}

// parseRequestInto is parseCallInto for a request of another method that
// the gate decides: c gets the method and the params as sent. A
// task-augmented request is refused, as a task-augmented call is: its
// result would arrive through tasks/result, past the checks.
func parseRequestInto(c *Call, line []byte, m message) (msg, id []byte, argSpan, inputs span, err error) {
	var params, meta, inputResponses, requestState []byte
	if m.params.ok() && line[m.params[0]] == '[' {
		params = m.params.of(line) // by position (JSON-RPC allows it): no task, no _meta
	} else if m.params.ok() && line[m.params[0]] == '{' {
		params = m.params.of(line)
		var buf [8]args.Member
		ms := args.Members(buf[:0], line, m.params[0])
		if err := caseVariant(ms, "_meta", "task", "inputResponses", "requestState"); err != nil {
			return nil, nil, span{}, span{}, err
		}
		if find(ms, "task").ok() {
			return nil, nil, span{}, span{}, errors.New("task-augmented requests (params.task) are not supported by aegis")
		}
		if s := find(ms, "_meta"); s.ok() {
			meta = s.of(line)
		}
		if inputResponses, requestState, err = retryMembers(line, ms); err != nil {
			return nil, nil, span{}, span{}, err
		}
		if inputResponses != nil {
			inputs = find(ms, "inputResponses")
		}
	}
	*c = Call{Method: string(m.method)}
	msg, id = ownCopies(c, line, m.id, &c.Params, params, meta, inputResponses, requestState)
	return msg, id, span{}, inputs, nil
}

// appendOwn appends b to own, which has room for it, and returns the copy,
// capped at its end, and own extended.
func appendOwn(own, b []byte) (cp, extended []byte) {
	start := len(own)
	own = append(own, b...)
	return own[start:len(own):len(own)], own
}

// decide runs a call's gate and forwards or refuses the call. Calls are
// decided concurrently, each on its own goroutine.
func (r *relay) decide(p *pendingCall) {
	ctx, req, msg, args, params, inputs := p.ctx, &p.req, p.msg, p.args, p.params, p.inputs
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
	case forward && v.Arguments != nil && req.call.Method != "":
		r.log.Error("proxy: gate returned arguments for a request that has none; refused", "method", req.call.Method)
		forward, reason = false, reasonUnchecked
		r.undelivered(req, NotSent)
	case forward && v.InputResponses != nil && !inputs.ok():
		r.log.Error("proxy: gate returned input responses for a request that has none; refused", "method", req.call.Method, "tool", req.call.Tool)
		forward, reason = false, reasonUnchecked
		r.undelivered(req, NotSent)
	case forward && (v.Arguments != nil || v.InputResponses != nil):
		msg, err = replaceParams(msg, args, params, inputs, v, r.maxDepth)
		if err != nil {
			r.log.Error("proxy: gate returned invalid arguments; call refused", "tool", req.call.Tool, "err", err)
			forward, reason = false, reasonUnchecked
			r.undelivered(req, NotSent) // the gate let it through: it hears it was not
		}
	}
	if !forward {
		r.mu.Lock()
		delete(r.inflight, req.key)
		cancelled := req.cancelled
		if !cancelled {
			r.answering++
		}
		r.mu.Unlock()
		if !cancelled { // a cancelled request expects no answer
			r.answer(r.refusal(req, v, reason))
		}
		return
	}
	if v.RunUnbound {
		r.runUnbound(req, msg)
		return
	}
	r.smu.Lock()
	r.mu.Lock()
	if gone := r.gone; gone != nil {
		delete(r.inflight, req.key)
		cancelled := req.cancelled
		if !cancelled {
			r.answering++
		}
		r.mu.Unlock()
		r.smu.Unlock()
		r.undelivered(req, NotSent)
		if !cancelled {
			r.answer(errorResponse(req.id, codeServerGone, fmt.Sprintf("aegis: %v; the call was not sent", gone)))
		}
		return
	}
	// Marked forwarded before the write: the server may answer before the
	// write returns.
	req.forwarded = true
	held := req.held
	req.held = nil
	cancelled := req.cancelled
	if !cancelled {
		// Its cancellation waits for r.smu, so it follows the write.
		r.startTimeout(req)
	}
	r.mu.Unlock()
	if err := r.writeServer(msg); err != nil {
		r.smu.Unlock()
		r.unsent(req)
		return
	}
	for _, h := range held {
		r.writeServer(h)
	}
	if cancelled {
		// The client cancelled the call while it was gated: it expects no
		// answer, so the call leaves the table, as in forwardCancel.
		r.mu.Lock()
		if r.inflight[req.key] == req {
			delete(r.inflight, req.key)
		}
		r.mu.Unlock()
	}
	r.smu.Unlock()
}

// replaceParams returns msg with params.arguments and
// params.inputResponses replaced by the gate's, where it gave any. The
// later of the two members is replaced first, so that the earlier one's
// span still holds.
func replaceParams(msg []byte, argSpan, params, inputs span, v Verdict, maxDepth int) ([]byte, error) {
	if v.InputResponses == nil {
		return replaceArguments(msg, argSpan, params, v.Arguments, maxDepth)
	}
	obj, err := object(v.InputResponses, maxDepth)
	if err != nil {
		return nil, err
	}
	if v.Arguments == nil {
		return splice(msg, inputs, obj), nil
	}
	if !argSpan.ok() || argSpan[0] > inputs[0] {
		// Arguments after inputResponses (absent ones are added at the
		// end of params).
		if msg, err = replaceArguments(msg, argSpan, params, v.Arguments, maxDepth); err != nil {
			return nil, err
		}
		return splice(msg, inputs, obj), nil
	}
	return replaceArguments(splice(msg, inputs, obj), argSpan, params, v.Arguments, maxDepth)
}

// replaceArguments returns msg with params.arguments replaced by a gate's
// arguments.
func replaceArguments(msg []byte, argSpan, params span, repl []byte, maxDepth int) ([]byte, error) {
	obj, err := object(repl, maxDepth)
	if err != nil {
		return nil, err
	}
	if argSpan.ok() {
		return splice(msg, argSpan, obj), nil
	}
	end := params[1] - 1 // the closing brace
	sep := []byte(`"arguments":`)
	if len(args.Members(nil, msg, params[0])) > 0 {
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
		if rid := find(args.Members(nil, line, m.params[0]), "requestId"); rid.ok() {
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
		} else if req != nil && req.unbound {
			// The twin's call is cancelled there; the server never saw it.
			req.cancelled = true
			req.unbind()
			delete(r.inflight, key)
			r.mu.Unlock()
			return
		} else if req != nil {
			// The client expects no answer to a cancelled request: it
			// leaves the in-flight table (a server that honours the
			// cancel never answers, and the slot would be held until the
			// session ends), a late answer is dropped as answering
			// nothing, and if the server goes, none is invented.
			req.cancelled = true
			r.stopTimeout(req)
			delete(r.inflight, key)
		}
		r.mu.Unlock()
	}
	r.writeServer(line)
}

// clientBatch relays a JSON-RPC batch (protocol versions before 2025-06-18).
// A batch holding a tools/call, or anything invalid, is refused whole: each
// request in it is answered with an error, in one batch.
func (r *relay) clientBatch(line []byte) {
	els := args.Elements(line, args.SkipSpace(line, 0))
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
		case m.class == classToolsCall, m.class == classDecided && m.kind == kindRequest:
			reason = fmt.Errorf("a batch may not hold %s, which aegis decides; send it as its own message", m.method)
		case m.kind == kindResponse && r.awaitsAnswer(m.id):
			reason = errors.New("a batch may not hold an answer to a request of the server that aegis checks; send it as its own message")
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
