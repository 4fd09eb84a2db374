package gateway

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/session"
)

// The rule ids of aegis's own checks. A refusal by one of them is recorded
// under its id; recheck keeps such refusals, since no policy decided them.
const (
	RuleSchema      = "aegis:schema"
	RuleIdentity    = "aegis:identity"
	RuleShape       = "aegis:shape"
	RuleRelativeURL = "aegis:relative-url"
	RuleEgress      = "aegis:egress"
	RuleProvenance  = "aegis:provenance"
	RuleDLP         = "aegis:dlp"
	RuleCap         = "aegis:cap"
	RuleUnattended  = "aegis:unattended"
)

// refusal is the error of a refusal by one of aegis's own rules.
func refusal(rule string, format string, a ...any) error {
	return &Refusal{Rule: rule, Err: fmt.Errorf(format, a...)}
}

// sessionFacts merges what the call says of its session with what the
// session store knows: taint is never lost, and an origin the call does not
// know is the store's.
func (e *Engine) sessionFacts(c *Call) (capability.Origin, bool) {
	origin, taint := c.Origin, c.Taint
	if c.Session == "" {
		return origin, taint
	}
	o, tainted, _ := e.sessions.State(c.Session)
	if tainted {
		taint = true
	}
	if origin == capability.OriginUnknown {
		origin = o
	}
	if origin == capability.Unattended {
		taint = true
	}
	return origin, taint
}

// afterPolicy runs the checks that follow the policy (DESIGN.md pipeline
// step 7) on the verdict v: egress, provenance of ids, the unattended ask,
// and the caps, which count a call only once everything else has allowed
// it and commit is set. A check that refuses makes v a denial.
func (e *Engine) afterPolicy(ctx context.Context, v *Verdict, c *Call, r *route, doc *args.Doc, origin capability.Origin, commit bool) {
	if v.Effect == policy.Deny {
		return
	}
	for i := range v.Caps {
		if v.Caps[i].Kind != capability.NetConnect {
			continue
		}
		gate := r.s.Egress
		if gate == nil {
			gate = e.defaultEgress
		}
		if ev := gate.CheckCapability(ctx, &v.Caps[i]); !ev.Allow {
			v.refuse(refusal(RuleEgress, "%s", ev.String()))
			return
		}
	}
	if r.b != nil {
		if err := e.provenance(c, r.b, v.Caps, doc.Root()); err != nil {
			v.refuse(err)
			return
		}
	}
	t := r.t
	if v.Effect == policy.Ask && origin == capability.Unattended && (t == nil || !t.AllowUnattended) {
		v.refuse(refusal(RuleUnattended, "this call needs a person's approval, and no person is at an unattended session (%s)", v.Reason()))
		return
	}
	if t != nil && commit && v.Effect == policy.Allow {
		if ok, cp := e.sessions.Take(c.Session, strconv.Itoa(c.Turn), c.Tool, t.Caps); !ok {
			v.refuse(refusal(RuleCap, "tool %q reached its %s cap", c.Tool, cp))
		}
	}
}

// provenance checks every id capability against the ids the server
// returned in this session (R16): every candidate of every kind must be a
// member; an empty list where ids belong fails the call.
func (e *Engine) provenance(c *Call, b *binding.Binding, caps []capability.Capability, root args.Value) error {
	var kinds []string
	for i := range b.Args {
		a := &b.Args[i]
		if a.Kind != capability.ID {
			continue
		}
		if emptyList(a.Pointer, root) {
			return refusal(RuleProvenance, "argument %s is an empty list of %s ids", a.Pointer, a.IDKind)
		}
		if a.IDKind != "" && !contains(kinds, a.IDKind) {
			kinds = append(kinds, a.IDKind)
		}
	}
	var ids []string
	for _, k := range kinds {
		ids = ids[:0]
		for i := range caps {
			if cp := &caps[i]; cp.Kind == capability.ID && cp.IDKind == k {
				ids = append(ids, cp.ID)
			}
		}
		if len(ids) == 0 {
			continue // the argument is absent: no id to prove
		}
		if ok, why := e.sessions.Check(c.Session, k, ids); !ok {
			return refusal(RuleProvenance, "%s: ids must come from this session's own results", why)
		}
	}
	return nil
}

