// Package gateway owns the pipeline of one tool call (DESIGN.md "The
// pipeline of one call"): strict decoding of the arguments, the binding,
// derivation and canonicalisation of capabilities, and the policy decision.
// [Engine.Check] turns every failure on the way into a denial with a reason:
// a call aegis cannot read with certainty is never allowed.
//
// The gateway does no protocol work (that is package proxy's) and keeps no
// record (package chain's); it decides.
package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/egress"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/schema"
	"github.com/aegis-mcp/aegis/internal/session"
	"github.com/aegis-mcp/aegis/internal/shape"
)

// Server is what the engine knows of one configured server.
type Server struct {
	Name     string
	Bindings binding.Table   // nil: every tool is unbound
	Options  binding.Options // how its arguments are canonicalised
	// HideUnallowed hides from the client's tools/list the tools that no
	// rule could allow (policy.Set.MayAllow).
	HideUnallowed bool
	// Templates, if set, is the template syntax the server expands in its
	// inputs: template markers in model-written strings are neutralised
	// (R13).
	Templates *shape.Syntax
	// Tools configures the checks per tool; a tool not listed has none.
	Tools map[string]*Tool
	// Egress is the gate every net.connect capability passes (R15); nil
	// means the default gate.
	Egress *egress.Checker
	// SchemaOff turns off the closed-schema check of arguments (R11),
	// which is on whenever a call carries its tool's pinned schema.
	SchemaOff bool
	// DLP says what secrets found in arguments and results do (R17); nil
	// scans nothing.
	DLP *DLP
}

// DLP is a server's data-loss prevention: the actions for findings in
// the arguments of its calls and in its results.
type DLP struct {
	Arguments dlp.Actions
	Results   dlp.Actions
}

// Engine decides calls for a set of servers under one policy. It is safe for
// concurrent use and immutable once built.
type Engine struct {
	policy     *policy.Set
	servers    map[string]*Server
	limits     args.Limits
	sessions   *session.Store
	principals map[string]map[string]string
	// defaultEgress gates the net.connect of servers with no egress
	// configuration.
	defaultEgress *egress.Checker
	schemas       schemaCache
	schemaOpts    schema.Options // for tools with no configuration
	scratch       sync.Pool      // *scratch
}

// Options configures an Engine. The zero value uses the default argument
// limits of package args and a session store of its own.
type Options struct {
	Limits args.Limits
	// Sessions holds the state of sessions (provenance, caps, taint); nil
	// means a new store with the defaults.
	Sessions *session.Store
	// Principals holds attributes of principals, the sources of identity
	// fields ("principal.account").
	Principals map[string]map[string]string
}

// New returns an engine deciding under p for servers.
func New(p *policy.Set, servers []*Server, o *Options) (*Engine, error) {
	if p == nil {
		return nil, errors.New("gateway: no policy")
	}
	e := &Engine{policy: p, servers: make(map[string]*Server, len(servers))}
	if o != nil {
		e.limits, e.sessions, e.principals = o.Limits, o.Sessions, o.Principals
	}
	if e.sessions == nil {
		e.sessions = session.New(nil)
	}
	def, err := egress.New(nil)
	if err != nil {
		return nil, fmt.Errorf("gateway: the default egress gate: %w", err)
	}
	e.defaultEgress = def
	for _, s := range servers {
		if _, dup := e.servers[s.Name]; dup {
			return nil, fmt.Errorf("gateway: server %q configured twice", s.Name)
		}
		for name, t := range s.Tools {
			if err := t.compiled(); err != nil {
				return nil, fmt.Errorf("gateway: server %q, tool %q: %w", s.Name, name, err)
			}
			t.schemaOpts.Limits = &e.limits
		}
		e.servers[s.Name] = s
	}
	e.schemaOpts.Limits = &e.limits
	e.scratch.New = func() any { return new(scratch) }
	return e, nil
}

// OpenSession starts session id with its origin, once, when the session
// starts: an unattended session is tainted from its start. A call in a
// session the engine never opened (or has forgotten) is treated as tainted.
func (e *Engine) OpenSession(id string, origin capability.Origin) {
	e.sessions.Open(id, origin)
}

// Policy returns the engine's policy.
func (e *Engine) Policy() *policy.Set { return e.policy }

// Server returns the configured server called name, or nil.
func (e *Engine) Server(name string) *Server { return e.servers[name] }

