package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/aegis-mcp/aegis/internal/args"
)

// This file relays the server's messages to the client.

// serverLoop relays the server's messages until its output ends (io.EOF) or
// fails.
func (r *relay) serverLoop(out io.Reader) error {
	lr := newLineReader(out, r.maxMsg)
	for {
		line, err := lr.next()
		switch tooLong := asTooLong(err); {
		case tooLong != nil:
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
	case kindRequest:
		if r.serverRequest(line, m) {
			r.toClient(line)
		}
	default: // notifications from the server pass unchanged
		r.toClient(line)
	}
}

// serverRequest decides a request of the server to the client, if the gate
// decides them, and reports whether to pass it on. A refused request is
// answered to the server, from a goroutine of its own: the server may not
// be reading its input while it writes, and its output is read here.
func (r *relay) serverRequest(line []byte, m message) bool {
	if r.srvReqs == nil || string(m.method) == "ping" {
		return true
	}
	var params []byte
	if m.params.ok() {
		params = bytes.Clone(m.params.of(line))
	}
	v, err := r.srvReqs.ServerRequest(r.ctx, string(m.method), params)
	if err == nil && v.Forward {
		if r.expectAnswer(m.id, string(m.method)) {
			return true
		}
		v = Verdict{Reason: "aegis refused this request: too many requests of the server await the client's answer"}
	}
	reason := v.Reason
	switch {
	case err != nil:
		r.log.Warn("proxy: gate failed on a server request; refused", "method", string(m.method), "err", err)
		reason = "aegis refused this request: it could not be checked"
	case reason == "":
		reason = "aegis refused this request"
	}
	r.log.Info("proxy: refused a request of the server", "method", string(m.method))
	answer := errorResponse(bytes.Clone(m.id), codeRefused, reason)
	// Bounded like the client's requests: a server that sends requests
	// and does not read its input must not make the relay hold one
	// goroutine per refusal. Past the bound its answers are dropped (it
	// is not reading them anyway).
	if r.srvAnswering.Add(1) > int32(r.maxReqs) {
		r.srvAnswering.Add(-1)
		r.log.Warn("proxy: dropped the answer to a refused request of the server: too many unwritten", "limit", r.maxReqs)
		return false
	}
	go func() {
		defer r.srvAnswering.Add(-1)
		r.toServer(answer)
	}()
	return false
}

// answerDropped tells the client that the server's answer to one of its
// requests was dropped, if id names one.
func (r *relay) answerDropped(id []byte, why error) {
	key, ok := responseKey(id)
	if !ok {
		return
	}
	if req := r.take(key); req != nil {
		// The reason stays in the log: it quotes the server's message, which
		// the client's checks (ResultChecker) have not seen.
		r.log.Warn("proxy: withheld the server's response", "id", truncate(req.id), "err", why)
		r.undelivered(req, AnswerWithheld)
		r.toClient(errorResponse(req.id, codeInternalError, "aegis: the server's response was withheld: "+withheldReason(why)))
	}
}

func withheldReason(err error) string {
	var tooLong *tooLongError
	if errors.As(err, &tooLong) {
		return tooLong.Error()
	}
	return "it was not a strictly valid JSON-RPC message"
}

// take removes and returns the forwarded request with key, or nil.
func (r *relay) take(key string) *request {
	r.mu.Lock()
	defer r.mu.Unlock()
	req := r.inflight[key]
	if req == nil || !req.forwarded || req.unbound {
		// An unbound call is the twin's to answer: the server answering
		// its id is forging.
		return nil
	}
	r.stopTimeout(req)
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
			// An error the server could not attribute to a request: its
			// text reaches the client, so it passes the error check too.
			if m.error.ok() && r.errs != nil {
				return r.checkError(msg, m, &request{id: m.id, call: &Call{ID: m.id}})
			}
			return msg
		}
		// It answers nothing the client is waiting for: a forgery of an id
		// aegis answered itself or is still gating, or a stray.
		r.log.Warn("proxy: dropped response from server that matches no request", "id", truncate(m.id))
		return nil
	}
	switch req.class {
	case classToolsList:
		return r.checkTools(msg, m, req)
	case classToolsCall, classDecided:
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
	ms := args.Members(nil, msg, m.result[0])
	if err := caseVariant(ms, "tools"); err != nil {
		return withhold(err)
	}
	ts := find(ms, "tools")
	if !ts.ok() || msg[ts[0]] != '[' {
		return withhold(errors.New("result has no tools array"))
	}
	own := bytes.Clone(ts.of(msg)) // the checker may keep what it is given
	els := args.Elements(own, 0)
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
	if m.error.ok() && r.errs != nil {
		return r.checkError(msg, m, req)
	}
	if !m.result.ok() {
		return msg
	}
	if ir, ok, err := readInputRequired(m.result.of(msg)); err != nil {
		r.log.Warn("proxy: withheld an input_required result", "tool", req.call.Tool, "err", err)
		return toolError(req, reasonResultWithheld)
	} else if ok {
		return r.checkInputRequired(msg, m, req, ir)
	}
	if r.results == nil {
		return msg
	}
	out, err := r.results.Result(r.ctx, req.call, bytes.Clone(m.result.of(msg)))
	if err == nil && out != nil {
		out, err = object(out, r.maxDepth)
	}
	switch {
	case err != nil:
		r.log.Warn("proxy: withheld tools/call result", "tool", req.call.Tool, "err", err)
		var w *Withheld
		if errors.As(err, &w) && w.Reason != "" {
			return toolError(req, "aegis withheld this tool's result: "+w.Reason)
		}
		return toolError(req, reasonResultWithheld)
	case out == nil:
		return msg
	default:
		return splice(msg, m.result, out)
	}
}

// checkError passes the JSON-RPC error a server answered a call with
// through the gate's ErrorChecker: relayed as it is, replaced, or withheld
// (a JSON-RPC error of aegis's own under the same id).
func (r *relay) checkError(msg []byte, m message, req *request) []byte {
	out, err := r.errs.Error(r.ctx, req.call, bytes.Clone(m.error.of(msg)))
	if err == nil && out != nil {
		out, err = object(out, r.maxDepth)
	}
	switch {
	case err != nil:
		r.log.Warn("proxy: withheld a tools/call error", "tool", req.call.Tool, "err", err)
		reason := reasonResultWithheld
		var w *Withheld
		if errors.As(err, &w) && w.Reason != "" {
			reason = "aegis withheld this tool's error: " + w.Reason
		}
		return errorResponse(req.id, codeInternalError, reason)
	case out == nil:
		return msg
	default:
		return splice(msg, m.error, out)
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
	for _, e := range args.Elements(line, args.SkipSpace(line, 0)) {
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
		case err == nil && m.kind == kindRequest:
			if r.serverRequest(el, m) {
				outs = append(outs, el)
			} else {
				changed = true
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
