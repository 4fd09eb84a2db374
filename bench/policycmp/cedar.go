package policycmp

import (
	"bytes"
	"fmt"
	"net/netip"
	"path"
	"strconv"
	"strings"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// The Cedar mapping. Cedar decides one (principal, action, resource)
// question at a time with permit and forbid, so a call is 1+n questions:
//
//   - its action: Action::"call" on Tool::"server/tool";
//   - each capability: Action::"fs.read" (or fs.write, net.connect, exec,
//     id) on a resource of its kind: Path::"/abs/path", Host::"name",
//     Program::"prog", Id::"kind". Action::"fs.read" and "fs.write" are in
//     the group Action::"fs", which rules on both kinds use.
//
// The principal is User::"name", whose parents are its roles: a role
// matcher is `principal in Role::"team-5"`. path_under D is
// `context.path == "D" || context.path like "D/*"`: paths are canonical,
// so this is component-wise, and the directory itself is under. (An
// entity hierarchy of directories, `resource in Path::"D"` with every
// ancestor as a parent, decided the same and measured the same within
// noise, with twice the allocations.) Hosts: one exact name is the
// scope `resource == Host::"api.github.com"`; suffixes are
// `context.host like "*.example.net"`; CIDRs use the ipaddr extension
// (`context.addr.isInRange(ip("10.0.0.0/8"))`), and deny rules also test
// `context.v4`, the IPv4 address embedded in an IPv6 one; classes are
// `context.classes.contains("metadata")`. The other call matchers read
// the context (server, tool, origin, taint, tier, bound), which every
// question of a call carries. cedar-go evaluates the scope and then the
// conditions left to right, every policy for every question; the text is
// ordered so that a policy that cannot match fails on a cheap test.
//
// aegis's third effect, ask, is a permit whose rule the adapter knows to
// be an ask rule: when Cedar allows, the adapter looks at the determining
// policies (Diagnostic.Reasons) and asks if any is an ask rule. Deny wins
// over both, as in aegis; "first rule in the file" is the lowest index
// among the determining policies. The semantics Cedar cannot compute
// (aegis's missing-information rules) are spelled out per rule: a grant
// rule on origin requires it, a deny rule on origin also matches
// "unknown", and likewise for port 0 and an empty scheme.

// CedarText renders p as a Cedar policy document, one policy per rule
// and action (see cedarActions), in file order.
func CedarText(p *Policy) ([]byte, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for i := range p.Rules {
		r := &p.Rules[i]
		for _, a := range cedarActions(r) {
			cedarPolicy(&b, r, a)
		}
	}
	return b.Bytes(), nil
}

// cedarActions returns the actions of the policies for rule r: "call"
// for an action rule, the group "fs" for a rule on both fs.read and
// fs.write (Action::"fs.read" in Action::"fs"), else one per kind.
func cedarActions(r *Rule) []string {
	ks := r.Kinds()
	switch {
	case ks == nil:
		return []string{"call"}
	case len(ks) == 2 && hasKind(ks, "fs.read") && hasKind(ks, "fs.write"):
		return []string{"fs"}
	}
	return ks
}

// cedarPolicy writes rule r for the action named action. Conditions are
// ordered for cedar-go, which evaluates the scope and then the
// conditions left to right: the action scope first (an equality), then
// the capability's own matchers, then the call's, and the principal's
// roles (an entity walk) last.
func cedarPolicy(b *bytes.Buffer, r *Rule, action string) {
	var cond []string
	add := func(s string) {
		if s != "" {
			cond = append(cond, s)
		}
	}
	effect := "permit"
	if !r.grants() {
		effect = "forbid"
	}
	resource := "resource"

	// Capability matchers.
	if dirs := r.dirs(); dirs != nil {
		var alt []string
		for _, d := range dirs {
			alt = append(alt, "context.path == "+q(d), "context.path like "+q(prefixOf(d)+"*"))
		}
		add(paren(alt))
	}
	exact, suffixes, cidrs, classes := r.hostParts()
	if len(exact) == 1 && len(r.Host) == 1 {
		resource = "resource == Host::" + q(exact[0])
	} else if r.Host != nil {
		var alt []string
		for _, h := range exact {
			alt = append(alt, "resource == Host::"+q(h))
		}
		for _, s := range suffixes {
			alt = append(alt, "context.host like "+q("*"+s))
		}
		for _, c := range classes {
			alt = append(alt, "context.classes.contains("+q(c)+")")
		}
		for _, n := range cidrs {
			alt = append(alt, "(context has addr && context.addr.isInRange(ip("+q(n)+")))")
			if !r.grants() {
				alt = append(alt, "(context has v4 && context.v4.isInRange(ip("+q(n)+")))")
			}
		}
		add(paren(alt))
	}
	if r.Port != nil {
		var alt []string
		if !r.grants() {
			alt = append(alt, "context.port == 0")
		}
		for _, pr := range r.ports() {
			if pr.lo == pr.hi {
				alt = append(alt, "context.port == "+strconv.Itoa(pr.lo))
			} else {
				alt = append(alt, fmt.Sprintf("(context.port >= %d && context.port <= %d)", pr.lo, pr.hi))
			}
		}
		add(paren(alt))
	}
	if r.Scheme != nil {
		var alt []string
		if !r.grants() {
			alt = append(alt, `context.scheme == ""`)
		}
		for _, s := range r.Scheme {
			alt = append(alt, "context.scheme == "+q(s))
		}
		add(paren(alt))
	}
	if action == "exec" {
		// Arbitrary shell is matched by shell: true, and by deny rules
		// about exec that name no program (policy.rule.matchCap).
		if !(r.Shell || (!r.grants() && r.Program == nil)) {
			add("!context.shell")
		}
		var alt []string
		for _, g := range r.Program {
			if dir, ok := strings.CutSuffix(g, "/*"); ok {
				alt = append(alt, fmt.Sprintf("(context.program like %s && !(context.program like %s))",
					q(dir+"/*"), q(dir+"/*/*")))
				continue
			}
			alt = append(alt, "context.program == "+q(g))
			if !r.grants() && !strings.Contains(g, "/") {
				alt = append(alt, "context.base == "+q(g))
			}
		}
		add(paren(alt))
	}
	add(anyOf(r.IDKind, func(s string) string { return "context.id_kind == " + q(s) }))

	// Call matchers.
	switch {
	case r.Unbound:
		add("!context.bound")
	case r.grants():
		add("context.bound")
	}
	add(anyOf(r.Server, func(g string) string { return cedarGlob("context.server", g) }))
	add(anyOf(r.Tool, func(g string) string { return cedarGlob("context.tool", g) }))
	if r.Origin != "" {
		if r.grants() {
			add("context.origin == " + q(r.Origin))
		} else {
			add(`(context.origin == ` + q(r.Origin) + ` || context.origin == "unknown")`)
		}
	}
	switch r.Taint {
	case "true":
		add("context.taint")
	case "false":
		add("!context.taint")
	}
	add(anyOf(r.Tier, func(s string) string { return "context.tier == " + q(s) }))
	add(anyOf(r.Principal, func(s string) string { return "principal == User::" + q(s) }))
	add(anyOf(r.Role, func(s string) string { return "principal in Role::" + q(s) }))

	op := "=="
	if action == "fs" {
		op = "in"
	}
	fmt.Fprintf(b, "// %s\n%s (\n  principal,\n  action %s Action::%s,\n  %s\n)", r.ID, effect, op, q(action), resource)
	if len(cond) > 0 {
		fmt.Fprintf(b, "\nwhen {\n  %s\n}", strings.Join(cond, " &&\n  "))
	}
	b.WriteString(";\n\n")
}

// cedarLike escapes s for a Cedar like pattern.
func cedarLike(s string) string { return strings.ReplaceAll(s, "*", `\*`) }

// cedarGlob matches attr against an aegis name glob, whose only wildcard
// (validated) is `*`: Cedar's like has the same meaning.
func cedarGlob(attr, g string) string {
	if strings.Contains(g, "*") {
		return attr + " like " + q(g)
	}
	return attr + " == " + q(g)
}

func hasKind(kinds []string, k string) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

func join(vs []string, f func(string) string, sep string) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = f(v)
	}
	return strings.Join(out, sep)
}

