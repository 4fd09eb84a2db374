package gateway

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

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/envelope"
	"github.com/aegis-mcp/aegis/internal/pin"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// Session is the whole pipeline for one wrapped server, as one client
// session sees it (DESIGN.md "The pipeline of one call"): the pinned tool
// definitions, the engine's checks and decision, the record, and the result
// side. `aegis run` relays through one; `aegis eval` and `aegis explain` ask
// one too, so that what they say is what the relay does.
//
// A Session is safe for concurrent use.
type Session struct {
	eng    *Engine
	srv    *Server
	cfg    SessionConfig
	rec    recorder // Log nil: decisions are not recorded
	logger *slog.Logger
	notify io.Writer

	mu      sync.Mutex
	schemas map[pin.Digest][]byte // input schemas by pinned definition

	// rootsAsked is set once the client was let to answer the server's
	// roots/list (Call.RootsAsked).
	rootsAsked atomic.Bool

	// grants are the approvals given for the rest of the session.
	grants grants
	// continued are the calls a person approved, whose continuations
	// are not asked again; key signs the questions put in round trips.
	continued continued
	key       stateKey

	// mem lends each call's check its storage, taken back when Call
	// returns: what Call returns is copied out of it.
	mem sync.Pool
}

// SessionConfig says which server a [Session] is for, who the session acts
// for, and where its decisions go. The zero value of each field says what
// it means when unset.
type SessionConfig struct {
	// Server is the configured name of the wrapped server. Required.
	Server string
	// ID, Principal, Roles and Origin are the session's facts, recorded
	// with every decision. An ID opens the session in the engine's session
	// store, tainted from its start when Origin is unattended.
	ID        string
	Principal string
	Roles     []string
	Origin    capability.Origin
	// Pins holds the server's pinned tool definitions (R5). nil means none
	// are known (a server that never ran under aegis, asked about by
	// `aegis eval`): the pin and schema steps are skipped, and
	// [Session.PinsKnown] says so.
	Pins *pin.Store
	// Log makes each decision durable before Call returns (R25); nil
	// records nothing.
	Log Appender
	// Envelopes, if set with Log, receives each call's redacted input (R23).
	Envelopes *envelope.Store
	// Redact takes secrets out of arguments before they enter an envelope;
	// nil means redactEnvelope, which takes out every secret DLP finds,
	// whatever the server's DLP actions say.
	Redact func(arguments []byte) ([]byte, []envelope.Redaction)
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// Notify receives what the person running aegis must act on (a held
	// tool, a withheld result), one line each; nil discards it.
	Notify io.Writer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Observe, if set, is told of each decision, for metrics.
	Observe func(Observation)
	// Approvals, if set, holds each call and request the policy answers
	// ask until a person answers it (R21); nil refuses them, saying a
	// person's approval is needed. The server's own requests are never
	// held: they are refused.
	Approvals *Approvals
}

// NewSession returns the pipeline of cfg.Server under e.
func (e *Engine) NewSession(cfg *SessionConfig) (*Session, error) {
	srv := e.servers[cfg.Server]
	if srv == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownServer, cfg.Server)
	}
	s := &Session{
		eng: e, srv: srv, cfg: *cfg,
		rec:     recorder{Engine: e, Log: cfg.Log, Envelopes: cfg.Envelopes, Redact: cfg.Redact, Now: cfg.Now},
		logger:  cfg.Logger,
		notify:  cfg.Notify,
		schemas: map[pin.Digest][]byte{},
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.notify == nil {
		s.notify = io.Discard
	}
	if cfg.Log == nil {
		s.rec.Envelopes = nil
	}
	if s.rec.Redact == nil {
		s.rec.Redact = redactEnvelope
	}
	s.mem.New = func() any { return new(callMem) }
	if cfg.ID != "" {
		e.OpenSession(cfg.ID, cfg.Origin)
	}
	return s, nil
}

// Engine returns the engine s decides with.
func (s *Session) Engine() *Engine { return s.eng }

// Server returns the configuration of s's server.
func (s *Session) Server() *Server { return s.srv }

// PinsKnown reports whether s checks calls against pinned tool definitions.
func (s *Session) PinsKnown() bool { return s.cfg.Pins != nil }

