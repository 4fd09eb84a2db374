package proxy

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/aegis-mcp/aegis/internal/args"
)

// This file relays multi-round-trip requests (MCP 2026-07-28, "MRTR").
//
// A server that needs the client's input to answer tools/call, prompts/get
// or resources/read answers with an incomplete result,
//
//	{"resultType":"input_required","inputRequests":{KEY:{"method":M,"params":P},…},"requestState":S}
//
// and the client retries the same request, with a new id, adding
// "inputResponses" (KEY → the answer) and the requestState S as it was.
// The embedded requests are the server's requests of the older revisions
// (elicitation/create, sampling/createMessage, roots/list), so each is
// decided by the gate's [ServerRequestChecker], and recorded, as the
// server's request would be: one refused withholds the whole result,
// with the reason, and the server never hears its answer. requestState
// is the server's, goes back to the server and is never read by the
// model: it is relayed byte for byte, past the [ResultChecker], which sees
// (and may redact) the rest of the result only; so are the embedded
// requests, which it has decided.
//
// A retry is one logical call with the request it retries: the relay
// remembers each input_required result it passed on for a tools/call
// (by tool, arguments and requestState, at most maxContinuations), and
// marks a tools/call that retries one, once, as [Call.Continues]. The gate
// still decides it, on its arguments, like any call; only its caps count
// it once. A requestState the server never issued, or one used already,
// continues nothing.

// maxContinuations bounds the input_required results the relay remembers;
// the oldest is forgotten first, and its retry then counts as a new call.
const maxContinuations = 256

// resultTypeInputRequired is the resultType of an incomplete result.
const resultTypeInputRequired = "input_required"

// continuations is the relay's memory of the input_required results it
// passed on; r.mu guards it.
type continuations struct {
	m     map[[32]byte]struct{}
	order [][32]byte // oldest first; may hold keys already taken
}

// continuationKey is what identifies a retry of the tools/call c with
// requestState state (its value, unescaped; "" when absent): the tool, the
// arguments as the client sent them, and the state. The client retries
// with the arguments it sent the first time.
func continuationKey(c *Call, state []byte) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "aegis.mrtr.v1\x00%d:%s%d:", len(c.Tool), c.Tool, len(c.Arguments))
	h.Write(c.Arguments)
	h.Write(state)
	return [32]byte(h.Sum(nil))
}

// expectRetry remembers that the tools/call c was answered input_required
// with requestState state.
func (r *relay) expectRetry(c *Call, state []byte) {
	k := continuationKey(c, state)
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := &r.cont
	if cs.m == nil {
		cs.m = make(map[[32]byte]struct{})
	}
	if _, ok := cs.m[k]; ok {
		return
	}
	for len(cs.m) >= maxContinuations && len(cs.order) > 0 {
		delete(cs.m, cs.order[0])
		cs.order = cs.order[1:]
	}
	if len(cs.order) >= 4*maxContinuations { // keys taken since: compact
		cs.order = slicesCompactKeys(cs.order, cs.m)
	}
	cs.m[k] = struct{}{}
	cs.order = append(cs.order, k)
}

// takeRetry reports whether the tools/call c retries, with its
// requestState, an input_required result the relay passed on and no
// retry has taken yet; it takes it.
func (r *relay) takeRetry(c *Call) bool {
	if c.RequestState == nil && c.InputResponses == nil {
		return false
	}
	var state []byte
	if c.RequestState != nil {
		state = args.Unquote(c.RequestState)
	}
	k := continuationKey(c, state)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.cont.m[k]; !ok {
		return false
	}
	delete(r.cont.m, k)
	return true
}

