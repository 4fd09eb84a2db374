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

// shape applies the shaping steps (DESIGN.md pipeline step 4) to the
// arguments in doc (cur, as the schema step left them): a model-supplied
// identity field refuses the call; template markers in model-written
// strings are neutralised; pinned fields are set or cleared and identity
// fields injected. When anything changed, sc.doc holds the shaped
// arguments, which it returns; otherwise it returns cur.
func (e *Engine) shape(c *Call, s *Server, t *Tool, sc *scratch, cur []byte) ([]byte, error) {
	out := cur
	if t == nil && s.Templates == nil {
		return out, nil
	}
	doc := sc.doc
	root := doc.Root()
	edits := t != nil && len(t.Set)+len(t.Clear)+len(t.Identity) > 0
	var plan flatPlan // for a flat tool: the members the edit drops
	if edits {
		// Compiled before the case check reads t.flat and t.touched, which
		// the compile writes (under its sync.Once).
		if err := t.compiled(); err != nil {
			return nil, refusal(RuleShape, "%v", err)
		}
		var err error
		if plan, err = t.caseChecks(root); err != nil {
			return nil, err
		}
	}
	var tree *jnode
	if s.Templates != nil {
		rewritten, _, err := s.Templates.NeutraliseJSON(root)
		if err != nil {
			return nil, refusal(RuleShape, "neutralising template markers: %v", err)
		}
		if rewritten != nil {
			out = rewritten
			if err := doc.Decode(out, &e.limits); err != nil {
				return nil, refusal(RuleShape, "the neutralised arguments: %v", err)
			}
			root = doc.Root()
			plan = flatPlan{} // of the members before the rewrite
		}
	}
	if !edits {
		return out, nil
	}
	if t.flat && root.Kind() == args.Object {
		return e.shapeFlat(c, t, sc, root, len(out), plan)
	}
	tree = treeOf(root)
	for _, toks := range t.clear {
		tree.remove(toks)
	}
	for i := range t.Set {
		a := &t.Set[i]
		if err := tree.set(a.toks, a.node); err != nil {
			return nil, refusal(RuleShape, "pinned field %s: %v", a.Pointer, err)
		}
	}
	for _, f := range t.Identity {
		v, ok := e.identity(c.Principal, f.Source)
		if !ok {
			return nil, refusal(RuleIdentity, "argument %s: the principal %q has no %s in the configuration", f.Pointer, c.Principal, f.Source)
		}
		val := &jnode{kind: args.String, raw: string(args.AppendString(nil, strings.ToValidUTF8(v, "\uFFFD")))}
		if err := tree.set(f.toks, val); err != nil {
			return nil, refusal(RuleIdentity, "argument %s: %v", f.Pointer, err)
		}
	}
	out = tree.appendJSON(make([]byte, 0, len(out)+64))
	if err := doc.Decode(out, &e.limits); err != nil {
		return nil, refusal(RuleShape, "the shaped arguments: %v", err)
	}
	return out, nil
}

// caseCheckFlat is the first part of shape for a flat tool touching at most
// eight fields: a model-supplied identity field, or a key differing from a
// pinned or cleared field's only in case, refuses the call. It reads the
// members once for every field, where the general check looks each field's
// pointer up apart, and gives the same answer: an identity field present as
// written or in another case, then for each pinned and each cleared field a
// key naming it but for case while no key names it exactly, in that order.

