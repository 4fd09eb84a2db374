package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"

	"github.com/aegis-mcp/aegis/internal/gateway"
)

// SessionGate returns the relay's Gate over a gateway.Session, the whole
// pipeline of one wrapped server: calls, tool lists, results and errors go
// through it, and a call forwarded but never answered is recorded as such
// (gateway.Session.Undelivered). The two speak different types; nothing
// more happens here.
func SessionGate(s *gateway.Session) Gate {
	return sessionGate{s: s, seqs: &forwarded{m: map[*Call]uint64{}}}
}

type sessionGate struct {
	s    *gateway.Session
	seqs *forwarded
}

// forwarded holds the chain seq of each call forwarded and not yet
// answered, for the record of one the server never answers.
type forwarded struct {
	mu sync.Mutex
	m  map[*Call]uint64
}

func (f *forwarded) put(c *Call, seq uint64) {
	f.mu.Lock()
	f.m[c] = seq
	f.mu.Unlock()
}

func (f *forwarded) take(c *Call) (uint64, bool) {
	f.mu.Lock()
	seq, ok := f.m[c]
	delete(f.m, c)
	f.mu.Unlock()
	return seq, ok
}

func (g sessionGate) Call(ctx context.Context, c *Call) (Verdict, error) {
	var o gateway.Outcome
	var err error
	var in *gateway.Input
	if c.InputResponses != nil || c.Continues || c.InBand || c.Answer != nil {
		in = &gateway.Input{Responses: c.InputResponses, Continues: c.Continues, InBand: c.InBand, Answer: c.Answer}
	}
	if c.Method != "" {
		o, err = g.s.RequestInput(ctx, c.Method, c.Params, in)
	} else {
		o, err = g.s.CallInput(ctx, c.Tool, c.Arguments, in)
	}
	if err == nil && o.Forward {
		g.seqs.put(c, o.Seq)
	}
	return Verdict{Forward: o.Forward, Arguments: o.Arguments, InputResponses: o.InputResponses, Reason: o.Reason, RunUnbound: o.RunUnbound, Question: o.Question}, err
}

// Undelivered records, in the chain, a call the relay let through that got
// no answer.
func (g sessionGate) Undelivered(ctx context.Context, c *Call, why Loss) {
	seq, ok := g.seqs.take(c)
	if !ok {
		return
	}
	var how string
	switch why {
	case NotSent:
		how = "was not sent: the server had gone; it did not run"
	case TimedOut:
		how = "got no answer within call_timeout and was cancelled; it may have run"
	case AnswerWithheld:
		how = "got an answer that was not a valid message, which was withheld; it may have run"
	default:
		how = "got no answer: the server stopped; it may have run"
	}
	var err error
	if c.Method != "" {
		err = g.s.RequestUndelivered(ctx, c.Method, c.Params, seq, how)
	} else {
		err = g.s.Undelivered(ctx, c.Tool, seq, how)
	}
	if err != nil {
		slog.Error("recording an undelivered call", "method", c.Method, "tool", c.Tool, "err", err)
	}
}

func (g sessionGate) Tools(ctx context.Context, tools []json.RawMessage) ([]json.RawMessage, error) {
	return g.s.Tools(ctx, tools)
}

func (g sessionGate) Result(ctx context.Context, c *Call, result json.RawMessage) (json.RawMessage, error) {
	g.seqs.take(c) // answered
	if c.Method != "" {
		return withheld(g.s.RequestResult(ctx, c.Method, c.Params, result))
	}
	return withheld(g.s.Result(ctx, c.Tool, result))
}

func (g sessionGate) Error(ctx context.Context, c *Call, errObj json.RawMessage) (json.RawMessage, error) {
	g.seqs.take(c) // answered
	if c.Method != "" {
		return withheld(g.s.RequestError(ctx, c.Method, c.Params, errObj))
	}
	return withheld(g.s.Error(ctx, c.Tool, errObj))
}

// ServerRequest decides, and records, a request of the server to the
// client.
func (g sessionGate) ServerRequest(ctx context.Context, method string, params json.RawMessage) (Verdict, error) {
	o, err := g.s.ServerRequest(ctx, method, params)
	return Verdict{Forward: o.Forward, Reason: o.Reason}, err
}

// Answer checks, and records, the client's answer to a request of the
// server.
func (g sessionGate) Answer(ctx context.Context, method string, result json.RawMessage) (json.RawMessage, error) {
	return withheld(g.s.Answer(ctx, method, result))
}

// withheld gives a refusal of the session's result side the relay's type,
// whose reason the model reads.
func withheld(out []byte, err error) (json.RawMessage, error) {
	var r *gateway.Refusal
	if errors.As(err, &r) {
		return nil, &Withheld{Reason: r.Error()}
	}
	return out, err
}