// slicesCompactKeys returns the keys of order still in m, in order.
func slicesCompactKeys(order [][32]byte, m map[[32]byte]struct{}) [][32]byte {
	out := order[:0]
	for _, k := range order {
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// retryMembers reads the retry members of a request's params (ms, members
// of line): inputResponses, which must be an object, and requestState,
// which must be a string. Each is nil when absent.
func retryMembers(line []byte, ms []args.Member) (inputResponses, requestState []byte, err error) {
	if s := find(ms, "inputResponses"); s.ok() {
		if line[s[0]] != '{' {
			return nil, nil, errors.New("params.inputResponses must be an object")
		}
		inputResponses = s.of(line)
	}
	if s := find(ms, "requestState"); s.ok() {
		if line[s[0]] != '"' {
			return nil, nil, errors.New("params.requestState must be a string")
		}
		requestState = s.of(line)
	}
	return inputResponses, requestState, nil
}

// inputRequired is a result of resultType input_required, read.
type inputRequired struct {
	// view is the result without inputRequests and requestState: what the
	// ResultChecker sees.
	view []byte
	// requests and state are the raw members, nil when absent.
	requests, state []byte
}

// readInputRequired reads result (a strict JSON object) when its
// resultType is input_required; ok is false for any other result. An
// input_required result whose members are not of their types is an error.
func readInputRequired(result []byte) (ir inputRequired, ok bool, err error) {
	if len(result) == 0 || result[0] != '{' {
		return ir, false, nil
	}
	var buf [8]args.Member
	ms := args.Members(buf[:0], result, 0)
	rt := find(ms, "resultType")
	if !rt.ok() || result[rt[0]] != '"' || string(args.Unquote(rt.of(result))) != resultTypeInputRequired {
		if err := caseVariant(ms, "resultType"); err != nil {
			return ir, true, err // a client might read it either way
		}
		return ir, false, nil
	}
	if err := caseVariant(ms, "resultType", "inputRequests", "requestState"); err != nil {
		return ir, true, err
	}
	if s := find(ms, "inputRequests"); s.ok() {
		if result[s[0]] != '{' {
			return ir, true, errors.New("inputRequests is not an object")
		}
		ir.requests = s.of(result)
	}
	if s := find(ms, "requestState"); s.ok() {
		if result[s[0]] != '"' {
			return ir, true, errors.New("requestState is not a string")
		}
		ir.state = s.of(result)
	}
	view := make([]byte, 0, len(result))
	view = append(view, '{')
	for _, m := range ms {
		switch string(m.Key) {
		case "inputRequests", "requestState":
			continue
		}
		if len(view) > 1 {
			view = append(view, ',')
		}
		view = appendString(view, string(m.Key))
		view = append(view, ':')
		view = append(view, result[m.Start:m.End]...)
	}
	ir.view = append(view, '}')
	return ir, true, nil
}

// An embeddedRequest is one of an input_required result's inputRequests.
type embeddedRequest struct {
	key    string
	method string
	params []byte // nil when absent
}

// embeddedRequests reads the inputRequests object reqs.
func embeddedRequests(reqs []byte) ([]embeddedRequest, error) {
	var out []embeddedRequest
	for _, m := range args.Members(nil, reqs, 0) {
		v := reqs[m.Start:m.End]
		if v[0] != '{' {
			return nil, fmt.Errorf("inputRequests[%.64q] is not an object", m.Key)
		}
		ms := args.Members(nil, v, 0)
		if err := caseVariant(ms, "method", "params"); err != nil {
			return nil, err
		}
		meth := find(ms, "method")
		if !meth.ok() || v[meth[0]] != '"' {
			return nil, fmt.Errorf("inputRequests[%.64q] has no method", m.Key)
		}
		e := embeddedRequest{key: string(m.Key), method: string(args.Unquote(meth.of(v)))}
		if p := find(ms, "params"); p.ok() {
			if v[p[0]] != '{' {
				return nil, fmt.Errorf("inputRequests[%.64q].params is not an object", m.Key)
			}
			e.params = bytes.Clone(p.of(v))
		}
		out = append(out, e)
	}
	return out, nil
}

// checkInputRequired checks an input_required result (msg, whose result
// is at m.result) of req: its embedded requests go through the
// ServerRequestChecker, the rest through the ResultChecker; requestState
// and inputRequests are relayed as they came. It returns what to send the
// client.
func (r *relay) checkInputRequired(msg []byte, m message, req *request, ir inputRequired) []byte {
	refuse := func(reason string) []byte { return toolError(req, reason) }
	if ir.requests != nil && r.srvReqs != nil {
		ers, err := embeddedRequests(ir.requests)
		if err != nil {
			r.log.Warn("proxy: withheld an input_required result", "err", err)
			return refuse(reasonResultWithheld)
		}
		for _, e := range ers {
			v, err := r.srvReqs.ServerRequest(r.ctx, e.method, e.params)
			if err == nil && v.Forward {
				continue
			}
			reason := v.Reason
			switch {
			case err != nil:
				r.log.Warn("proxy: gate failed on a server's input request; result withheld", "method", e.method, "err", err)
				reason = "aegis refused this request: it could not be checked"
			case reason == "":
				reason = "aegis refused this request"
			}
			return refuse(fmt.Sprintf("aegis withheld the server's request for input %q (%s): %s", e.key, e.method, reason))
		}
	}
	out := msg
	if r.results != nil {
		got, err := r.results.Result(r.ctx, req.call, ir.view)
		if err == nil && got != nil {
			got, err = object(got, r.maxDepth)
		}
		switch {
		case err != nil:
			r.log.Warn("proxy: withheld an input_required result", "tool", req.call.Tool, "err", err)
			var w *Withheld
			if errors.As(err, &w) && w.Reason != "" {
				return refuse("aegis withheld this result: " + w.Reason)
			}
			return refuse(reasonResultWithheld)
		case got != nil:
			out = splice(msg, m.result, withMembers(got, ir))
		}
	}
	if req.call.Method == "" {
		state := []byte{}
		if ir.state != nil {
			state = args.Unquote(ir.state)
		}
		r.expectRetry(req.call, state)
	}
	return out
}

// withMembers returns the object obj with ir's inputRequests and
// requestState appended, byte for byte as the server sent them.
func withMembers(obj []byte, ir inputRequired) []byte {
	out := make([]byte, 0, len(obj)+len(ir.requests)+len(ir.state)+40)
	out = append(out, obj[:len(obj)-1]...) // without its closing brace
	empty := len(args.Members(nil, obj, 0)) == 0
	add := func(key string, v []byte) {
		if v == nil {
			return
		}
		if !empty {
			out = append(out, ',')
		}
		empty = false
		out = append(out, key...)
		out = append(out, v...)
	}
	add(`"inputRequests":`, ir.requests)
	add(`"requestState":`, ir.state)
	return append(out, '}')
}