// caseChecks refuses arguments that supply an identity field, or a key
// that differs from a pinned or cleared field's only in case: such a key
// would survive the edit, and a server matching keys without case (Go's
// encoding/json, ASP.NET) would read it as that field. t must be compiled.
// For a flat tool it also returns the members the edit drops.
func (t *Tool) caseChecks(root args.Value) (flatPlan, error) {
	if plan, err := t.caseCheckFlat(root); plan.known || err != nil {
		return plan, err
	}
	for _, f := range t.Identity {
		found := false
		f.Pointer.Select(root, func(args.Value, args.Loc) { found = true })
		if _, variant := f.Pointer.CaseVariant(root); found || variant {
			return flatPlan{}, refusal(RuleIdentity, "argument %s is set by aegis from the session; the call may not supply it", f.Pointer)
		}
	}
	for i := range t.Set {
		if key, ok := t.Set[i].Pointer.CaseVariant(root); ok {
			return flatPlan{}, refusal(RuleShape, "argument %q differs from the pinned field %s only in case", key, t.Set[i].Pointer)
		}
	}
	for _, p := range t.Clear {
		if key, ok := p.CaseVariant(root); ok {
			return flatPlan{}, refusal(RuleShape, "argument %q differs from the cleared field %s only in case", key, p)
		}
	}
	return flatPlan{}, nil
}

// flatPlan is what the case check of a flat tool learnt of the arguments
// object for the flat edit: which of its members (the first 64) name a
// touched field exactly, and so are dropped. known is false when it learnt
// nothing.
type flatPlan struct {
	drop  uint64
	known bool
}

// caseCheckFlat is caseChecks for a flat tool touching at most eight
// fields: it reads the members once for every field, where the general
// check looks each field's pointer up apart, and gives the same answer: an
// identity field present as written or in another case, then for each
// pinned and each cleared field a key naming it but for case while no key
// names it exactly, in that order. Its plan is known when it applies and
// the object has at most 64 members.
func (t *Tool) caseCheckFlat(root args.Value) (plan flatPlan, err error) {
	if t == nil || !t.flat || len(t.touched) > 8 || root.Kind() != args.Object {
		return flatPlan{}, nil
	}
	plan.known = root.Len() <= 64
	if len(t.touched) == 0 {
		return plan, nil
	}
	// By index in t.touched, which for a flat tool lists the cleared, the
	// pinned and the identity fields, in that order, each once.
	var exact, folded uint8
	var variant [8]int32 // the index of the first member naming touched[j] but for case
	i := -1
	for k := range root.Members() {
		i++
		for j, name := range t.touched {
			switch {
			case len(k) > 0 && len(name) > 0 && (k[0]|name[0]) < 0x80 && (k[0]^name[0])&^0x20 != 0:
				// ASCII first bytes that are neither equal nor a case pair:
				// not the same key (SameKey's own first test, inline).
			case !args.SameKey(k, name):
			case k == name:
				exact |= 1 << j
				plan.drop |= 1 << (i & 63)
			case folded&(1<<j) == 0:
				variant[j], folded = int32(i), folded|1<<j
			}
		}
	}
	nc, ns := len(t.clear), len(t.Set)
	for i, f := range t.Identity {
		if (exact|folded)&(1<<(nc+ns+i)) != 0 {
			return flatPlan{}, refusal(RuleIdentity, "argument %s is set by aegis from the session; the call may not supply it", f.Pointer)
		}
	}
	key := func(j int) string { k, _ := root.Member(int(variant[j])); return k }
	for i := range t.Set {
		if folded&^exact&(1<<(nc+i)) != 0 {
			return flatPlan{}, refusal(RuleShape, "argument %q differs from the pinned field %s only in case", key(nc+i), t.Set[i].Pointer)
		}
	}
	for i := range t.clear {
		if folded&^exact&(1<<i) != 0 {
			return flatPlan{}, refusal(RuleShape, "argument %q differs from the cleared field %s only in case", key(i), t.Clear[i])
		}
	}
	return plan, nil
}

