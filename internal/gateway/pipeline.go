package gateway

import (
	"bytes"
	"context"
	"fmt"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/schema"
	"github.com/aegis-mcp/aegis/internal/session"
	"github.com/aegis-mcp/aegis/internal/shape"
)

// Check runs the engine's steps for c (schema, shape, derive, policy,
// checks), in memory of its own, and records nothing. It never returns an
// undecided call: every failure is a Verdict with Effect Deny and Err set.
// A [Session] runs the whole pipeline, pins and record included.
func (e *Engine) Check(ctx context.Context, c *Call) Verdict {
	v, _ := e.check(ctx, c, false, new(callMem))
	return v
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
	r.s = s
	fwd, err := c.Arguments, error(nil)
	var bound bool
	var tier capability.Tier
	if c.Method == "" {
		r.t, r.b = s.Tools[c.Tool], s.Bindings[c.Tool]
		// Shape first: the identity and pinned fields aegis writes are
		// part of the arguments the closed schema must accept (a server
		// may require them), and what is checked is what is forwarded.
		fwd, err = e.shape(c, s, r.t, sc, c.Arguments)
		doc = sc.w.Doc
		var sch *schema.Schema
		if err == nil {
			fwd, sch, err = e.closedSchema(c, s, r.t, doc, fwd)
		}
		if err == nil {
			fwd, err = e.defaults(r, sch, sc, fwd)
			doc = sc.w.Doc
		}
	} else {
		// Another method: nothing of a tool's (pins, shaping, schemas)
		// applies, and what it acts on says what it derives.
		bound, tier = e.methodRoute(c, r)
	}
	var origin capability.Origin
	var taint bool
	var inputs []byte
	if err == nil {
		origin, taint = e.sessionFacts(c)
		if !taint && s.ValueTaint && c.Session != "" {
			// A value of an untrusted result in the arguments taints
			// this call (R36).
			tokens := session.Tokens(nil, doc.Root())
			taint, _ = e.sessions.CarriesTaint(c.Session, tokens)
			taint = taint || e.sharedCarries(c.Session, tokens)
		}
		fwd, found, err = e.scanArguments(s, doc, fwd)
	}
	if err == nil && c.InputResponses != nil {
		var more []dlp.Located
		inputs, more, err = e.scanInput(s, c)
		found = append(found, more...)
	}
	var rel []capability.Capability
	if err == nil {
		// The capabilities, the Verdict's, may hold strings of doc: from
		// here on it must not share the caller's memory. (Nothing before
		// keeps a string of it: errors and findings copy what they name.)
		doc.OwnIn(&sc.mem.text)
		if c.Method == "" {
			rel, err = r.fields().RelativeCaps(doc.Root())
			err = ruleOfShape(err)
		}
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
		Method:    c.Method,
		Tool:      c.Tool,
		Bound:     bound,
		Tier:      tier,
		Principal: c.Principal,
		Roles:     c.Roles,
		Origin:    origin,
		Taint:     taint,
		FoldCase:  r.s.CaseInsensitive,
	}
	caps := rc.caps[:0]
	if n > len(rc.caps) {
		caps = make([]capability.Capability, 0, n)
	}
	if b := r.b; b != nil {
		if c.Method == "" {
			req.Bound, req.Tier = true, b.Tier
		}
		opts := &s.Options
		if c.RootsAsked && len(opts.Path.Bases) > 0 {
			o := *opts
			o.Path.Bases = nil // the client's roots replaced them
			opts = &o
		}
		caps, err = b.Derive(caps, doc.Root(), opts)
		if err != nil {
			*v = deny(err)
			v.Bound, v.Tier = true, req.Tier
			return nil, nil, false
		}
		e.flagUnproven(c, b, caps)
		req.Values = b.ValuesOf(doc.Root())
	}
	if len(rel) > 0 {
		caps = append(caps, rel...)
	}
	if c.Connect != nil {
		caps = append(caps, *c.Connect)
	}
	req.Caps = caps
	*v = Verdict{Arguments: fwd, InputResponses: inputs}
	return req, found, true
}

// conclude fills v with the decision on the prepared call: the policy's, an
// ask for a DLP finding that asks, the refusal of a step before the policy,
// the refusal of aegis's own files (whatever the policy decided, in shadow
// mode too), and the checks after it (counting the call against its caps
// when commit). A denied call's arguments are withheld.
func (e *Engine) conclude(ctx context.Context, v *Verdict, c *Call, req *policy.Request, r *route, doc *args.Doc, found []dlp.Located, commit bool) {
	inputs := v.InputResponses
	e.decideInto(v, req, v.Arguments)
	if v.Effect != policy.Deny {
		v.InputResponses = inputs
	}
	withFindings(v, r.s, found)
	if c.Refuse != nil {
		v.refuse(c.Refuse)
	} else if err := e.selfCheck(v.Caps, req.FoldCase); err != nil {
		v.refuse(err)
	} else {
		e.afterPolicy(ctx, v, c, r, doc, req.Origin, commit)
	}
	if v.Effect == policy.Deny {
		v.Arguments, v.InputResponses = nil, nil
	}
}

// afterPolicy runs the checks that follow the policy (DESIGN.md pipeline
// step 7) on the verdict v, in this order: egress, provenance of ids, the
// unattended ask, and the caps, which count a call only once everything
// else has allowed it and commit is set, and not again for the retry that
// continues it (Call.Continues). A check that refuses makes v a denial.
func (e *Engine) afterPolicy(ctx context.Context, v *Verdict, c *Call, r *route, doc *args.Doc, origin capability.Origin, commit bool) {
	if v.Effect == policy.Deny {
		return
	}
	var err error
	if c.Connect == nil { // a server's own connection meets the egress gate as it dials
		err = e.egress(ctx, r.s, v.Caps)
	}
	if err == nil && r.b != nil {
		err = e.provenance(c, r.b, v.Caps, doc.Root())
	}
	if err == nil {
		err = unattended(v, r.t, origin)
	}
	if err == nil && commit && v.Effect == policy.Allow && !c.Continues {
		err = e.takeCap(ctx, c, r.t)
	}
	if err != nil {
		v.refuse(err)
	}
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