// emptyList reports whether a pointer of the form /a/b/* names an array
// or object that is present and empty.
func emptyList(p args.Pointer, root args.Value) bool {
	parent, ok := strings.CutSuffix(p.String(), "/*")
	if !ok {
		return false
	}
	pp, err := args.ParsePointer(parent)
	if err != nil {
		return false
	}
	empty := false
	pp.Select(root, func(v args.Value, _ args.Loc) {
		if (v.Kind() == args.Array || v.Kind() == args.Object) && v.Len() == 0 {
			empty = true
		}
	})
	return empty
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// scanArguments looks for secrets in the arguments as they will be
// forwarded (R17). A finding whose action is deny refuses the call; redact
// replaces its span and re-decodes doc; ask and report are returned in
// found (withFindings turns an allowed call into an ask).
func (e *Engine) scanArguments(s *Server, doc *args.Doc, cur []byte) (out []byte, found []dlp.Located, err error) {
	if s.DLP == nil {
		return cur, nil, nil
	}
	found = dlp.ScanValue(doc.Root(), nil)
	if len(found) == 0 {
		return cur, nil, nil
	}
	act, _ := s.DLP.Arguments.DecideLocated(found)
	if act == dlp.ActionDeny {
		var denied []dlp.Located
		for _, f := range found {
			if s.DLP.Arguments.For(f.Kind) == dlp.ActionDeny {
				denied = append(denied, f)
			}
		}
		return nil, nil, refusal(RuleDLP, "the arguments hold a secret: %s", findingsNote(denied))
	}
	redact := false
	for _, f := range found {
		redact = redact || s.DLP.Arguments.Redacts(f.Kind)
	}
	if redact {
		out, err := dlp.AppendRedacted(make([]byte, 0, len(cur)+32), doc.Root(), s.DLP.Arguments.Redacts)
		if err != nil {
			return nil, nil, refusal(RuleDLP, "redacting the arguments: %v", err)
		}
		if err := doc.Decode(out, &e.limits); err != nil {
			return nil, nil, refusal(RuleDLP, "the redacted arguments: %v", err)
		}
		cur = out
	}
	return cur, found, nil
}

// withFindings makes an allowed call an ask when a finding in its
// arguments asks for a person (R17), and keeps the findings for the record.
func withFindings(v *Verdict, s *Server, found []dlp.Located) {
	if len(found) == 0 {
		return
	}
	v.Findings = found
	var asks []dlp.Located
	for _, f := range found {
		if s.DLP.Arguments.For(f.Kind) == dlp.ActionAsk {
			asks = append(asks, f)
		}
	}
	if len(asks) > 0 && v.Effect == policy.Allow {
		v.Effect = policy.Ask
		v.Ask = &Refusal{Rule: RuleDLP, Err: fmt.Errorf("the arguments hold what may be a secret, so a person decides: %s", findingsNote(asks))}
	}
}

// findingsNote names findings by kind and location, never by value, and at
// most a few of them.
func findingsNote(fs []dlp.Located) string {
	var b strings.Builder
	for i, f := range fs {
		if i == 3 {
			fmt.Fprintf(&b, " and %d more", len(fs)-3)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		where := "value"
		if f.InKey {
			where = "key"
		}
		fmt.Fprintf(&b, "%s in the %s at %s", f.Kind, where, printablePointer(f.Pointer))
	}
	return b.String()
}

// printablePointer caps a pointer (which holds model-written keys) for a
// reason.
func printablePointer(p string) string {
	if len(p) > 80 {
		p = strings.ToValidUTF8(p[:80], "") + "…"
	}
	return strconv.Quote(p)
}

// ResultEvent is one tools/call result on its way back to the client.
type ResultEvent struct {
	Session string
	Server  string
	Tool    string
	Result  []byte // the result object as the server sent it
}

// emptyObject is what a pooled document holds between uses.
var emptyObject = []byte("{}")

// Result takes in a tool's result (DESIGN.md pipeline, last line): the
// session tainted by an untrusted tool, ids harvested for provenance, and
// the result scanned for secrets (R17). It returns the result to pass on —
// nil for the result as the server sent it, or the result with secrets
// redacted — and the findings, by kind and location. An error withholds
// the result: a finding whose action is deny, or a result aegis cannot
// read while it has secrets to look for.
func (e *Engine) Result(r *ResultEvent) (out []byte, found []dlp.Located, err error) {
	s := e.servers[r.Server]
	if s == nil {
		return nil, nil, fmt.Errorf("%w %q", ErrUnknownServer, r.Server)
	}
	t := s.Tools[r.Tool]
	if t != nil && t.Untrusted && r.Session != "" {
		e.sessions.Taint(r.Session, r.Server+"/"+r.Tool)
	}
	if s.DLP == nil && (t == nil || len(t.IDs) == 0) {
		return nil, nil, nil
	}
	// The document is a pooled one: its nodes are reused, and Decode
	// gives it a private copy of the text, so that strings kept from it
	// (provenance ids) stay valid after it goes back to the pool.
	sc := e.scratch.Get().(*scratch)
	doc := &sc.docs[0]
	defer func() {
		doc.DecodeBorrowed(emptyObject, nil) // lets go of the result's text
		e.scratch.Put(sc)
	}()
	if err := doc.Decode(r.Result, &e.limits); err != nil {
		if s.DLP != nil {
			return nil, nil, &Refusal{Rule: RuleDLP, Err: fmt.Errorf("the result cannot be read to look for secrets: %v", err)}
		}
		return nil, nil, fmt.Errorf("result: %w", err)
	}
	root := doc.Root()
	if t != nil && len(t.IDs) > 0 {
		// An error result names no object the server holds.
		if isErr, ok := root.Lookup("isError"); !ok || isErr.Raw() != "true" {
			var ids []string
			for _, src := range t.IDs {
				ids = session.IDs(ids[:0], src.Pointer, root)
				e.sessions.Record(r.Session, src.Kind, ids)
			}
		}
	}
	if s.DLP == nil {
		return nil, nil, nil
	}
	found = dlp.ScanValue(root, nil)
	if len(found) == 0 {
		return nil, nil, nil
	}
	switch act, _ := s.DLP.Results.DecideLocated(found); act {
	case dlp.ActionDeny, dlp.ActionAsk:
		return nil, found, &Refusal{Rule: RuleDLP, Err: fmt.Errorf("the result holds a secret: %s", findingsNote(found))}
	case dlp.ActionRedact:
		out, err := dlp.AppendRedacted(make([]byte, 0, len(r.Result)+32), root, s.DLP.Results.Redacts)
		if err != nil {
			return nil, found, &Refusal{Rule: RuleDLP, Err: fmt.Errorf("redacting the result: %v", err)}
		}
		return out, found, nil
	}
	return nil, found, nil
}