// shapeFlat is the edit step for a tool whose set, clear and identity
// fields are all members of the arguments object itself: the members are
// copied as their source text, leaving out the ones aegis sets or clears,
// and the set and identity fields appended. It gives the same arguments as
// the tree edit, without building a tree, and writes them with an
// [args.Builder]: when the case check found no member to drop (the model
// wrote none of the fields aegis sets or clears, the usual case), onto the
// end of sc.doc itself, whose members stay as they are; otherwise into the
// spare document, which becomes sc.doc. Either way sc.doc is the document
// of exactly the text it returns, without decoding that text again.
func (e *Engine) shapeFlat(c *Call, t *Tool, sc *scratch, root args.Value, size int, plan flatPlan) ([]byte, error) {
	// The identity values first: a principal without one refuses the call
	// before any text is written.
	var idBuf [4]string
	ids := idBuf[:0]
	for _, f := range t.Identity {
		v, ok := e.identity(c.Principal, f.Source)
		if !ok {
			return nil, refusal(RuleIdentity, "argument %s: the principal %q has no %s in the configuration", f.Pointer, c.Principal, f.Source)
		}
		ids = append(ids, strings.ToValidUTF8(v, "\uFFFD"))
	}
	b := &sc.b
	buf := sc.mem.out[:0]
	if cap(buf) < size+t.setBytes {
		buf = make([]byte, 0, size+t.setBytes)
	}
	var next *args.Doc // the spare document, when the members are copied
	var placed uint64  // the set fields written in the model's member's place (a flat tool has at most 64)
	if !plan.known || plan.drop != 0 || !b.BeginAppend(sc.doc, buf, &e.limits) {
		next = sc.spare()
		b.Begin(next, buf, &e.limits)
		for i := range root.Len() {
			var k string
			if plan.known {
				if plan.drop&(1<<i) == 0 {
					b.Keep(root, i)
					continue
				}
				k, _ = root.Member(i)
			} else if k, _ = root.Member(i); !t.touches(k) {
				b.Keep(root, i)
				continue
			}
			for j := range t.Set {
				if t.Set[j].toks[0] == k {
					b.Member(k, t.Set[j].value)
					placed |= 1 << j
				}
			}
		}
	}
	for j := range t.Set {
		if placed&(1<<j) == 0 {
			b.Member(t.Set[j].toks[0], t.Set[j].value)
		}
	}
	for i, f := range t.Identity {
		b.StringMember(f.toks[0], ids[i])
	}
	out, err := b.End()
	if err != nil {
		return nil, refusal(RuleShape, "the shaped arguments: %v", err)
	}
	sc.mem.out = out // kept, grown, for the next call on this storage
	if next != nil {
		sc.doc = next
	}
	return out, nil
}

// identity returns the value of an identity source for principal.
func (e *Engine) identity(principal, source string) (string, bool) {
	if principal == "" {
		return "", false
	}
	if source == "principal" {
		return principal, true
	}
	attr, ok := strings.CutPrefix(source, "principal.")
	if !ok {
		return "", false
	}
	v, ok := e.principals[principal][attr]
	return v, ok && v != ""
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

// relativeCaps checks the arguments constrained to paths on a base URL
// (R14) and returns the net.connect each one makes: its resolution
// against the base, so that the policy and the egress gate see the host the
// server will reach.
func relativeCaps(t *Tool, root args.Value) ([]capability.Capability, error) {
	if t == nil || len(t.RelativeURL) == 0 {
		return nil, nil
	}
	var caps []capability.Capability
	for _, r := range t.RelativeURL {
		var bad error
		key, variant := r.Pointer.SelectExact(root, func(v args.Value, at args.Loc) {
			if bad != nil {
				return
			}
			if v.Kind() != args.String {
				bad = refusal(RuleRelativeURL, "argument %s: want a string (a path on %s)", at, r.Base)
				return
			}
			abs, err := r.Base.Resolve(v.Str())
			if err != nil {
				bad = refusal(RuleRelativeURL, "argument %s must be a path on %s: %v", at, r.Base, err)
				return
			}
			cp, err := capability.FromURL(abs)
			if err != nil {
				bad = refusal(RuleRelativeURL, "argument %s: %v", at, err)
				return
			}
			caps = append(caps, cp)
		})
		if variant {
			// A key differing only in case would escape the check and reach a
			// server that matches keys without case as the URL argument.
			return nil, refusal(RuleRelativeURL, "argument %q differs from %s only in case", key, r.Pointer)
		}
		if bad != nil {
			return nil, bad
		}
	}
	return caps, nil
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