// Call is one tools/call with the session facts aegis knows about it.
type Call struct {
	Session   string
	Principal string
	Roles     []string
	Origin    capability.Origin
	Taint     bool
	Turn      int
	Server    string
	Tool      string
	// Arguments is the raw JSON arguments object as the model wrote it. It
	// must not change while Check runs, which reads it in place.
	Arguments []byte
	// Refuse, if set, refuses the call whatever the policy says (a step
	// before the policy refused it: a held tool). The capabilities are
	// still derived, for the record.
	Refuse *Refusal
	// Schema is the input schema of the tool as pinned, and SchemaKey
	// the hash that identifies it (the pin's full hash). With a schema the
	// arguments are checked against it, closed (R11); nil skips the check.
	Schema    []byte
	SchemaKey [32]byte
}

// Verdict is the engine's answer for one call. Effect is what happens to
// the call: in a shadow policy a call the rules would deny is still allowed,
// and Decision.Would says so.
type Verdict struct {
	Effect   policy.Effect
	Decision policy.Decision // valid when Err is nil and the call reached the policy
	Caps     []capability.Capability
	Bound    bool
	Tier     capability.Tier
	// Ask, if set, is the check that turned an allowed call into an ask
	// (a DLP finding whose action is ask); Reason then gives its reason.
	Ask *Refusal
	// Findings are the DLP findings in the arguments that did not refuse
	// the call (redacted or reported): by kind and location, never value.
	Findings []dlp.Located
	// Origin and Taint are the session facts the policy saw: the call's,
	// merged with what the session store knows (taint is never lost).
	// Zero when the call did not reach the policy.
	Origin capability.Origin
	Taint  bool
	// Err is why the call could not be decided (unknown server, arguments
	// over a limit or not strict JSON, an argument that cannot be
	// canonicalised). A non-nil Err always comes with Effect Deny.
	Err error
	// Arguments are the arguments as they would be forwarded; nil when the
	// call is refused. They are read-only: they may be the Call's own
	// Arguments, or text that the strings of Caps share.
	Arguments []byte
}

// Reason says in one line why the call got its effect.
func (v *Verdict) Reason() string {
	if v.Err != nil {
		return v.Err.Error()
	}
	if v.Ask != nil && v.Effect == policy.Ask {
		return v.Ask.Error()
	}
	r := v.Decision.Reason()
	if len(v.Findings) > 0 {
		r += "; dlp found " + findingsNote(v.Findings)
	}
	return r
}

// Rules returns the rules that decided v: the policy's, and aegis's own
// when one of its checks refused the call or made it an ask.
func (v *Verdict) Rules() []string {
	if v.Err != nil {
		return []string{RuleOf(v)}
	}
	rules := v.Decision.Rules()
	if v.Ask != nil {
		rules = append(rules, v.Ask.Rule)
	}
	return rules
}

// scratch is what one Check reuses from the last: the decoded document.
// The capabilities are not reused, because the Verdict's Decision refers to
// them.
type scratch struct {
	mem  *callMem // the call's storage, during a check
	docs [2]args.Doc
	// w is the shaping step's storage: w.Doc is the arguments as they
	// stand, one of docs, and w.Spare the other.
	w shape.Work
	// canon holds the canonical form of the arguments being hashed.
	canon []byte
}

// reset makes sc ready for a call.
func (sc *scratch) reset() { sc.w.Doc, sc.w.Spare = &sc.docs[0], &sc.docs[1] }

// ErrUnknownServer is returned (in Verdict.Err) for a call to a server the
// configuration does not name.
var ErrUnknownServer = errors.New("unknown server")

// Check runs the engine's steps for c (schema, shape, derive, policy,
// checks), in memory of its own, and records nothing. It never returns an
// undecided call: every failure is a Verdict with Effect Deny and Err set.
// A [Session] runs the whole pipeline, pins and record included.
func (e *Engine) Check(ctx context.Context, c *Call) Verdict {
	v, _ := e.check(ctx, c, false, new(callMem))
	return v
}

// callMem is storage that one call's check uses instead of allocating: the
// request the policy decides, its capabilities, and the text of the
// arguments. A Verdict of a check refers into it (its Caps, Decision and
// Arguments), so it MUST NOT be reused while that Verdict is in use. A
// [Session] pools them, so that the check of a typical call allocates
// nothing.
type callMem struct {
	rc   requestCaps
	out  []byte // the shaped arguments
	text []byte // the arguments as the model wrote them, when not shaped
}

