package gateway

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/envelope"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/record"
)

// Appender makes a chain entry durable; *chain.Log is one.
type Appender interface {
	Append(ctx context.Context, e *record.Entry) (seq uint64, hash [32]byte, err error)
}

// recorder checks calls and records each decision in the chain before it
// returns: what [recorder.call] allows has a durable entry (DESIGN.md R25).
// It is the pipeline's last step, step 9.
type recorder struct {
	Engine *Engine
	Log    Appender
	// Envelopes, if set, receives each call's envelope (DESIGN.md R23),
	// which its chain entry links to by hash: written once the entry is
	// durable, before Call returns, and not at all if it cannot be.
	Envelopes *envelope.Store
	// Redact takes the secrets out of arguments before they enter an
	// envelope, and says what it took where. nil keeps them as they are.
	Redact func(arguments []byte) ([]byte, []envelope.Redaction)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// call checks c with m's storage and appends its entry, with c.SchemaKey
// as the tool's schema hash. When the entry cannot be made durable the call
// is refused: the returned Verdict denies and the error says why. The
// Verdict refers into m.
func (r *recorder) call(ctx context.Context, c *Call, m *callMem) (Verdict, uint64, error) {
	v, argsHash := r.Engine.check(ctx, c, true, m)
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	at := now()
	e := r.entry(c, &v, c.SchemaKey, at)
	e.ArgsHash = argsHash
	// The envelope is written after the entry is durable, so that it never
	// says forwarded of a call refused because its decision could not be
	// recorded (a full disk, a call cancelled while it was recorded), and
	// before the call is forwarded (R23): the entry names it by hash.
	var env envelope.Prepared
	if r.Envelopes != nil {
		var err error
		if env, err = r.prepareEnvelope(c, &v, at); err != nil {
			return refused(&v), 0, fmt.Errorf("recording the envelope: %w", err)
		}
		defer env.Drop()
		e.Envelope = record.Digest(env.Digest)
	}
	seq, _, err := r.Log.Append(ctx, e)
	if err != nil {
		return refused(&v), 0, fmt.Errorf("recording the decision: %w", err)
	}
	if r.Envelopes != nil {
		if err := env.Write(); err != nil {
			return refused(&v), 0, fmt.Errorf("recording the envelope: %w", err)
		}
	}
	return v, seq, nil
}

// result records what aegis did to a result that held secrets (R17): an
// entry under rule aegis:dlp, allow when the result was passed on
// (redacted, or reported) and deny when it was withheld, whose reason names
// the findings by kind and location, never by value. c names the call the
// result answers (its session, principal, server and tool); the entry has
// no capabilities and no arguments hash.
func (r *recorder) result(ctx context.Context, c *Call, found []dlp.Located, withheld, isErr bool) error {
	if len(found) == 0 {
		return nil
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	decision, what := policy.Allow, "passed on with secrets redacted or reported"
	if withheld {
		decision, what = policy.Deny, "withheld"
	}
	e := r.callEntry(c, now())
	e.Caps = []record.Cap{}
	e.Decision = decision.String()
	e.Rules = []string{RuleDLP}
	of := "the result"
	if isErr {
		of = "the JSON-RPC error the server answered with"
	}
	e.Reason = of + " was " + what + ": " + findingsNote(found)
	if _, _, err := r.Log.Append(ctx, e); err != nil {
		return fmt.Errorf("recording the result's findings: %w", err)
	}
	return nil
}

// undelivered records that the call allowed at seq got no answer from the
// server (why says how: not sent, no answer, timed out), so that the chain
// does not leave it looking served. The entry has the call's axes, rule
// [RuleUndelivered] and decision deny: the call was not served as allowed.
func (r *recorder) undelivered(ctx context.Context, c *Call, seq uint64, why string) error {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	e := r.callEntry(c, now())
	e.Caps = []record.Cap{}
	e.Decision = policy.Deny.String()
	e.Rules = []string{RuleUndelivered}
	e.Reason = fmt.Sprintf("the call allowed at seq %d %s", seq, why)
	if _, _, err := r.Log.Append(ctx, e); err != nil {
		return fmt.Errorf("recording an undelivered call: %w", err)
	}
	return nil
}

// answer records the client's answer to a request of the server
// ([Session.Answer]) c (its Method, its InputResponses the answer): an
// entry under rule aegis:answer (and aegis:dlp when DLP found something),
// allow when the answer was passed on (fwd, redacted or as it came) and
// deny when refused (err), with an envelope that keeps the answer
// redacted.
func (r *recorder) answer(ctx context.Context, c *Call, fwd []byte, found []dlp.Located, refusedBy error) error {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	at := now()
	e := r.callEntry(c, at)
	e.Caps = []record.Cap{}
	e.Rules = []string{RuleAnswer}
	if len(found) > 0 {
		e.Rules = append(e.Rules, RuleDLP)
	}
	v := Verdict{Effect: policy.Allow, InputResponses: fwd}
	e.Decision = policy.Allow.String()
	e.Reason = "the client's answer to the server's " + c.Method + " was passed on"
	if len(found) > 0 {
		e.Reason += " with secrets redacted or reported: " + findingsNote(found)
	}
	if refusedBy != nil {
		v = Verdict{Effect: policy.Deny}
		e.Decision = policy.Deny.String()
		e.Reason = "the client's answer to the server's " + c.Method + " was withheld: " + refusedBy.Error()
	}
	var env envelope.Prepared
	if r.Envelopes != nil {
		var err error
		if env, err = r.prepareEnvelope(c, &v, at); err != nil {
			return fmt.Errorf("recording the envelope of an answer: %w", err)
		}
		defer env.Drop()
		e.Envelope = record.Digest(env.Digest)
	}
	if _, _, err := r.Log.Append(ctx, e); err != nil {
		return fmt.Errorf("recording an answer: %w", err)
	}
	if r.Envelopes != nil {
		if err := env.Write(); err != nil {
			return fmt.Errorf("recording the envelope of an answer: %w", err)
		}
	}
	return nil
}

// runtime records a connection let through under RuleRuntime (see
// Session.ConnectRuntime).
func (r *recorder) runtime(ctx context.Context, c *Call, cp capability.Capability, why string) error {
	return r.followUp(ctx, c, record.CapsOf([]capability.Capability{cp}), true, "", policy.Allow, RuleRuntime, why, "a runtime connection")
}

// approval records what became of an ask (approve.go): the call's axes
// and capabilities, rule [RuleApproval], decision allow when the held call
// goes on and deny when it does not, and reason, which names the ask's
// entry and who answered through what.
func (r *recorder) approval(ctx context.Context, c *Call, v *Verdict, decision policy.Effect, reason string) error {
	if r.Log == nil {
		return nil
	}
	tier := ""
	if v.Bound {
		tier = v.Tier.String()
	}
	return r.followUp(ctx, c, record.CapsOf(v.Caps), v.Bound, tier, decision, RuleApproval, reason, "an approval")
}

// refusedAtDial records a connection refused by the egress gate at dial
// time (see Session.ConnectRefused): deny under RuleEgress.
func (r *recorder) refusedAtDial(ctx context.Context, c *Call, cp capability.Capability, why string) error {
	return r.followUp(ctx, c, record.CapsOf([]capability.Capability{cp}), true, "", policy.Deny, RuleEgress, "refused when dialled: "+why, "a refused connection")
}

// followUp appends an entry of aegis's own about call c, after its
// decision: caps, decision under rule, with reason and the tier recorded
// ("" for none); what names it in an error.
func (r *recorder) followUp(ctx context.Context, c *Call, caps []record.Cap, bound bool, tier string, decision policy.Effect, rule, reason, what string) error {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	e := r.callEntry(c, now())
	e.Caps = caps
	e.Bound, e.Tier = bound, tier
	e.Decision = decision.String()
	e.Rules = []string{rule}
	e.Reason = reason
	if _, _, err := r.Log.Append(ctx, e); err != nil {
		return fmt.Errorf("recording %s: %w", what, err)
	}
	return nil
}

// refused is the verdict of a call whose decision could not be recorded.
func refused(v *Verdict) Verdict {
	out := deny(fmt.Errorf("the decision could not be recorded, so the call is refused"))
	out.Caps, out.Bound, out.Tier = v.Caps, v.Bound, v.Tier
	return out
}

// prepareEnvelope encodes the envelope of c: the arguments (and a retry's
// answers to the server's requests for input) as aegis lets them
// through (v.Arguments, which an ask holds too: what an approval would
// forward, the arguments its args_hash is of) or, for a refused call, as
// the model wrote them; redacted either way. Only an allowed call is
// forwarded: an ask waits for a person (and `aegis run`, which cannot ask
// yet, refuses it), so its envelope does not say forwarded although it has
// arguments to forward.
func (r *recorder) prepareEnvelope(c *Call, v *Verdict, at time.Time) (envelope.Prepared, error) {
	a := c.Arguments
	if v.Arguments != nil {
		a = v.Arguments
	}
	var reds []envelope.Redaction
	if r.Redact != nil {
		a, reds = r.Redact(a)
	}
	rec := &envelope.Record{
		Time: at, Session: c.Session, Principal: c.Principal,
		Server: c.Server, Tool: c.Tool,
		Forwarded: v.Effect == policy.Allow,
		Arguments: a, Redactions: reds,
	}
	if c.InputResponses != nil {
		// A retry's answers, as forwarded (redacted as DLP said) or as
		// the client sent them; redacted either way.
		in := c.InputResponses
		if v.InputResponses != nil {
			in = v.InputResponses
		}
		if r.Redact != nil {
			in, rec.InputRedactions = r.Redact(in)
		}
		rec.InputResponses = in
	}
	return r.Envelopes.Prepare(rec)
}

// entry builds the chain entry of a decision: the decision axes, never the
// raw arguments.
func (r *recorder) entry(c *Call, v *Verdict, schemaHash [32]byte, at time.Time) *record.Entry {
	e := r.callEntry(c, at)
	e.ToolSchemaHash = schemaHash
	e.Bound = v.Bound
	e.Caps = record.CapsOf(v.Caps)
	e.Decision = v.Effect.String()
	e.Reason = v.Reason()
	if v.Origin != capability.OriginUnknown {
		// The facts the policy saw, the session store's included.
		e.Origin, e.Taint = v.Origin.String(), v.Taint
	}
	if v.Bound {
		e.Tier = v.Tier.String()
	}
	e.Rules = v.Rules()
	if v.Err == nil {
		if w := v.Decision.Would(); w != v.Effect && v.Ask == nil {
			e.Would = w.String()
		}
	}
	return e
}

// callEntry is a chain entry with the axes of call c and of the policy in
// force, for the entries of decisions and of results alike.
func (r *recorder) callEntry(c *Call, at time.Time) *record.Entry {
	return &record.Entry{
		Time:       at,
		Session:    c.Session,
		Principal:  c.Principal,
		Roles:      c.Roles,
		Origin:     c.Origin.String(),
		Server:     c.Server,
		Method:     c.Method,
		Tool:       c.Tool,
		Taint:      c.Taint,
		Mode:       r.Engine.Policy().Mode().String(),
		PolicyHash: r.Engine.Policy().Hash(),
	}
}

// hashArgs is the SHA-256 of the arguments' RFC 8785 canonical form, so
// that two spellings of the same arguments hash alike (SPEC.md, args_hash).
// doc holds the arguments decoded, or nothing if they were not strict JSON.
// Arguments that have no exact canonical form (a number beyond float64's
// precision) or are not strict JSON are hashed as their raw bytes under
// another domain, so the two can never be confused.
func hashArgs(doc *args.Doc, raw []byte) [32]byte {
	var buf []byte
	return hashArgsIn(&buf, doc, raw)
}

// jcsDomain and rawDomain separate the two ways arguments are hashed.
const (
	jcsDomain = "aegis.args.jcs.v1\x00"
	rawDomain = "aegis.args.raw.v1\x00"
)

// maxCanonKept is the largest canonical form whose buffer a scratch keeps
// for the next call.
const maxCanonKept = 64 << 10

// hashArgsIn is hashArgs writing the canonical form, after its domain, into
// *buf's storage (grown as needed and left in *buf, unless it grew past
// maxCanonKept), so that the hash is one call over contiguous bytes and a
// reused buffer costs no allocation.
func hashArgsIn(buf *[]byte, doc *args.Doc, raw []byte) [32]byte {
	if root := doc.Root(); root.Kind() != args.Invalid {
		canon, err := root.AppendCanonical(append((*buf)[:0], jcsDomain...))
		if cap(canon) <= maxCanonKept {
			*buf = canon[:0]
		}
		if err == nil {
			return sha256.Sum256(canon)
		}
	}
	h := sha256.New()
	h.Write([]byte(rawDomain))
	h.Write(raw)
	return [32]byte(h.Sum(nil))
}

// modelArgsHash hashes the arguments as the model wrote them.
func (e *Engine) modelArgsHash(c *Call, doc *args.Doc) [32]byte {
	doc.Decode(c.Arguments, &e.limits) // on failure doc holds nothing: hashArgs hashes the raw bytes
	return hashArgs(doc, c.Arguments)
}
