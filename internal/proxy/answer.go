package proxy

import (
	"bytes"
	"errors"
)

// This file checks the client's answers to the server's requests (a
// person's answer to an elicitation/create) when the gate is an
// [AnswerChecker]: the relay remembers the id of each request of the
// server it let through, at most maxAsked at once, and passes the
// client's answer under that id to the gate before the server sees it.
// A request of the server past maxAsked is refused (to the server), so
// no answer goes unchecked.

// maxAsked bounds the server's requests awaiting the client's answer.
const maxAsked = 1024

// expectAnswer remembers that the server's request with id, of method,
// was passed to the client, and reports whether there was room. It does
// nothing, and reports true, when the gate checks no answers.
func (r *relay) expectAnswer(id []byte, method string) bool {
	if r.answers == nil {
		return true
	}
	key, ok := responseKey(id)
	if !ok {
		// An id the client could not answer by: nothing to check.
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.asked == nil {
		r.asked = make(map[string]string)
	}
	if _, dup := r.asked[key]; !dup && len(r.asked) >= maxAsked {
		return false
	}
	r.asked[key] = method
	return true
}

// awaitsAnswer reports whether id names a request of the server whose
// answer the gate checks.
func (r *relay) awaitsAnswer(id []byte) bool {
	if r.answers == nil {
		return false
	}
	key, ok := responseKey(id)
	if !ok {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, found := r.asked[key]
	return found
}

// clientAnswer relays a response of the client to the server: checked by
// the gate when it answers a request of the server the gate let through.
func (r *relay) clientAnswer(line []byte, m message) {
	method, ok := "", false
	if r.answers != nil {
		if key, kok := responseKey(m.id); kok {
			r.mu.Lock()
			method, ok = r.asked[key]
			delete(r.asked, key)
			r.mu.Unlock()
		}
	}
	if !ok || !m.result.ok() {
		r.toServer(line)
		return
	}
	out, err := r.answers.Answer(r.ctx, method, bytes.Clone(m.result.of(line)))
	if err == nil && out != nil {
		out, err = object(out, r.maxDepth)
	}
	switch {
	case err != nil:
		r.log.Warn("proxy: withheld the client's answer to a request of the server", "method", method, "err", err)
		reason := "aegis withheld the client's answer: it could not be checked"
		var w *Withheld
		if errors.As(err, &w) && w.Reason != "" {
			reason = "aegis withheld the client's answer: " + w.Reason
		}
		r.toServer(errorResponse(bytes.Clone(m.id), codeRefused, reason))
	case out == nil:
		r.toServer(line)
	default:
		r.toServer(splice(line, m.result, out))
	}
}