func anyOf(vs []string, f func(string) string) string {
	if vs == nil {
		return ""
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = f(v)
	}
	return paren(out)
}

func paren(alt []string) string {
	switch len(alt) {
	case 0:
		return ""
	case 1:
		return alt[0]
	}
	return "(" + strings.Join(alt, " || ") + ")"
}

// Entity types and actions of the mapping.
const (
	tUser    = types.EntityType("User")
	tRole    = types.EntityType("Role")
	tAction  = types.EntityType("Action")
	tTool    = types.EntityType("Tool")
	tPath    = types.EntityType("Path")
	tHost    = types.EntityType("Host")
	tProgram = types.EntityType("Program")
	tID      = types.EntityType("Id")
)

var (
	actCall  = types.NewEntityUID(tAction, "call")
	actKinds = [...]types.EntityUID{
		capability.FSRead:     types.NewEntityUID(tAction, "fs.read"),
		capability.FSWrite:    types.NewEntityUID(tAction, "fs.write"),
		capability.NetConnect: types.NewEntityUID(tAction, "net.connect"),
		capability.Exec:       types.NewEntityUID(tAction, "exec"),
		capability.ID:         types.NewEntityUID(tAction, "id"),
	}
)

// CedarOptions configures NewCedar. The zero value authorizes every
// question against the whole policy set.
type CedarOptions struct {
	// Sliced partitions the policies by action at load time, and
	// authorizes each question against its action's slice only: the
	// hand-made pre-filtering a Cedar deployment can do, since cedar-go
	// evaluates every policy it is given.
	Sliced bool
}

