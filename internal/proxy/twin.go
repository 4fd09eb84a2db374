package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// This file runs the calls a gate marks unbound ([Verdict.RunUnbound]) in the
// server's unbound twin (DESIGN.md R29): a second instance of the server,
// started by [Options.Twin] with no file or network authority, on the first
// such call. The relay is the twin's only client: it mirrors the client's
// initialize (without the client's capabilities: the twin has nobody to
// ask), sends each unbound call under an id of its own, and hands the
// answer back under the client's id, where it passes the same result
// checks as the server's. The twin's requests are answered by the relay
// (ping; roots/list with no roots; anything else refused), its progress
// notifications reach the client, and its other notifications go nowhere:
// the client's view of the server is the server's.

// twinStartTimeout bounds starting the twin and its initialize.
const twinStartTimeout = 30 * time.Second

// A twin is the relay's client of the unbound twin.
type twin struct {
	start  func() (*exec.Cmd, func(), error)
	stderr io.Writer // the server's stderr tee
	notify func([]byte)
	log    *slog.Logger
	maxMsg int
	depth  int
	grace  time.Duration

	imu  sync.Mutex
	init []byte // the client's initialize params, raw; nil if none seen

	once    sync.Once
	started chan struct{} // closed once the twin is initialised, or failed to
	err     error         // why the twin could not start; set before started closes

	wmu    sync.Mutex // serialises writes to the twin
	w      io.WriteCloser
	closed bool // close has run: a twin that starts now is stopped at once

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan []byte
	gone    error // the twin has gone: no more calls

	cmd    *exec.Cmd
	done   func()
	exited chan struct{}
}

func newTwin(start func() (*exec.Cmd, func(), error), stderr io.Writer, notify func([]byte), o options, grace time.Duration) *twin {
	return &twin{
		start: start, stderr: stderr, notify: notify, log: o.log,
		maxMsg: o.maxMsg, depth: o.maxDepth, grace: grace,
		started: make(chan struct{}), pending: map[uint64]chan []byte{},
	}
}

// sawInitialize keeps the client's first initialize params, to mirror.
func (t *twin) sawInitialize(params []byte) {
	t.imu.Lock()
	if t.init == nil {
		t.init = bytes.Clone(params)
	}
	t.imu.Unlock()
}

// errTwinGone is the reason a call finds no twin.
var errTwinGone = errors.New("the unbound twin of the server has exited")

