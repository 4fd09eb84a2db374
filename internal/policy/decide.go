package policy

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// Request is one call to decide: who calls which tool, in what session,
// and the capabilities derived from its arguments (canonical, package
// capability).
type Request struct {
	Server string // the configured name of the tool's server
	// Method is the MCP request decided: "" (or "tools/call") for a tool
	// call, else another client request (resources/read, prompts/get,
	// completion/complete, ...) or a request of the server to the client
	// (sampling/createMessage, elicitation/create, roots/list).
	Method string
	// Tool is what the method names: the tool of a tools/call, the prompt
	// of a prompts/get, the resource URI of a resources/read; "" for a
	// method that names nothing.
	Tool      string
	Principal string
	Roles     []string
	Origin    capability.Origin
	Taint     bool // the session is tainted
	// Bound says the tool has a confirmed binding. An unbound tool is
	// reached only by rules that say `unbound: true`, and by deny rules.
	Bound bool
	// Tier is the risk tier of the tool's binding; unknown is matched as
	// mutating.
	Tier capability.Tier
	// FoldCase says the server's files are on a case-insensitive volume:
	// path_under matches case variants of a path too, broadly for rules
	// that deny (capability.FoldPath) and only in ASCII letters for rules
	// that grant (capability.PathUnderFold). Unicode normalisation twins
	// are one path either way.
	FoldCase bool
	Caps     []capability.Capability
	// Values are the call's arguments its binding names as typed values
	// (R35), by name: what conditions read as value.NAME. Nil: none.
	Values map[string]any
}

// inlineCaps is how many capability verdicts a Decision holds without
// allocating.
const inlineCaps = 4

// Verdict is the outcome for one target of a call: its action, or one of
// its capabilities.
type Verdict struct {
	// Rule is the rule that decided Effect, nil when no enforced rule
	// matched (default deny) or the capability was invalid.
	Rule *Rule
	// WouldRule decided Would, the effect with shadow rules enforced.
	WouldRule *Rule
	Effect    Effect
	Would     Effect
	// Invalid is set for a capability that is not in canonical form or
	// lacks what its kind needs (a relative path, an empty host): it is
	// denied without consulting the rules.
	Invalid bool
}

// verdict fills v, a zero Verdict, from the tally.
func (t *tally) verdict(v *Verdict) {
	if r := t.rule; r != nil {
		v.Effect, v.Rule = r.effect, r.info
	}
	if r := t.would; r != nil {
		v.Would, v.WouldRule = r.effect, r.info
	}
}

// Decision is the outcome of [Set.Decide]: a value, deny unless filled in.
// The call is allowed only if its action and every capability are allowed
// (DESIGN.md R8). A Decision refers to its Request for Reason: the request
// MUST NOT be changed while the Decision is used.
type Decision struct {
	effect Effect
	would  Effect
	action Verdict
	caps   [inlineCaps]Verdict
	more   []Verdict // verdicts past inlineCaps
	n      int

	req *Request // for Reason
}

// Effect returns the decision: Deny if the action or any capability is
// denied, else Ask if any asks, else Allow.
func (d Decision) Effect() Effect { return d.effect }

// Would returns the decision with shadow rules enforced.
func (d Decision) Would() Effect { return d.would }

// Action returns the verdict on the call's action.
func (d Decision) Action() Verdict { return d.action }

// NumCaps returns the number of capability verdicts, one per capability
// of the request, in order.
func (d Decision) NumCaps() int { return d.n }

// Cap returns the verdict on capability i.
func (d Decision) Cap(i int) Verdict {
	if i < inlineCaps {
		return d.caps[i]
	}
	return d.more[i-inlineCaps]
}

// Rules returns the IDs of the enforced rules that decided the action and
// the capabilities, without repeats.
func (d Decision) Rules() []string {
	var ids []string
	add := func(r *Rule) {
		if r == nil {
			return
		}
		for _, id := range ids {
			if id == r.ID {
				return
			}
		}
		ids = append(ids, r.ID)
	}
	add(d.action.Rule)
	for i := range d.n {
		add(d.Cap(i).Rule)
	}
	return ids
}

// Shadowed returns the shadow rules that would change the decision if they
// were enforced: those that decide Would on a target where it differs from
// Effect.
func (d Decision) Shadowed() []*Rule {
	var out []*Rule
	add := func(v Verdict) {
		if v.Would == v.Effect || v.WouldRule == nil {
			return
		}
		for _, r := range out {
			if r == v.WouldRule {
				return
			}
		}
		out = append(out, v.WouldRule)
	}
	add(d.action)
	for i := range d.n {
		add(d.Cap(i))
	}
	return out
}

// Reason explains the decision in one line, naming the deciding rule and
// its file:line, or what no rule allows.
func (d Decision) Reason() string {
	if d.req == nil {
		return "no decision was made"
	}
	// The first target with the decision's effect explains it.
	if d.action.Effect == d.effect && d.effect != Allow {
		return d.explainAction(d.action, d.action.Effect, d.action.Rule)
	}
	for i := range d.n {
		if v := d.Cap(i); v.Effect == d.effect && d.effect != Allow {
			return d.explainCap(i, v, v.Effect, v.Rule)
		}
	}
	return d.allowReason()
}

