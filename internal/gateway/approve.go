package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/aegis-mcp/aegis/internal/approval"
	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/record"
)

// RuleApproval is the rule id of the entry that records a person's answer
// to an ask (or its absence): decision allow when the held call went on,
// deny when it did not.
const RuleApproval = "aegis:approval"

// DefaultApprovalTimeout is how long a held call waits for a person when
// the configuration says nothing.
const DefaultApprovalTimeout = 2 * time.Minute

// Approvals is where a session's asks wait for a person (DESIGN.md R21).
type Approvals struct {
	// Store holds the questions, for `aegis approvals` and the console.
	Store *approval.Store
	// Timeout is how long a held call waits; zero means
	// [DefaultApprovalTimeout].
	Timeout time.Duration
	// Lane is the chain lane the session records in ("" for the first),
	// which the question names with the ask's seq.
	Lane string
	// Asked, if set, is told of each question as it is put, to put it
	// where a person is too (the MCP client, by elicitation); it returns
	// what to call once the question is settled, or nil. Notify gets a
	// line in any case.
	Asked func(*approval.Request) (settled func())
}

// A Waiting is told, while a call waits for a person, which question it
// waits on and how long it may still wait: once when the wait starts, then
// every [WaitingEvery]. The relay turns it into progress notifications for
// a client that sent a progress token.
type Waiting func(approvalID string, left time.Duration)

// WaitingEvery is how often a waiting call's Waiting is told.
var WaitingEvery = 5 * time.Second

type waitingKey struct{}

// WithWaiting returns ctx carrying fn, which the approval step of the call
// decided under ctx tells how its wait stands.
func WithWaiting(ctx context.Context, fn Waiting) context.Context {
	return context.WithValue(ctx, waitingKey{}, fn)
}

// waiting tells the call's Waiting, if any, how the wait for req stands
// until stop is closed.
func waiting(ctx context.Context, req *approval.Request, now func() time.Time, stop <-chan struct{}) {
	fn, _ := ctx.Value(waitingKey{}).(Waiting)
	if fn == nil {
		return
	}
	fn(req.ID, req.Expires.Sub(now()))
	every := WaitingEvery // read here: the goroutine may start after the wait ends
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fn(req.ID, req.Expires.Sub(now()))
			}
		}
	}()
}

// grants are the approvals of a session given for its rest (scope
// session): a later ask of the same tool whose capabilities are all among
// one grant's goes on without asking again.
type grants struct {
	mu sync.Mutex
	g  []grant
}

type grant struct {
	method, tool string
	caps         []string // capability keys (capKeys)
	// args is the hash of the approved call's forwarded arguments, which
	// a call must have too when the grant has no capabilities: a person
	// who approved an unbound tool's call for the session saw only its
	// arguments, not every call of the tool.
	args   string
	id, by string
}

// covering returns the grant that covers a call of method and tool whose
// capabilities (keys) are exactly a grant's, if any; a grant without
// capabilities covers only a call of the same arguments (hash argsHash).
func (g *grants) covering(method, tool string, caps []string, argsHash string) (grant, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, gr := range g.g {
		if gr.method != method || gr.tool != tool {
			continue
		}
		if len(gr.caps) == 0 && gr.args != argsHash {
			continue
		}
		// The same capabilities, not a subset: an argument left out can
		// change what the rest mean (a command without its workdir runs
		// in the server's own directory).
		same := len(caps) == len(gr.caps)
		for _, c := range caps {
			if !slices.Contains(gr.caps, c) {
				same = false
				break
			}
		}
		for _, c := range gr.caps {
			if !slices.Contains(caps, c) {
				same = false
				break
			}
		}
		if same {
			return gr, true
		}
	}
	return grant{}, false
}

func (g *grants) add(gr grant) {
	g.mu.Lock()
	g.g = append(g.g, gr)
	g.mu.Unlock()
}