// check is Check that also returns, when hash is set, the hash of the
// arguments for the chain (see argsHash), from the document it decoded:
// recording a call must not decode its arguments twice.
//
// The pipeline fills one Verdict in place, and each step returns an error
// rather than a Verdict of its own: a Verdict is large, and the allowed
// call, the one that must be fast, would otherwise copy it at every step.
func (e *Engine) check(ctx context.Context, c *Call, hash bool, m *callMem) (v Verdict, argsHash [32]byte) {
	sc := e.scratch.Get().(*scratch)
	defer func() {
		sc.mem = nil // the pool keeps no caller's storage
		e.scratch.Put(sc)
	}()
	sc.reset()
	sc.mem = m
	var r route
	req, found, ok := e.prepare(c, sc, &r, &v)
	if !ok {
		if hash {
			argsHash = e.modelArgsHash(c, sc.w.Doc)
		}
		return v, argsHash
	}
	if hash {
		// The arguments as forwarded: sc.w.Doc holds them decoded.
		fwd := v.Arguments
		argsHash = hashArgsIn(&sc.canon, sc.w.Doc, fwd)
		defer func() {
			if v.Arguments == nil && !bytes.Equal(fwd, c.Arguments) {
				argsHash = e.modelArgsHash(c, sc.w.Doc) // refused after shaping
			}
		}()
	}
	e.conclude(ctx, &v, c, req, &r, sc.w.Doc, found, true)
	return v, argsHash
}

// conclude fills v with the decision on the prepared call: the policy's, an
// ask for a DLP finding that asks, the refusal of a step before the policy,
// and the checks after it (counting the call against its caps when
// commit). A denied call's arguments are withheld.
func (e *Engine) conclude(ctx context.Context, v *Verdict, c *Call, req *policy.Request, r *route, doc *args.Doc, found []dlp.Located, commit bool) {
	e.decideInto(v, req, v.Arguments)
	withFindings(v, r.s, found)
	if c.Refuse == nil {
		e.afterPolicy(ctx, v, c, r, doc, req.Origin, commit)
	} else {
		v.refuse(c.Refuse)
	}
	if v.Effect == policy.Deny {
		v.Arguments = nil
	}
}

// route is what the engine looks up once per call: the call's server, and
// the tool's configuration and binding on it (either may be nil).
type route struct {
	s *Server
	t *Tool
	b *binding.Binding
}

// fields returns the tool's argument rewriting, nil when it has none.
func (r *route) fields() *shape.Fields {
	if r.t == nil {
		return nil
	}
	return &r.t.Fields
}

// modelArgsHash hashes the arguments as the model wrote them.
func (e *Engine) modelArgsHash(c *Call, doc *args.Doc) [32]byte {
	doc.Decode(c.Arguments, &e.limits) // on failure doc holds nothing: hashArgs hashes the raw bytes
	return hashArgs(doc, c.Arguments)
}

// explain checks c like [Engine.Check] and, when the call reached the
// policy, lists every rule that matched it.
func (e *Engine) explain(ctx context.Context, c *Call) (Verdict, *policy.Explanation) {
	var sc scratch
	sc.reset()
	sc.mem = new(callMem)
	var r route
	var v Verdict
	req, found, ok := e.prepare(c, &sc, &r, &v)
	if !ok {
		return v, nil
	}
	x := e.policy.Explain(req)
	e.conclude(ctx, &v, c, req, &r, sc.w.Doc, found, false) // counting nothing against a cap
	return v, &x
}