// allowReason explains an allow: the action rule's, and how many
// capabilities are allowed. A call allowed once is typically allowed again
// by the same rules, so the last reason of each rule is kept (saidCache)
// and reused while it says the same.
func (d Decision) allowReason() string {
	r := d.action.Rule
	var slot *atomic.Pointer[said]
	if r != nil { // nil: a reason no rule gives, never kept
		slot = &saidCache[saidSlot(r)]
		if m := slot.Load(); m != nil && m.rule == r && m.same(r, d.req, d.n) {
			return m.said
		}
	}
	s := d.explainAction(d.action, Allow, r)
	switch d.n {
	case 0:
	case 1:
		s += ", and its capability is allowed"
	default:
		s += fmt.Sprintf(", and its %d capabilities are allowed", d.n)
	}
	if slot != nil {
		slot.Store(&said{rule: r, of: *r, server: d.req.Server, tool: d.req.Tool, method: d.req.Method, n: d.n, said: s})
	}
	return s
}

// said is an allow's reason, and all it was built from: the rule, by
// address and by the fields its reason quotes (a caller may change a Rule
// it was given), the call's server and tool, and the number of
// capabilities.
type said struct {
	rule         *Rule
	of           Rule
	server, tool string
	method       string
	n            int
	said         string
}

func (m *said) same(r *Rule, q *Request, n int) bool {
	return m.n == n && m.server == q.Server && m.tool == q.Tool && m.method == q.Method &&
		m.of.ID == r.ID && m.of.File == r.File && m.of.Line == r.Line && m.of.Reason == r.Reason && m.of.Mode == r.Mode
}

// saidCache holds the last allow reason built, by rule, in a slot chosen
// by where the rule is written (saidSlot); a slot keeps one rule of a
// replaced policy alive at most.
var saidCache [1 << saidBits]atomic.Pointer[said]

// saidBits is log2 of saidCache's slots.
const saidBits = 6

// saidSlot is the slot of saidCache that r's reasons take: a
// multiplicative hash of where the rule is written, which sets the rules of
// one policy apart (the package does no I/O, and takes no addresses).
func saidSlot(r *Rule) uint64 {
	return (uint64(r.Line)<<16 ^ uint64(r.Col)) * 0x9e3779b97f4a7c15 >> (64 - saidBits)
}

// ShadowReason explains what shadow rules would change, or returns "" when
// Would equals Effect: `shadow rule "x" (policy.yaml:9) denies ...`.
func (d Decision) ShadowReason() string {
	if d.would == d.effect || d.req == nil {
		return ""
	}
	if v := d.action; v.Would != v.Effect && v.Would == d.would {
		return d.explainAction(v, v.Would, v.WouldRule)
	}
	for i := range d.n {
		if v := d.Cap(i); v.Would != v.Effect && v.Would == d.would {
			return d.explainCap(i, v, v.Would, v.WouldRule)
		}
	}
	return fmt.Sprintf("shadow rules would %s", d.would)
}

func (d Decision) explainAction(v Verdict, e Effect, r *Rule) string {
	what := d.toolWhat()
	if r == nil {
		if !d.req.Bound {
			return "no rule allows unbound " + what
		}
		return "no rule allows " + what
	}
	return ruleSays(r, e, what)
}

func (d Decision) explainCap(i int, v Verdict, e Effect, r *Rule) string {
	what := "capability " + strconv.Itoa(i)
	if i < len(d.req.Caps) {
		what = describeCap(&d.req.Caps[i])
	}
	switch {
	case v.Invalid:
		return what + " is not a valid canonical capability"
	case r == nil:
		return "no rule allows " + what
	}
	if i < len(d.req.Caps) {
		if below := reachedBelow(r, &d.req.Caps[i], d.req.FoldCase); below != "" {
			// A rule for a folder under the capability's path: say
			// which, as the rule's own line does not.
			what += " (it holds " + printable(below) + ")"
		}
	}
	return ruleSays(r, e, what)
}

// reachedBelow returns the directory of r strictly under c's path by which
// r reaches c, a capability on a whole subtree, when none of r's
// directories holds c's path; otherwise "". The path and the directories
// are compared in the forms the rule matched them by (rule.pathOK,
// rule.reachesBelow), fold saying the volume ignores case, so that a
// directory is named whatever the spelling of c's path. It is for
// reasons and explanations, and may allocate.
func reachedBelow(r *Rule, c *capability.Capability, fold bool) string {
	if !c.Subtree || r.PathUnder == nil {
		return ""
	}
	f, ok := formsOf(c.Path, fold)
	if !ok {
		return ""
	}
	deny := fold && r.Effect == Deny
	below := ""
	for _, d := range r.PathUnder {
		dir, p := d, f.nfc
		if deny {
			if dir, ok = capability.FoldPath(d); !ok {
				continue
			}
			p = f.key
		}
		if underForm(p, dir, fold) {
			return "" // the rule holds the path itself
		}
		if below == "" && strictlyUnder(dir, p, fold) {
			below = d
		}
	}
	return below
}

