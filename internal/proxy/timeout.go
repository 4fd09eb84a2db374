package proxy

import (
	"fmt"
	"time"
)

// This file gives up on a call the server does not answer (call_timeout).

// A stopper is a timer the relay may stop: *time.Timer, or a test's.
type stopper interface{ Stop() bool }

// afterFunc is time.AfterFunc as a stopper.
func afterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

// startTimeout starts req's call timeout, if there is one; r.mu must be
// held, and req just marked forwarded.
func (r *relay) startTimeout(req *request) {
	if r.callTimeout <= 0 || req.call == nil {
		return
	}
	req.timer = r.afterFunc(r.callTimeout, func() { r.timeout(req) })
}

// stopTimeout stops req's call timeout, if it has one; r.mu must be held.
// A timeout that fires all the same finds req gone and does nothing.
func (r *relay) stopTimeout(req *request) {
	if req.timer != nil {
		req.timer.Stop()
	}
}

// timeout gives up on a forwarded call the server has not answered: it
// leaves the table (so a late answer is dropped as answering nothing), the
// gate hears of it, the server is sent notifications/cancelled for it, and
// the client is told, in that order: the cancellation reaches the server
// before anything the client sends once it has read the answer (a retry).
//
// The client's answer is a tool result with isError set, not a JSON-RPC
// error: clients hand tool results to the model, which can then decide
// what to do (wait, retry, try another way), and MCP reports a tool that
// failed to run as a tool error, not as a protocol error.
func (r *relay) timeout(req *request) {
	r.mu.Lock()
	if r.inflight[req.key] != req {
		// Answered, cancelled, or settled by the server's going.
		r.mu.Unlock()
		return
	}
	delete(r.inflight, req.key)
	r.answering++
	r.mu.Unlock()
	r.undelivered(req, TimedOut)
	r.toServer(cancelNotification(req.id, fmt.Sprintf("aegis: no answer within the call timeout (%v)", r.callTimeout)))
	r.answer(toolError(req, fmt.Sprintf(
		"aegis cancelled this call: the MCP server did not answer it within the call timeout (%v). The tool may have run, in part or whole; check before calling it again.",
		r.callTimeout)))
}

// cancelNotification returns notifications/cancelled for the request with
// id (raw JSON), with its newline.
func cancelNotification(id []byte, reason string) []byte {
	b := make([]byte, 0, 96+len(id)+len(reason))
	b = append(b, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`...)
	b = append(b, id...)
	b = append(b, `,"reason":`...)
	b = appendString(b, reason)
	return append(b, "}}\n"...)
}