// capTexts are a verdict's capabilities as a person reads them, in a
// terminal too. A path or a word is the model's to write: one with a
// character that is not printable (an ESC that moves the cursor and
// erases the line, a newline that forges the next one) is quoted whole.
func capTexts(caps []capability.Capability) []string {
	rc := record.CapsOf(caps)
	out := make([]string, len(rc))
	for i := range rc {
		out[i] = rc[i].Text()
		if strings.ContainsFunc(out[i], func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) {
			out[i] = strconv.Quote(out[i])
		}
	}
	return out
}

// capKeys are a verdict's capabilities as grants compare them: each
// recorded capability's JSON, every field apart. Their texts for a person
// are not: an exec's words are joined by spaces, so argv ["find", ".",
// "-name", "x -delete"] reads as ["find", ".", "-name", "x", "-delete"].
func capKeys(caps []capability.Capability) []string {
	rc := record.CapsOf(caps)
	out := make([]string, len(rc))
	for i := range rc {
		b, err := json.Marshal(&rc[i])
		if err != nil {
			// Not reached: a record.Cap is strings, numbers and bools.
			panic(err)
		}
		out[i] = string(b)
	}
	return out
}

// approve holds a call the policy answered ask until a person answers
// it, and returns what becomes of it; out is its outcome as refused. The
// question is bound to the call's exact arguments (as forwarded) and the
// policy's hash; the answer, or its absence, is recorded under
// RuleApproval, naming the ask's entry seq. A call whose client answers
// in its round trips is not held: its outcome carries the [Question]
// (see inband.go).
func (s *Session) approve(ctx context.Context, c *Call, v *Verdict, seq uint64, what string, out Outcome) (Outcome, error) {
	ap := s.cfg.Approvals
	caps, keys := capTexts(v.Caps), capKeys(v.Caps)
	now := time.Now
	if s.cfg.Now != nil {
		now = s.cfg.Now
	}
	timeout := ap.Timeout
	if timeout <= 0 {
		timeout = DefaultApprovalTimeout
	}
	fwd := v.Arguments
	if fwd == nil {
		fwd = []byte("{}")
	}
	if c.Resource {
		// A resource request's arguments are its params, whose _meta (a
		// progress token) a retry of the same request may change.
		fwd = withoutMember(fwd, "_meta")
	}
	argsSum, policySum := sha256.Sum256(fwd), s.eng.Policy().Hash()
	argsHash, policyHash := hex.EncodeToString(argsSum[:]), hex.EncodeToString(policySum[:])
	// An ask a check made (a secret in the arguments) is about these
	// arguments: a grant for capabilities does not answer it, also when
	// the policy asked as well.
	if v.Ask == nil && !secretAsks(s.srv, v, "") {
		if gr, ok := s.grants.covering(c.Method, c.Tool, keys, argsHash); ok {
			reason := fmt.Sprintf("the ask at seq %d is answered by approval %s, given by %s for the rest of the session", seq, gr.id, gr.by)
			if err := s.rec.approval(ctx, c, v, policy.Allow, reason); err != nil {
				return out, err
			}
			return forwarded(c, v, out), nil
		}
	}
	if c.Continues && !secretAsks(s.srv, v, inputPointer) {
		// The retry of a call a person approved, with the server's own
		// state: the same logical call, not a new question. The answers
		// it brings are new (and may be the model's, a sampling result):
		// an ask about them is a new question.
		if id, ok := s.continued.of(c, argsHash); ok {
			reason := fmt.Sprintf("the ask at seq %d continues the call approved in approval %s", seq, id)
			if err := s.rec.approval(ctx, c, v, policy.Allow, reason); err != nil {
				return out, err
			}
			return forwarded(c, v, out), nil
		}
	}
	if c.Answer != nil {
		if id, ok := s.key.open(c.Session, c.Answer.State); ok {
			if res, done, err := s.answered(ctx, c, v, seq, what, out, id, argsHash, policyHash, now); done {
				return res, err
			}
		}
		// A state aegis did not issue here, or a question that can no
		// longer be answered: a new question.
	}
	shown, _ := s.rec.Redact(fwd)
	if shown == nil {
		shown = fwd
	}
	at := now()
	req := &approval.Request{
		ID: approval.NewID(), Created: at, Expires: at.Add(timeout),
		Session: c.Session, Principal: c.Principal, Server: c.Server, Method: c.Method, Tool: c.Tool,
		ArgsHash: argsHash, PolicyHash: policyHash,
		Seq: seq, Lane: ap.Lane,
		Caps: caps, Rules: v.Rules(), Reason: v.Reason(),
		Arguments: shown,
	}
	if err := ap.Store.Put(ctx, req); err != nil {
		s.logger.Warn("gateway: an approval could not be asked for", "err", err)
		out.Reason = "aegis: this " + what + " needs a person's approval, and aegis could not ask for it: " + v.Reason()
		return out, s.rec.approval(ctx, c, v, policy.Deny, fmt.Sprintf("the ask at seq %d could not be put to a person: %v", seq, err))
	}
	if c.InBand && !c.Continues && c.InputResponses == nil {
		fmt.Fprintf(s.notify, "aegis: %s %s needs a person's approval (%s): asked in the client, or `aegis approvals approve %s` or `aegis approvals deny %s`; it may be answered for %v\n",
			what, target(c), v.Reason(), req.ID, req.ID, timeout)
		out.Question = &Question{Request: req, State: s.key.state(c.Session, req.ID)}
		out.Reason = fmt.Sprintf("aegis: this %s waits for a person's approval (approval %s): %s", what, req.ID, v.Reason())
		return out, nil
	}
	fmt.Fprintf(s.notify, "aegis: %s %s needs a person's approval (%s): `aegis approvals approve %s` or `aegis approvals deny %s`; it waits %v\n",
		what, target(c), v.Reason(), req.ID, req.ID, timeout)
	if ap.Asked != nil {
		if settled := ap.Asked(req); settled != nil {
			defer settled()
		}
	}
	ans, err := s.await(ctx, req, argsHash, policyHash, now)
	return s.settle(ctx, c, v, seq, what, out, req, argsHash, ans, err)
}