// Outcome is what the relay does with one call: forward it (with
// Arguments, when aegis rewrote them) or answer it with Reason. It holds
// nothing of the check's pooled storage.
type Outcome struct {
	Effect  policy.Effect
	Forward bool
	// Arguments replaces the model's arguments when aegis shaped them
	// (pinned fields, identity, neutralised templates, clamps); nil
	// forwards them as they came.
	Arguments []byte
	// InputResponses replaces a retry's answers to the server's requests
	// for input when aegis redacted secrets from them; nil forwards them
	// as they came.
	InputResponses []byte
	// Reason is the answer the model reads when the call is not forwarded:
	// it names the rule, never a secret.
	Reason string
	// Seq is the call's entry in the chain; 0 when nothing was recorded.
	Seq uint64
	// RunUnbound says that a forwarded call is to run in the server's unbound
	// twin, not in the server ([Tool.RunUnbound]).
	RunUnbound bool
	// Question, if set, is a question put to the person at the client in
	// the call's round trips ([Input.InBand]): the call is not forwarded,
	// and the relay answers it with an input_required result asking it.
	Question *Question
}

// Call runs tool with arguments, as the model wrote them, through the
// pipeline in the session's name: pin, schema, shape, derive, policy,
// checks, record. It returns once the decision is durable; an error means
// it could not be recorded, and the call MUST NOT be forwarded.
func (s *Session) Call(ctx context.Context, tool string, arguments []byte) (Outcome, error) {
	return s.CallInput(ctx, tool, arguments, nil)
}

// CallInput is [Session.Call] for a call that may retry a multi-round-trip
// request: in, if not nil, says what the retry brings (see [Input]).
func (s *Session) CallInput(ctx context.Context, tool string, arguments []byte, in *Input) (Outcome, error) {
	c := s.call(tool, arguments)
	in.apply(c)
	m := s.mem.Get().(*callMem)
	defer s.mem.Put(m)
	v, seq, err := s.run(ctx, c, m, true)
	if err != nil {
		return Outcome{Effect: policy.Deny}, err
	}
	if s.logger.Enabled(ctx, slog.LevelInfo) { // off by default: build the record only when logged
		s.logger.Info("decision", "tool", tool, "decision", v.Effect.String())
	}
	out := outcomeOf(c, &v, seq, "call")
	if v.Effect == policy.Ask && s.cfg.Approvals != nil {
		if out, err = s.approve(ctx, c, &v, seq, "call", out); err != nil {
			return Outcome{Effect: policy.Deny}, err
		}
	}
	if t := s.srv.Tools[tool]; out.Forward && t != nil && t.RunUnbound {
		out.RunUnbound = true
	}
	if out.Forward && !bytes.Equal(v.Arguments, arguments) {
		// Shaped, in m, which the next call reuses: copied out.
		out.Arguments = bytes.Clone(v.Arguments)
	}
	return out, nil
}

// outcomeOf is what the relay does with c, whose verdict is v and entry
// seq: forward it (with the answers a person gave, redacted), or answer
// it with a reason naming what (a call, a request) was not let through.
func outcomeOf(c *Call, v *Verdict, seq uint64, what string) Outcome {
	out := Outcome{Effect: v.Effect, Seq: seq}
	switch v.Effect {
	case policy.Allow:
		out.Forward = true
		out.InputResponses = redactedInput(c, v)
	case policy.Ask:
		// Approvals (DESIGN.md R21) are not built yet: an ask cannot be
		// answered, so it is refused, saying so.
		out.Reason = "aegis: this " + what + " needs a person's approval, which this gateway cannot ask for yet: " + v.Reason()
	default:
		out.Reason = "aegis denied this " + what + ": " + v.Reason()
	}
	return out
}

// Decide runs c through the same pipeline as [Session.Call] and returns the
// whole verdict, in memory of its own; it records nothing. c's Server must
// be the session's; its session facts are c's own (`aegis eval` decides
// events of many sessions through one Session per server).
func (s *Session) Decide(ctx context.Context, c *Call) Verdict {
	c = s.pinned(c)
	v, _, _ := s.run(ctx, c, new(callMem), false)
	return v
}

// Explain is [Session.Decide] that also lists, when the call reached the
// policy, every rule that matched it. It counts nothing against a cap.
func (s *Session) Explain(ctx context.Context, c *Call) (Verdict, *policy.Explanation) {
	return s.eng.explain(ctx, s.pinned(c))
}