// Cedar decides with cedar-go.
type Cedar struct {
	p      *Policy
	set    *cedar.PolicySet
	index  map[cedar.PolicyID]int // rule index in p
	slices [capability.ID + 1]cedar.PolicyMap
	sliced bool
}

// NewCedar renders p as Cedar, parses it and names each policy by its
// rule ID.
func NewCedar(p *Policy, o *CedarOptions) (*Cedar, error) {
	if o == nil {
		o = &CedarOptions{}
	}
	text, err := CedarText(p)
	if err != nil {
		return nil, err
	}
	list, err := cedar.NewPolicyListFromBytes("bench_"+p.Name+".cedar", text)
	if err != nil {
		return nil, err
	}
	c := &Cedar{p: p, set: cedar.NewPolicySet(), index: map[cedar.PolicyID]int{}, sliced: o.Sliced}
	for i := range c.slices {
		c.slices[i] = cedar.PolicyMap{}
	}
	next := 0
	for i := range p.Rules {
		for _, k := range cedarActions(&p.Rules[i]) {
			if next == len(list) {
				return nil, fmt.Errorf("cedar: too few policies for %d rules", len(p.Rules))
			}
			id := cedar.PolicyID(p.Rules[i].ID + "#" + k)
			c.set.Add(id, list[next])
			c.index[id] = i
			switch k {
			case "call":
				c.slices[0][id] = list[next]
			case "fs":
				c.slices[capability.FSRead][id] = list[next]
				c.slices[capability.FSWrite][id] = list[next]
			default:
				kind, err := capability.ParseKind(k)
				if err != nil {
					return nil, err
				}
				c.slices[kind][id] = list[next]
			}
			next++
		}
	}
	if next != len(list) {
		return nil, fmt.Errorf("cedar: %d policies for %d rules", len(list), len(p.Rules))
	}
	return c, nil
}

// Effect decides req: what the benchmark times.
func (c *Cedar) Effect(req *policy.Request) policy.Effect {
	var caps [4]verdict
	action, vs, _ := c.decide(req, caps[:0])
	e := action.effect()
	for _, v := range vs {
		e = stricter(e, v.effect())
	}
	return e
}

// Outcome decides req and names the deciding rules. Errors are policy
// evaluation errors that Cedar skipped; the mapping should cause none.
func (c *Cedar) Outcome(req *policy.Request) (Outcome, error) {
	action, vs, err := c.decide(req, nil)
	return outcomeOf(c.p, action, vs), err
}