// call runs a request of method (tools/call, or prompts/get for a prompt
// that runs unbound) with params in the twin and returns its answer: the
// result or error object, raw, and whether it is an error. ctx's end
// cancels the call at the twin.
func (t *twin) call(ctx context.Context, method string, params []byte) (answer []byte, isErr bool, err error) {
	t.once.Do(func() { go t.run() })
	select {
	case <-t.started:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	if t.err != nil {
		return nil, false, t.err
	}
	t.mu.Lock()
	if t.gone != nil {
		t.mu.Unlock()
		return nil, false, t.gone
	}
	t.next++
	id := t.next
	ch := make(chan []byte, 1)
	t.pending[id] = ch
	t.mu.Unlock()
	if err := t.send(rpcRequest(id, method, params)); err != nil {
		t.forget(id)
		return nil, false, errTwinGone
	}
	select {
	case line, ok := <-ch:
		if !ok {
			return nil, false, errTwinGone
		}
		m, err := parseMessage(line, t.depth)
		if err != nil || m.kind != kindResponse {
			return nil, false, errors.New("the unbound twin's answer was not a valid message")
		}
		if m.error.ok() {
			return m.error.of(line), true, nil
		}
		return m.result.of(line), false, nil
	case <-ctx.Done():
		t.forget(id)
		t.send(cancelNotification(strconv.AppendUint(nil, id, 10), "aegis: the call was cancelled"))
		return nil, false, ctx.Err()
	}
}

func (t *twin) forget(id uint64) {
	t.mu.Lock()
	delete(t.pending, id)
	t.mu.Unlock()
}

// rpcRequest returns a JSON-RPC request line with a numeric id.
func rpcRequest(id uint64, method string, params []byte) []byte {
	b := append([]byte(`{"jsonrpc":"2.0","id":`), strconv.AppendUint(nil, id, 10)...)
	b = append(b, `,"method":`...)
	b = appendString(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, "}\n"...)
}

func (t *twin) send(line []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.w == nil {
		return errTwinGone
	}
	_, err := t.w.Write(line)
	return err
}

// run starts the twin and initialises it, then reads it until it ends.
func (t *twin) run() {
	out, err := t.launch()
	if err != nil {
		t.log.Warn("proxy: the unbound twin could not start", "err", err)
		t.err = fmt.Errorf("aegis could not start the server's unbound twin: %w", err)
		t.mu.Lock()
		t.gone = t.err
		t.mu.Unlock()
		close(t.started)
		return
	}
	initialised := make(chan error, 1)
	go func() { initialised <- t.initialise() }()
	readDone := make(chan struct{})
	go func() {
		t.read(out)
		close(readDone)
	}()
	timer := time.NewTimer(twinStartTimeout)
	select {
	case err = <-initialised:
	case <-readDone:
		err = errTwinGone
	case <-timer.C:
		err = errors.New("it did not answer initialize in time")
	}
	timer.Stop()
	if err != nil {
		t.err = fmt.Errorf("aegis could not start the server's unbound twin: %w", err)
	}
	close(t.started)
	<-readDone
	t.mu.Lock()
	if t.gone == nil {
		t.gone = errTwinGone
	}
	for id, ch := range t.pending {
		close(ch)
		delete(t.pending, id)
	}
	t.mu.Unlock()
}

// launch starts the twin's process.
func (t *twin) launch() (io.ReadCloser, error) {
	cmd, done, err := t.start()
	if err != nil {
		return nil, err
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		done()
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		done()
		return nil, err
	}
	cmd.Stderr = t.stderr
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = t.grace
	}
	if err := cmd.Start(); err != nil {
		done()
		return nil, err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.wmu.Lock()
	if t.closed {
		t.wmu.Unlock()
		in.Close()
		cmd.Process.Kill()
		<-exited
		done()
		return nil, errTwinGone
	}
	t.w, t.cmd, t.done, t.exited = in, cmd, done, exited
	t.wmu.Unlock()
	return out, nil
}

// initialise mirrors the client's initialize, if it sent one: the same
// protocol version and client, no capabilities.
func (t *twin) initialise() error {
	t.imu.Lock()
	params := t.init
	t.imu.Unlock()
	if params == nil {
		return nil // a revision without initialize: each request names its own
	}
	mirrored, err := withoutCapabilities(params)
	if err != nil {
		return err
	}
	t.mu.Lock()
	ch := make(chan []byte, 1)
	t.pending[0] = ch
	t.mu.Unlock()
	if err := t.send(rpcRequest(0, "initialize", mirrored)); err != nil {
		return errTwinGone
	}
	line, ok := <-ch
	if !ok {
		return errTwinGone
	}
	if m, err := parseMessage(line, t.depth); err != nil || m.error.ok() || !m.result.ok() {
		return errors.New("it refused initialize")
	}
	return t.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
}

// read reads the twin's messages until its output ends.
func (t *twin) read(out io.Reader) {
	lr := newLineReader(out, t.maxMsg)
	for {
		line, err := lr.next()
		if asTooLong(err) != nil {
			if id, ok := twinID(asTooLong(err).ID); ok {
				t.deliver(id, errorResponse([]byte("0"), codeInternalError, "the unbound twin's answer was too long"))
			}
			continue
		}
		if err != nil {
			return
		}
		m, err := parseMessage(line, t.depth)
		if err != nil {
			t.log.Warn("proxy: dropped an invalid message from the unbound twin", "err", err)
			if id, ok := twinID(m.id); ok {
				t.deliver(id, errorResponse([]byte("0"), codeInternalError, "the unbound twin's answer was not valid"))
			}
			continue
		}
		switch m.kind {
		case kindResponse:
			if id, ok := twinID(m.id); ok {
				t.deliver(id, bytes.Clone(line))
			}
		case kindRequest:
			t.answer(line, m)
		case kindNotification:
			if string(m.method) == "notifications/progress" {
				// Its token is the client's, sent with the call.
				t.notify(bytes.Clone(line))
			}
		}
	}
}

// twinID reads an id the relay gave the twin.
func twinID(raw []byte) (uint64, bool) {
	id, err := strconv.ParseUint(string(raw), 10, 64)
	return id, err == nil
}

func (t *twin) deliver(id uint64, line []byte) {
	t.mu.Lock()
	ch := t.pending[id]
	delete(t.pending, id)
	t.mu.Unlock()
	if ch != nil {
		ch <- line
	}
}

// answer answers a request of the twin: it has no client to ask.
func (t *twin) answer(line []byte, m message) {
	id := bytes.Clone(m.id)
	var reply []byte
	switch string(m.method) {
	case "ping":
		reply = append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":{}}`+"\n"...)
	case "roots/list":
		reply = append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":{"roots":[]}}`+"\n"...)
	default:
		reply = errorResponse(id, codeRefused, "aegis: the server's unbound twin has nobody to ask")
	}
	go t.send(reply)
}

// close shuts the twin down, if it ran: its input closed, then SIGTERM,
// then SIGKILL, grace apart.
func (t *twin) close() {
	t.once.Do(func() {
		t.err = errTwinGone
		close(t.started)
	})
	t.wmu.Lock()
	w, cmd, exited, done := t.w, t.cmd, t.exited, t.done
	t.w, t.closed = nil, true
	t.wmu.Unlock()
	if w == nil {
		return
	}
	w.Close()
	terminate(&process{cmd: cmd}, exited, t.grace, t.log)
	done()
}

// withoutCapabilities returns the initialize params with capabilities
// emptied: the twin may not ask the client anything.
func withoutCapabilities(params []byte) ([]byte, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(params, &members); err != nil || members == nil {
		return nil, errors.New("the client's initialize params are not an object")
	}
	members["capabilities"] = json.RawMessage(`{}`)
	return json.Marshal(members)
}

// runUnbound runs a call the gate let through unbound in the twin, and
// answers the client with the twin's answer, checked as the server's
// answers are. It runs on the call's gate goroutine.
func (r *relay) runUnbound(req *request, msg []byte) {
	var params []byte
	if m, err := parseMessage(msg, r.maxDepth); err == nil && m.params.ok() {
		params = m.params.of(msg)
	}
	ctx, cancel := context.WithCancel(r.ctx)
	if r.callTimeout > 0 {
		ctx, cancel = context.WithTimeout(r.ctx, r.callTimeout)
	}
	defer cancel()
	r.mu.Lock()
	var refusal string
	switch {
	case r.twin == nil:
		refusal = "aegis refused this call: the tool runs unbound (with no file or network authority), and this gateway has no unbound twin of the server to run it in"
	case params == nil:
		refusal = reasonUnchecked
	case r.gone != nil:
		refusal = fmt.Sprintf("aegis: %v; the call was not sent", r.gone)
	}
	cancelled := req.cancelled
	if refusal != "" || cancelled {
		delete(r.inflight, req.key)
		if !cancelled {
			r.answering++
		}
		r.mu.Unlock()
		r.undelivered(req, NotSent)
		if !cancelled {
			r.answer(toolError(req, refusal))
		}
		return
	}
	req.forwarded, req.unbound, req.unbind = true, true, cancel
	r.mu.Unlock()

	method := "tools/call"
	if req.call != nil && req.call.Method != "" {
		method = req.call.Method
	}
	answer, isErr, err := r.twin.call(ctx, method, params)
	r.mu.Lock()
	owned := r.inflight[req.key] == req
	if owned {
		delete(r.inflight, req.key)
		if err != nil {
			r.answering++
		}
	}
	r.mu.Unlock()
	if !owned {
		return // the client cancelled it, or it was answered as the server went
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			r.undelivered(req, TimedOut)
			r.answer(toolError(req, fmt.Sprintf(
				"aegis cancelled this call: the server's unbound twin did not answer it within the call timeout (%v). The tool may have run, in part or whole; check before calling it again.",
				r.callTimeout)))
			return
		}
		r.undelivered(req, NoAnswer)
		r.answer(errorResponse(req.id, codeServerGone, "aegis: "+err.Error()))
		return
	}
	line := append([]byte(`{"jsonrpc":"2.0","id":`), req.id...)
	if isErr {
		line = append(line, `,"error":`...)
	} else {
		line = append(line, `,"result":`...)
	}
	line = append(append(line, answer...), "}\n"...)
	m, perr := parseMessage(line, r.maxDepth)
	if perr != nil {
		r.undelivered(req, AnswerWithheld)
		r.toClient(errorResponse(req.id, codeInternalError, "aegis: the unbound twin's response was withheld: "+withheldReason(perr)))
		return
	}
	if out := r.checkResult(line, m, req); out != nil {
		r.toClient(out)
	}
}