// call is the gateway call of tool in s's name, its pin step applied.
func (s *Session) call(tool string, arguments []byte) *Call {
	c := s.facts(tool, arguments)
	s.pinStep(c)
	return c
}

// facts is the gateway call of tool in s's name, with the session's facts
// only: what a record of its result or its loss names.
func (s *Session) facts(tool string, arguments []byte) *Call {
	return &Call{
		RootsAsked: s.rootsAsked.Load(),
		Session:    s.cfg.ID,
		Principal:  s.cfg.Principal,
		Roles:      s.cfg.Roles,
		Origin:     s.cfg.Origin,
		Taint:      s.cfg.Origin == capability.Unattended,
		Server:     s.cfg.Server,
		Tool:       tool,
		Arguments:  arguments,
	}
}

// pinned returns a copy of c, on s's server, with its pin step applied.
func (s *Session) pinned(c *Call) *Call {
	cc := *c
	if cc.Server != s.cfg.Server {
		cc.Refuse = &Refusal{Rule: RuleUndecidable, Err: fmt.Errorf("call for server %q asked of server %q's session", c.Server, s.cfg.Server)}
		return &cc
	}
	if cc.Method != "" {
		s.methodStep(&cc)
		return &cc
	}
	s.pinStep(&cc)
	return &cc
}

// run checks c with m's storage and, when record is set and s has a log,
// records its decision before returning.
func (s *Session) run(ctx context.Context, c *Call, m *callMem, record bool) (Verdict, uint64, error) {
	if obs := s.cfg.Observe; obs != nil {
		start := time.Now()
		v, seq, err := s.run1(ctx, c, m, record)
		obs(Observation{Server: s.cfg.Server, Method: c.Method, Effect: v.Effect, Rules: v.Rules(), Took: time.Since(start), Err: err})
		return v, seq, err
	}
	return s.run1(ctx, c, m, record)
}

func (s *Session) run1(ctx context.Context, c *Call, m *callMem, record bool) (Verdict, uint64, error) {
	if record && s.rec.Log != nil {
		return s.rec.call(ctx, c, m)
	}
	v, _ := s.eng.check(ctx, c, false, m)
	return v, 0, nil
}

// An Observation is one decision as metrics see it: the server, the
// method ("" for tools/call), the effect, the rules that made it, how
// long deciding and recording took, and whether recording failed.
type Observation struct {
	Server, Method string
	Effect         policy.Effect
	Rules          []string
	Took           time.Duration
	Err            error
}

// Undelivered records that a call [Session.Call] allowed, recorded at seq,
// got no answer from the server: why says how, in words that complete
// "the call allowed at seq N …" ("was not sent: …; it did not run"). The
// chain then does not leave the call looking served.
func (s *Session) Undelivered(ctx context.Context, tool string, seq uint64, why string) error {
	if s.rec.Log == nil {
		return nil
	}
	return s.rec.undelivered(ctx, s.facts(tool, nil), seq, why)
}

// RequestUndelivered is [Session.Undelivered] for a request that
// [Session.Request] let through.
func (s *Session) RequestUndelivered(ctx context.Context, method string, params []byte, seq uint64, why string) error {
	if s.rec.Log == nil {
		return nil
	}
	c := s.facts(requestName(method, params), nil)
	c.Method = method
	return s.rec.undelivered(ctx, c, seq, why)
}

// what names a tool or a method's target for messages: "fs/read_file",
// "fs prompts/get \"x\"".
func (s *Session) what(method, tool string) string {
	switch {
	case method == "":
		return s.cfg.Server + "/" + tool
	case tool == "":
		return s.cfg.Server + " " + method
	}
	return fmt.Sprintf("%s %s %q", s.cfg.Server, method, tool)
}

// Result takes in the result of a call s let through (the pipeline's last
// line): ids for provenance, taint from an untrusted tool, secrets redacted
// or the result withheld (DLP). It returns the result to pass on, nil for
// the server's own bytes. A [*Refusal] error withholds the result with a
// reason the model may read; any other error withholds it with none.
func (s *Session) Result(ctx context.Context, tool string, result []byte) ([]byte, error) {
	return s.result(ctx, "", tool, result, false)
}

// RequestResult is [Session.Result] for the result of a request that
// [Session.Request] let through: of method, on what it names (the
// method's target as the request gave it; see [Call]).
func (s *Session) RequestResult(ctx context.Context, method string, params, result []byte) ([]byte, error) {
	return s.result(ctx, method, requestName(method, params), result, false)
}