func (c *Cedar) decide(req *policy.Request, caps []verdict) (verdict, []verdict, error) {
	// The entities of this call: the principal with its roles, and each
	// path with its ancestors.
	user := types.NewEntityUID(tUser, types.String(req.Principal))
	roles := make([]types.EntityUID, len(req.Roles))
	for i, r := range req.Roles {
		roles[i] = types.NewEntityUID(tRole, types.String(r))
	}
	ents := callEntities{user: types.Entity{UID: user, Parents: types.NewEntityUIDSet(roles...)}}

	call := types.RecordMap{
		"bound":  types.Boolean(req.Bound),
		"server": types.String(req.Server),
		"tool":   types.String(req.Tool),
		"origin": types.String(originName(req.Origin)),
		"taint":  types.Boolean(req.Taint),
		"tier":   types.String(tierName(req.Tier)),
	}
	var errs error
	ask := func(action, resource types.EntityUID, ctx types.RecordMap) verdict {
		var ps cedar.PolicyIterator = c.set
		if c.sliced {
			k := 0
			if action != actCall {
				k = kindOfAction(action)
			}
			ps = c.slices[k]
		}
		dec, diag := cedar.Authorize(ps, &ents, cedar.Request{Principal: user, Action: action, Resource: resource, Context: types.NewRecord(ctx)})
		if len(diag.Errors) > 0 && errs == nil {
			errs = fmt.Errorf("cedar: %s: %s", diag.Errors[0].PolicyID, diag.Errors[0].Message)
		}
		v := noRule
		for _, r := range diag.Reasons {
			i := c.index[r.PolicyID]
			v.consider(rank(c.p.Rules[i].Effect), i)
		}
		if dec == cedar.Deny && v.rank != 2 {
			return noRule
		}
		return v
	}

	action := ask(actCall, types.NewEntityUID(tTool, types.String(req.Server+"/"+req.Tool)), call)
	for i := range req.Caps {
		cp := &req.Caps[i]
		if !validCap(cp) {
			caps = append(caps, verdict{-2, -1})
			continue
		}
		ctx := make(types.RecordMap, len(call)+6)
		for k, v := range call {
			ctx[k] = v
		}
		var res types.EntityUID
		switch cp.Kind {
		case capability.FSRead, capability.FSWrite:
			res = types.NewEntityUID(tPath, types.String(cp.Path))
			ctx["path"] = types.String(cp.Path)
		case capability.NetConnect:
			res = types.NewEntityUID(tHost, types.String(cp.Host))
			ctx["host"] = types.String(cp.Host)
			ctx["port"] = types.Long(cp.Port)
			ctx["scheme"] = types.String(cp.Scheme)
			names := cp.Classes.Names()
			cls := make([]types.Value, len(names))
			for i, n := range names {
				cls[i] = types.String(n)
			}
			ctx["classes"] = types.NewSet(cls...)
			if cp.Addr.IsValid() {
				a := cp.Addr.WithZone("")
				ctx["addr"] = ipValue(a)
				if v4, ok := embeddedV4(a); ok {
					ctx["v4"] = ipValue(v4)
				}
			}
		case capability.Exec:
			res = types.NewEntityUID(tProgram, types.String(cp.Program))
			ctx["shell"] = types.Boolean(cp.Shell)
			ctx["program"] = types.String(cp.Program)
			ctx["base"] = types.String(path.Base(cp.Program))
		case capability.ID:
			res = types.NewEntityUID(tID, types.String(cp.IDKind))
			ctx["id_kind"] = types.String(cp.IDKind)
		}
		caps = append(caps, ask(actKinds[cp.Kind], res, ctx))
	}
	return action, caps, errs
}

// fsActions are the actions in the group Action::"fs".
var fsActions = types.EntityMap{
	actKinds[capability.FSRead]:  {UID: actKinds[capability.FSRead], Parents: types.NewEntityUIDSet(types.NewEntityUID(tAction, "fs"))},
	actKinds[capability.FSWrite]: {UID: actKinds[capability.FSWrite], Parents: types.NewEntityUIDSet(types.NewEntityUID(tAction, "fs"))},
}

// callEntities are the entities of one call: the principal and the fs
// actions.
type callEntities struct {
	user types.Entity
}

// Get implements types.EntityGetter.
func (e *callEntities) Get(uid types.EntityUID) (types.Entity, bool) {
	switch uid.Type {
	case tUser:
		if uid == e.user.UID {
			return e.user, true
		}
	case tAction:
		ent, ok := fsActions[uid]
		return ent, ok
	}
	return types.Entity{}, false
}

func kindOfAction(a types.EntityUID) int {
	for k, uid := range actKinds {
		if uid == a {
			return k
		}
	}
	return 0
}

// ipValue is addr as a Cedar ipaddr value: a single address.
func ipValue(a netip.Addr) types.IPAddr { return types.IPAddr(netip.PrefixFrom(a, a.BitLen())) }