// answered gives the person's answer a retry brought back (c.Answer) to
// question id, and takes the question's answer for the retry. done is
// false when the question can no longer be answered, or was asked of
// other arguments, another policy, another call: the retry is then asked
// anew.
func (s *Session) answered(ctx context.Context, c *Call, v *Verdict, seq uint64, what string, out Outcome, id, argsHash, policyHash string, now func() time.Time) (res Outcome, done bool, err error) {
	store := s.cfg.Approvals.Store
	got, err := store.Get(ctx, id)
	if err != nil || got.Session != c.Session || got.Server != c.Server || got.Method != c.Method || got.Tool != c.Tool ||
		got.ArgsHash != argsHash || got.PolicyHash != policyHash || got.State == approval.Expired || got.State == approval.Used {
		return out, false, nil
	}
	if a := c.Answer; a.Answered {
		by := c.Principal
		if by == "" {
			by = "the person at the client"
		}
		_, err := store.Answer(ctx, id, approval.Answer{Approve: a.Approve, Scope: a.Scope, By: by, Channel: approval.ChannelElicitation})
		switch {
		case errors.Is(err, approval.ErrAnswered): // another channel answered first: its answer stands
		case err != nil:
			return out, false, nil
		}
	}
	// A question the client brought no answer to stays open for the
	// other channels, and the retry waits for them, as a held call does.
	ans, err := s.await(ctx, &got.Request, argsHash, policyHash, now)
	if errors.Is(err, approval.ErrMismatch) || errors.Is(err, approval.ErrAnswered) {
		return out, false, nil
	}
	res, err = s.settle(ctx, c, v, seq, what, out, &got.Request, argsHash, ans, err)
	return res, true, err
}

// await waits for the answer to req, telling the call's Waiting how the
// wait stands, and takes it for arguments and policy of hashes argsHash
// and policyHash.
func (s *Session) await(ctx context.Context, req *approval.Request, argsHash, policyHash string, now func() time.Time) (approval.Answer, error) {
	wctx, cancel := context.WithDeadline(ctx, req.Expires)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	waiting(ctx, req, now, stop)
	return s.cfg.Approvals.Store.Await(wctx, req.ID, argsHash, policyHash)
}

