package proxy

import (
	"context"
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
	gate    Gate
	tools   ToolsChecker         // nil if the gate does not check tool lists
	results ResultChecker        // nil if the gate does not check results
	errs    ErrorChecker         // nil if the gate does not check error answers
	losses  UndeliveredRecorder  // nil if the gate does not record losses
	srvReqs ServerRequestChecker // nil if the gate does not decide the server's requests
	// srvAnswering counts the answers to refused requests of the server
	// being written, each by a goroutine of its own; at most maxReqs.
	srvAnswering atomic.Int32
	answers      AnswerChecker // nil if the gate does not check the client's answers to them
	log          *slog.Logger
	maxMsg       int
	maxDepth     int
	maxReqs      int

	callTimeout time.Duration                       // 0: none
	afterFunc   func(time.Duration, func()) stopper // starts a call's timeout

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
	// answering counts the answers the relay owes the client and is
	// writing from a goroutine of its own (a refusal, a server gone): they
	// count against maxReqs with inflight, so that a client that does not
	// read cannot make the relay hold one goroutine per refused call.
	answering int
	gone      error         // set when the server has gone; later requests are answered with it
	cont      continuations // the input_required results awaiting a retry (mrtr.go)
	// asked holds the method of each request of the server that the gate
	// let through and the client has not answered, by requestKey, when
	// the gate checks answers (answer.go).
	asked map[string]string

	twin   *twin     // nil: unbound calls are refused
	elicit *Elicitor // nil: the client is not asked for approvals

	idle     chan *reading  // readers waiting to take over the client's input
	handoff  handoff        // the standby reader's
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
	call      *Call // requests the gate decides only
	forwarded bool
	unbound   bool               // forwarded to the unbound twin, not the server
	unbind    context.CancelFunc // cancels an unbound call at the twin
	cancelled bool               // the client sent notifications/cancelled for it
	held      [][]byte           // messages to forward right after the call (its cancellation)
	cancel    context.CancelFunc
	timer     stopper // the call's timeout, once forwarded; nil if none
}

type options struct {
	maxMsg, maxDepth, maxReqs int
	callTimeout               time.Duration
	afterFunc                 func(time.Duration, func()) stopper // nil: time.AfterFunc
	log                       *slog.Logger
}

func newRelay(ctx context.Context, client, server io.Writer, gate Gate, o options) *relay {
	r := &relay{
		gate:        gate,
		log:         o.log,
		maxMsg:      o.maxMsg,
		maxDepth:    o.maxDepth,
		maxReqs:     o.maxReqs,
		callTimeout: o.callTimeout,
		afterFunc:   o.afterFunc,
		ctx:         ctx,
		client:      client,
		clientGone:  make(chan struct{}),
		smu:         make(chanMutex, 1),
		idle:        make(chan *reading),
		server:      server,
		inflight:    make(map[string]*request),
	}
	r.tools, _ = gate.(ToolsChecker)
	r.results, _ = gate.(ResultChecker)
	r.errs, _ = gate.(ErrorChecker)
	r.losses, _ = gate.(UndeliveredRecorder)
	r.srvReqs, _ = gate.(ServerRequestChecker)
	if r.srvReqs != nil {
		r.answers, _ = gate.(AnswerChecker)
	}
	if r.afterFunc == nil {
		r.afterFunc = afterFunc
	}
	return r
}

// register records requests the client is waiting on, all or none.
func (r *relay) register(reqs ...*request) (code int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone != nil {
		return codeServerGone, fmt.Errorf("aegis: %v", r.gone)
	}
	if len(r.inflight)+r.answering+len(reqs) > r.maxReqs {
		r.log.Warn("proxy: refused request: too many awaiting an answer", "limit", r.maxReqs)
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
		if req.class == classToolsCall || req.class == classDecided {
			// Counted under mu, so that once the server is marked gone no
			// gate starts and the counts can be waited on.
			r.gates.Add(1)
			r.deciding.Add(1)
		}
	}
	return 0, nil
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
			r.stopTimeout(req)
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
		if req.cancelled {
			continue // the client cancelled it and expects no answer
		}
		r.undelivered(req, NoAnswer)
		r.toClient(errorResponse(req.id, codeServerGone, msg))
	}
}

// undelivered tells the gate that a call it let through got no answer
// from the server, if req is a call and the gate wants to know.
func (r *relay) undelivered(req *request, why Loss) {
	if req.call == nil {
		return
	}
	r.log.Warn("proxy: call got no answer from the server", "method", req.call.Method, "tool", req.call.Tool, "id", truncate(req.id), "why", why)
	if r.losses != nil {
		r.losses.Undelivered(context.WithoutCancel(r.ctx), req.call, why)
	}
}

// unsent handles a call the gate let through whose write to the server
// failed: unless the server's going answered it already, it leaves the
// table, the gate hears it was not sent, and the client is told.
func (r *relay) unsent(req *request) {
	r.mu.Lock()
	owned := r.inflight[req.key] == req
	cancelled := req.cancelled
	if owned {
		r.stopTimeout(req)
		delete(r.inflight, req.key)
		if !cancelled {
			r.answering++
		}
	}
	r.mu.Unlock()
	if !owned {
		return
	}
	r.undelivered(req, NotSent)
	if !cancelled {
		r.answer(errorResponse(req.id, codeServerGone, "aegis: the call could not be sent to the MCP server; it did not run"))
	}
}

// answer writes a call's answer that a goroutine of its own produced (a
// decision, not the server's response), after the call left the in-flight
// table. The answer holds its slot until it is written (see answering).
// The caller MUST have counted it in r.answering under r.mu.
func (r *relay) answer(msg []byte) {
	r.toClient(msg)
	r.mu.Lock()
	r.answering--
	r.mu.Unlock()
}

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

// errServerClosed is writeServer's error once the server's input is closed.
var errServerClosed = errors.New("the MCP server's input is closed")

// writeServer writes one message to the server; r.smu must be held. A failed
// write is logged: the server is gone, which its reader will notice. The
// error says only that msg was not written whole.
func (r *relay) writeServer(msg []byte) error {
	if r.serverEOF.Load() {
		return errServerClosed
	}
	err := writeLine(r.server, msg)
	if err != nil && !r.serverEOF.Load() {
		r.log.Warn("proxy: writing to server", "err", err)
	}
	return err
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