// RequestError is [Session.Error] for a request [Session.Request] let
// through.
func (s *Session) RequestError(ctx context.Context, method string, params, errObj []byte) ([]byte, error) {
	return s.result(ctx, method, requestName(method, params), errObj, true)
}

// Error is [Session.Result] for the JSON-RPC error object a server answered
// a call with: its message and data are text the model reads, so they pass
// DLP, and an untrusted tool's error taints the session as its result
// would (R33). It harvests no ids.
func (s *Session) Error(ctx context.Context, tool string, errObj []byte) ([]byte, error) {
	return s.result(ctx, "", tool, errObj, true)
}

func (s *Session) result(ctx context.Context, method, tool string, result []byte, isErr bool) ([]byte, error) {
	out, found, err := s.eng.Result(&ResultEvent{Session: s.cfg.ID, Server: s.cfg.Server, Method: method, Tool: tool, Result: result, Error: isErr})
	var refusal *Refusal
	withheld := err != nil && errors.As(err, &refusal) // errors.As's target escapes: not for every result
	// Findings enter the chain, by kind and location; a result whose
	// findings cannot be recorded is withheld.
	if s.rec.Log != nil && len(found) > 0 {
		c := s.facts(tool, nil)
		c.Method = method
		if rerr := s.rec.result(ctx, c, found, withheld, isErr); rerr != nil {
			s.logger.Error("recording a result", "tool", tool, "err", rerr)
			return nil, &Refusal{Rule: RuleDLP, Err: errors.New("its findings could not be recorded")}
		}
	}
	switch {
	case withheld:
		fmt.Fprintf(s.notify, "aegis: withheld a result of %s: %v\n", s.what(method, tool), err)
		return nil, err
	case err != nil:
		s.logger.Warn("reading a result", "tool", tool, "err", err)
	}
	if len(found) > 0 {
		s.logger.Warn("secrets in a result", "tool", tool, "findings", len(found), "redacted", out != nil)
	}
	return out, nil
}

// Tools pins the tools of one tools/list page and returns those the client
// may see: a held tool, a definition aegis cannot read and (with
// hide_unallowed) a tool no rule could allow are left out. It returns tools
// itself, to be relayed byte for byte, when nothing is left out.
func (s *Session) Tools(ctx context.Context, tools []json.RawMessage) ([]json.RawMessage, error) {
	defs := make([]*pin.Def, 0, len(tools))
	keep := make([]bool, len(tools))
	at := make([]int, 0, len(tools)) // tools index of each def
	for i, t := range tools {
		d, err := pin.Parse(t)
		if err != nil {
			fmt.Fprintf(s.notify, "aegis: server %q listed a tool aegis cannot read; it is hidden: %v\n", s.cfg.Server, err)
			continue
		}
		defs = append(defs, d)
		at = append(at, i)
	}
	status := make([]pin.Status, len(defs))
	if s.cfg.Pins != nil {
		var err error
		if status, err = s.cfg.Pins.Observe(defs, time.Now()); err != nil {
			return nil, fmt.Errorf("pinning the tools: %w", err)
		}
	}
	hidden := len(defs) < len(tools)
	for j, d := range defs {
		switch status[j] {
		case pin.Held:
			fmt.Fprintf(s.notify, "aegis: tool %q of server %q changed its input schema since it was pinned; it is hidden and refused until you accept it: aegis pins accept --server %s %s\n", d.Name, s.cfg.Server, s.cfg.Server, d.Name)
			hidden = true
			continue
		case pin.New:
			s.logger.Info("tool pinned", "tool", d.Name)
		case pin.Described:
			s.logger.Warn("tool description changed; the new one is pinned", "tool", d.Name)
		}
		if s.srv.HideUnallowed && !s.eng.Policy().MayAllow(&policy.Request{
			Server: s.cfg.Server, Tool: d.Name, Principal: s.cfg.Principal, Roles: s.cfg.Roles,
			Bound: s.srv.Bindings[d.Name] != nil,
		}) {
			hidden = true
			continue
		}
		keep[at[j]] = true
	}
	if !hidden {
		return tools, nil
	}
	out := make([]json.RawMessage, 0, len(tools))
	for i, t := range tools {
		if keep[i] {
			out = append(out, t)
		}
	}
	return out, nil
}