// toolWhat names the request's tool for a reason: `tool "x" on server "y"`,
// and for another method `prompts/get "x" on server "y"` (without the
// quoted name when the method names nothing).
func (d Decision) toolWhat() string { return d.req.what() }

func (req *Request) what() string {
	b := make([]byte, 0, 32+len(req.Tool)+len(req.Server))
	switch req.Method {
	case "", ToolsCall:
		b = append(b, "tool "...)
		b = strconv.AppendQuote(b, req.Tool)
	default:
		b = append(b, req.Method...)
		if req.Tool != "" {
			b = append(b, ' ')
			b = strconv.AppendQuote(b, req.Tool)
		}
	}
	b = append(b, " on server "...)
	b = strconv.AppendQuote(b, req.Server)
	return string(b)
}

// ruleSays says what rule r does to what: `rule "id" (file:line) denies
// what: reason`, prefixed "shadow " for a shadow rule. Every recorded
// decision carries one; it is built without fmt (TestRuleSays).
func ruleSays(r *Rule, e Effect, what string) string {
	b := make([]byte, 0, 40+len(r.ID)+len(r.File)+len(what)+len(r.Reason))
	if r.Mode == Shadow {
		b = append(b, "shadow "...)
	}
	b = append(b, "rule "...)
	b = strconv.AppendQuote(b, r.ID)
	b = append(b, " ("...)
	b = append(b, r.File...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(r.Line), 10)
	b = append(b, ") "...)
	b = append(b, e.verb()...)
	b = append(b, ' ')
	b = append(b, what...)
	if r.Reason != "" {
		b = append(b, ": "...)
		b = append(b, r.Reason...)
	}
	return string(b)
}

// describeCap names a capability for a reason: `fs.read /home/a/x`,
// `net.connect https://api.github.com:443`, `exec git`.
func describeCap(c *capability.Capability) string {
	k := c.Kind.String()
	switch c.Kind {
	case capability.FSRead, capability.FSWrite:
		if c.Subtree {
			return k + " " + printable(c.Path) + " and everything under it"
		}
		return k + " " + printable(c.Path)
	case capability.NetConnect, capability.NetLink:
		host := c.Host
		if c.Addr.IsValid() && c.Addr.Is6() {
			host = "[" + host + "]"
		}
		if c.Port != 0 {
			host += ":" + strconv.Itoa(int(c.Port))
		}
		if c.Scheme != "" {
			host = c.Scheme + "://" + host
		}
		return k + " " + printable(host)
	case capability.Exec:
		if c.Shell {
			return k + " shell command " + strconv.Quote(short(c.Command))
		}
		return k + " " + printable(c.Program)
	case capability.ID:
		return k + " " + printable(c.IDKind) + " " + strconv.Quote(short(c.ID))
	}
	return k
}

// printable quotes s if it holds anything but printable, unspaced text.
func printable(s string) string {
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == '"' || !strconv.IsPrint(r) {
			return strconv.Quote(short(s))
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

func short(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	for i := range s {
		if i > max {
			return s[:i] + "…"
		}
	}
	return s
}

// Decide decides a call. It does not allocate unless a rule with a
// condition is evaluated or the call has more than four capabilities.
func (s *Set) Decide(req *Request) (d Decision) {
	d.req, d.n = req, len(req.Caps)
	e := evaluator{req: req, bits: callBits(req), sig: requestSig(req)}
	s.idx.action(&e)
	e.t.verdict(&d.action)
	effect, would := strictness(e.t.prec), strictness(e.t.wouldPrec)
	if len(req.Caps) > inlineCaps {
		d.more = make([]Verdict, len(req.Caps)-inlineCaps)
	}
	for i := range req.Caps {
		v := d.capAt(i)
		e.cap, e.t = &req.Caps[i], tally{}
		if s.idx.capability(&e) {
			e.t.verdict(v)
			effect, would = max(effect, strictness(e.t.prec)), max(would, strictness(e.t.wouldPrec))
		} else {
			v.Invalid = true // and Deny, the zero Effect
			effect, would = 3, 3
		}
	}
	d.effect, d.would = effectOf(effect), effectOf(would)
	return d
}

// capAt returns where the verdict on capability i goes.
func (d *Decision) capAt(i int) *Verdict {
	if i < inlineCaps {
		return &d.caps[i]
	}
	return &d.more[i-inlineCaps]
}

// strictness ranks the effect of a tally's precedence (precedence, whose
// high half is the effect's rank plus one, or zero for no rule): 1 for
// Allow, 2 for Ask, 3 for Deny, no rule being a Deny. The strictest
// target decides a call.
func strictness(prec uint64) uint64 {
	if k := prec >> 32 & 3; k != 0 {
		return k
	}
	return 3
}

// effectOf is the effect of a strictness.
func effectOf(k uint64) Effect { return [4]Effect{Deny, Allow, Ask, Deny}[k&3] }