// settle records what became of the ask at seq, question id, given the
// answer ans (or err) that await took for question req, and returns the
// call's outcome.
func (s *Session) settle(ctx context.Context, c *Call, v *Verdict, seq uint64, what string, out Outcome, req *approval.Request, argsHash string, ans approval.Answer, err error) (Outcome, error) {
	id, within := req.ID, req.Expires.Sub(req.Created)
	rctx := context.WithoutCancel(ctx) // the answer is recorded even for a call that went
	switch {
	case err == nil && ans.Approve:
		reason := fmt.Sprintf("the ask at seq %d was approved by %s through %s, for %s (approval %s)", seq, ans.By, ans.Channel, scopeText(ans.Scope), id)
		if err := s.rec.approval(rctx, c, v, policy.Allow, reason); err != nil {
			return out, err
		}
		if ans.Scope == approval.ScopeSession && v.Ask == nil {
			s.grants.add(grant{method: c.Method, tool: c.Tool, caps: capKeys(v.Caps), args: argsHash, id: id, by: ans.By})
		}
		s.continued.add(c, argsHash, id)
		return forwarded(c, v, out), nil
	case err == nil:
		out.Reason = fmt.Sprintf("aegis: a person (%s) declined this %s: %s", ans.By, what, v.Reason())
		return out, s.rec.approval(rctx, c, v, policy.Deny, fmt.Sprintf("the ask at seq %d was denied by %s through %s (approval %s)", seq, ans.By, ans.Channel, id))
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, approval.ErrExpired):
		out.Reason = fmt.Sprintf("aegis: this %s needs a person's approval, and nobody answered within %v: %s. It may be asked again.", what, within, v.Reason())
		return out, s.rec.approval(rctx, c, v, policy.Deny, fmt.Sprintf("the ask at seq %d was not answered within %v (approval %s)", seq, within, id))
	case errors.Is(err, context.Canceled):
		out.Reason = "aegis: the " + what + " was cancelled while it waited for a person's approval"
		return out, s.rec.approval(rctx, c, v, policy.Deny, fmt.Sprintf("the call was cancelled while the ask at seq %d waited (approval %s)", seq, id))
	default:
		out.Reason = "aegis: this " + what + " needs a person's approval, and the answer could not be taken: " + err.Error()
		return out, s.rec.approval(rctx, c, v, policy.Deny, fmt.Sprintf("the answer to the ask at seq %d could not be taken: %v (approval %s)", seq, err, id))
	}
}

// forwarded is out, refused, turned into the outcome of c let through
// with v's arguments.
func forwarded(c *Call, v *Verdict, out Outcome) Outcome {
	out.Forward, out.Reason = true, ""
	out.InputResponses = redactedInput(c, v)
	return out
}

func scopeText(s approval.Scope) string {
	if s == approval.ScopeSession {
		return "the rest of the session"
	}
	return "this call"
}

// target names what c calls, for a person.
func target(c *Call) string {
	if c.Method == "" {
		return c.Server + "/" + c.Tool
	}
	if c.Tool == "" {
		return c.Server + " " + c.Method
	}
	return c.Server + " " + c.Method + " " + c.Tool
}

// withoutMember is the JSON object obj without its member key; obj as it
// is when it has none, or is not a strict object.
func withoutMember(obj []byte, key string) []byte {
	if first, err := args.Validate(obj, maxParamsDepth); err != nil || first != '{' {
		return obj
	}
	var buf [8]args.Member
	ms := args.Members(buf[:0], obj, 0)
	if !slices.ContainsFunc(ms, func(m args.Member) bool { return string(m.Key) == key }) {
		return obj
	}
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	for _, m := range ms {
		if string(m.Key) == key {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(string(m.Key))
		out = append(append(append(out, k...), ':'), obj[m.Start:m.End]...)
	}
	return append(out, '}')
}