// prepare decodes the arguments, runs the steps before the policy and
// derives the capabilities of c, filling r. On success v holds the
// arguments as they will be forwarded, and found the DLP findings that did
// not refuse the call; otherwise v is the denying Verdict, and ok false.
func (e *Engine) prepare(c *Call, sc *scratch, r *route, v *Verdict) (req *policy.Request, found []dlp.Located, ok bool) {
	// Decode first, whatever happens next: doc then holds this call's
	// arguments (or nothing), never a previous call's, for hashArgs. It
	// reads c.Arguments in place: a shaped call's document is rewritten
	// before anything read from it outlives the call, and the one that is
	// not is copied (Own) before the capabilities are derived from it.
	doc := sc.w.Doc
	if err := doc.DecodeBorrowed(c.Arguments, &e.limits); err != nil {
		*v = deny(fmt.Errorf("arguments: %w", err))
		return nil, nil, false
	}
	s := e.servers[c.Server]
	if s == nil {
		*v = deny(fmt.Errorf("%w %q", ErrUnknownServer, c.Server))
		return nil, nil, false
	}
	r.s, r.t, r.b = s, s.Tools[c.Tool], s.Bindings[c.Tool]
	// Shape first: the identity and pinned fields aegis writes are part of
	// the arguments the closed schema must accept (a server may require
	// them), and what is checked is what is forwarded.
	fwd, err := e.shape(c, s, r.t, sc, c.Arguments)
	doc = sc.w.Doc
	if err == nil {
		fwd, err = e.closedSchema(c, s, r.t, doc, fwd)
	}
	var origin capability.Origin
	var taint bool
	if err == nil {
		origin, taint = e.sessionFacts(c)
		fwd, found, err = e.scanArguments(s, doc, fwd)
	}
	var rel []capability.Capability
	if err == nil {
		// The capabilities, the Verdict's, may hold strings of doc: from
		// here on it must not share the caller's memory. (Nothing before
		// keeps a string of it: errors and findings copy what they name.)
		doc.OwnIn(&sc.mem.text)
		rel, err = r.fields().RelativeCaps(doc.Root())
		err = ruleOfShape(err)
	}
	if err != nil {
		*v = deny(err)
		return nil, nil, false
	}
	// The request and its capabilities in one allocation: the Decision
	// refers to both, so neither can live in the pooled scratch.
	n := len(rel)
	if r.b != nil {
		n += len(r.b.Args)
	}
	rc := &sc.mem.rc
	*rc = requestCaps{}
	req = &rc.req
	*req = policy.Request{
		Server:    c.Server,
		Tool:      c.Tool,
		Principal: c.Principal,
		Roles:     c.Roles,
		Origin:    origin,
		Taint:     taint,
	}
	caps := rc.caps[:0]
	if n > len(rc.caps) {
		caps = make([]capability.Capability, 0, n)
	}
	if b := r.b; b != nil {
		req.Bound = true
		req.Tier = b.Tier
		caps, err = b.Derive(caps, doc.Root(), &s.Options)
		if err != nil {
			*v = deny(err)
			v.Bound, v.Tier = true, b.Tier
			return nil, nil, false
		}
	}
	if len(rel) > 0 {
		caps = append(caps, rel...)
	}
	req.Caps = caps
	*v = Verdict{Arguments: fwd}
	return req, found, true
}

// requestCaps is a policy request with room for the capabilities of most
// calls.
type requestCaps struct {
	req  policy.Request
	caps [1]capability.Capability
}

// decide asks the policy. In a shadow policy the call goes through whatever
// the rules say, and Decision.Would() says what enforcing them would do.
func (e *Engine) decide(req *policy.Request, c *Call) Verdict {
	var v Verdict
	e.decideInto(&v, req, c.Arguments)
	return v
}

// decideInto is decide writing to v, which carries fwd, the arguments as
// they will be forwarded, unless the call is denied.
func (e *Engine) decideInto(v *Verdict, req *policy.Request, fwd []byte) {
	// Every field is set, as a composite literal would, one by one: the
	// literal is built aside and copied.
	v.Decision = e.policy.Decide(req)
	v.Caps, v.Bound, v.Tier, v.Origin, v.Taint = req.Caps, req.Bound, req.Tier, req.Origin, req.Taint
	v.Ask, v.Findings, v.Err, v.Arguments = nil, nil, nil, nil
	v.Effect = v.Decision.Effect()
	if e.policy.Mode() == policy.Shadow {
		v.Effect = policy.Allow
	}
	if v.Effect != policy.Deny {
		v.Arguments = fwd
	}
}

// Refusal is an error that refuses a call before or beside the policy, by
// one of aegis's own rules (a rule id with the "aegis:" prefix, which no
// policy can use): a held tool, an off-schema argument, a cap reached. The
// chain records Rule as the deciding rule.
type Refusal struct {
	Rule string
	Err  error
}

func (r *Refusal) Error() string { return r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

// RuleOf returns the aegis rule that refused v, [RuleUndecidable] unless
// v.Err is a [Refusal]; "" when v.Err is nil.
func RuleOf(v *Verdict) string {
	if v.Err == nil {
		return ""
	}
	var r *Refusal
	if errors.As(v.Err, &r) {
		return r.Rule
	}
	return RuleUndecidable
}

func deny(err error) Verdict {
	return Verdict{Effect: policy.Deny, Err: err}
}

// refuse makes v a denial for err that keeps what the call derived and
// the session facts the policy saw, for the record.
func (v *Verdict) refuse(err error) {
	*v = Verdict{Effect: policy.Deny, Err: err, Caps: v.Caps, Bound: v.Bound, Tier: v.Tier, Origin: v.Origin, Taint: v.Taint}
}
