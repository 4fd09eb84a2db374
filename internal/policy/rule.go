package policy

import (
	"path"
	"slices"
	"strings"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// Rule describes one compiled rule, for reasons, logs and `aegis explain`.
// It is read-only: changing it changes what is reported, never what is
// decided.
type Rule struct {
	ID     string
	Reason string // the rule's reason text, empty if it has none
	File   string
	Line   int
	Col    int
	Effect Effect
	Mode   Mode // Shadow if the rule or the whole policy is shadow

	// Kinds are the capability kinds the rule decides, written or implied
	// by its matchers; empty for an action rule.
	Kinds []capability.Kind
	// Unbound is set for a rule that applies only to unbound tools.
	Unbound bool
	// When is the rule's CEL condition, empty if it has none.
	When string
	// PathUnder are the rule's path_under directories, "~" expanded;
	// nil if it has none.
	PathUnder []string
}

// IsCapability reports whether the rule decides capabilities rather than
// actions.
func (r *Rule) IsCapability() bool { return len(r.Kinds) > 0 }

// rule is a compiled rule: the matchers Decide evaluates. The fields Decide
// reads for every candidate come first, so that rejecting most candidates
// touches one cache line.
type rule struct {
	index   int32 // position in the file: the first of equal effect decides
	effect  Effect
	shadow  bool
	unbound bool
	// unproven: the rule is for ids the server did not return (provenance
	// flag), which only such rules grant; deny rules meet every id.
	unproven bool
	// idIn: the id must be a member of one of these sets.
	idIn   []*ValueSet
	origin capability.Origin
	taint  int8  // 0: any, 1: untainted, 2: tainted
	tiers  uint8 // bit set of capability.Tier; 0: any
	kinds  kindSet
	shell  bool
	mask   uint32 // the call bits the rule's call scalars accept
	prec   uint64 // precedence(effect, index)

	// Call matchers; the zero value of each matches anything.
	servers    globs
	methods    globs // the MCP methods; nil: any (but see tools and prompts)
	tools      globs // a rule with tools matches tools/call only
	prompts    globs // a rule with prompts matches prompts/get only
	principals []string
	roles      []string
	role       nameKey // the one role, if the rule names one of up to 16 bytes

	// Capability matchers. kinds is zero for an action rule.
	paths []string // in NFC
	// foldPaths are the fold keys of paths (capability.FoldPath), which
	// a deny rule matches by on a case-insensitive volume.
	foldPaths []string
	hasHosts  bool
	hosts     hostMatcher
	ports     []portRange
	schemes   []string
	programs  globs
	idKinds   []string

	when *condition
	info *Rule
}

// kindSet is a set of capability kinds.
type kindSet uint8

func (k kindSet) has(kind capability.Kind) bool { return kind < 8 && k&(1<<kind) != 0 }

var (
	fsKinds = kindSet(1<<capability.FSRead | 1<<capability.FSWrite)
	// hostKinds are the kinds the host, port and scheme matchers apply
	// to: connections, and links written into text.
	hostKinds = kindSet(1<<capability.NetConnect | 1<<capability.NetLink)
	execKinds = kindSet(1 << capability.Exec)
	idKinds   = kindSet(1 << capability.ID)
	allKinds  = fsKinds | hostKinds | execKinds | idKinds
)

// grants reports whether the rule can grant (allow or ask). Matchers that
// test a value the call or capability does not have match only rules that
// cannot grant: missing information never widens a permission, and never
// narrows a denial.
func (r *rule) grants() bool { return r.effect != Deny }

// effectiveTier is the tier a call is matched with: an unknown tier is
// treated as mutating (package capability's contract).
func effectiveTier(t capability.Tier) capability.Tier {
	if t == capability.TierUnknown || t > capability.TierMutating {
		return capability.TierMutating
	}
	return t
}

// The call bits: one per value of each call scalar, so that a request has
// exactly one bit per dimension and a rule's scalar matchers are the set of
// bits they accept. A rule matches a request's scalars iff it accepts all
// of its bits: callBits(req) &^ rule.mask == 0.
const (
	bitBound uint32 = 1 << iota
	bitUnbound
	bitUntainted
	bitTainted
	bitInteractive
	bitUnattended
	bitOriginUnknown
	bitReadOnly
	bitDataRead
	bitMutating
	bitToolsCall   // the request is a tools/call
	bitPromptsGet  // a prompts/get
	bitOtherMethod // any other method
)

// ToolsCall is the method of a tool call, which a [Request] may also give
// as "".
const ToolsCall = "tools/call"

// PromptsGet is the method a rule's prompt matcher applies to.
const PromptsGet = "prompts/get"

// method returns the request's method, tools/call when it gives none.
func (req *Request) method() string {
	if req.Method == "" {
		return ToolsCall
	}
	return req.Method
}

func callBits(req *Request) uint32 {
	b := bitUnbound
	if req.Bound {
		b = bitBound
	}
	if req.Taint {
		b |= bitTainted
	} else {
		b |= bitUntainted
	}
	switch req.Origin {
	case capability.Interactive:
		b |= bitInteractive
	case capability.Unattended:
		b |= bitUnattended
	default:
		b |= bitOriginUnknown
	}
	switch effectiveTier(req.Tier) {
	case capability.TierReadOnly:
		b |= bitReadOnly
	case capability.TierDataRead:
		b |= bitDataRead
	default:
		b |= bitMutating
	}
	switch req.Method {
	case "", ToolsCall:
		b |= bitToolsCall
	case PromptsGet:
		b |= bitPromptsGet
	default:
		b |= bitOtherMethod
	}
	return b
}

// callMask returns the call bits the rule's scalar matchers accept. A
// matcher on something the call may lack (an unknown origin, a missing
// binding) accepts it only in a deny rule.
func (r *rule) callMask() uint32 {
	var m uint32
	switch {
	case r.unbound:
		m = bitUnbound
	case r.effect == Deny:
		m = bitBound | bitUnbound
	default:
		m = bitBound
	}
	switch r.taint {
	case 1:
		m |= bitUntainted
	case 2:
		m |= bitTainted
	default:
		m |= bitUntainted | bitTainted
	}
	switch r.origin {
	case capability.Interactive:
		m |= bitInteractive
	case capability.Unattended:
		m |= bitUnattended
	default:
		m |= bitInteractive | bitUnattended | bitOriginUnknown
	}
	if r.origin != capability.OriginUnknown && r.effect == Deny {
		m |= bitOriginUnknown
	}
	if r.tiers == 0 {
		m |= bitReadOnly | bitDataRead | bitMutating
	}
	if r.tiers&(1<<capability.TierReadOnly) != 0 {
		m |= bitReadOnly
	}
	if r.tiers&(1<<capability.TierDataRead) != 0 {
		m |= bitDataRead
	}
	if r.tiers&(1<<capability.TierMutating) != 0 {
		m |= bitMutating
	}
	return m | r.methodMask()
}

// methodMask returns the method bits the rule accepts: a tool matcher
// applies to tools/call, a prompt matcher to prompts/get, and a method
// matcher to the methods it names (which callLists checks in full).
func (r *rule) methodMask() uint32 {
	switch {
	case r.tools != nil:
		return bitToolsCall
	case r.prompts != nil:
		return bitPromptsGet
	case r.methods == nil:
		return bitToolsCall | bitPromptsGet | bitOtherMethod
	}
	var m uint32
	for i := range r.methods {
		g := &r.methods[i]
		if g.match(ToolsCall) {
			m |= bitToolsCall
		}
		if g.match(PromptsGet) {
			m |= bitPromptsGet
		}
		if g.wild || g.literal != ToolsCall && g.literal != PromptsGet {
			m |= bitOtherMethod
		}
	}
	return m
}

// callScalars checks the call matchers held in the rule itself: bound,
// taint, origin and tier.
func (r *rule) callScalars(req *Request) bool {
	return callBits(req)&^r.mask == 0
}

// callLists checks the call matchers that are lists.
func (r *rule) callLists(req *Request) bool { return r.callListsExcept(req, 0) }

// callListsExcept is callLists without the server or tool matcher if d
// says the index checked it.
func (r *rule) callListsExcept(req *Request, d done) bool {
	if len(r.servers) > 0 && d&doneServer == 0 && !r.servers.match(req.Server) ||
		len(r.tools) > 0 && d&doneTool == 0 && !r.tools.match(req.Tool) ||
		len(r.prompts) > 0 && !r.prompts.match(req.Tool) ||
		len(r.methods) > 0 && !r.methods.match(req.method()) {
		return false
	}
	if r.principals != nil && !slices.Contains(r.principals, req.Principal) {
		return false
	}
	return r.roles == nil || anyRole(r.roles, req.Roles)
}

// anyRole reports whether have holds a role of want. It compares roles of
// 8 to 16 bytes by two words, without a call.
func anyRole(want, have []string) bool {
	for _, w := range want {
		n := len(w)
		for _, h := range have {
			if len(h) != n {
				continue
			}
			if n >= 8 && n <= 16 {
				if load64(w) == load64(h) && load64(w[n-8:]) == load64(h[n-8:]) {
					return true
				}
			} else if w == h {
				return true
			}
		}
	}
	return false
}

// matchCap reports whether the capability matchers match c, which MUST be
// valid (validCap), skipping those the index checked (d). f holds the
// forms of the path of an fs capability (formsOf).
func (r *rule) matchCap(c *capability.Capability, f *pathForms, d done) bool {
	if !r.kinds.has(c.Kind) {
		return false
	}
	switch c.Kind {
	case capability.FSRead, capability.FSWrite:
		if r.paths != nil && d&donePath == 0 && !r.pathOK(f) &&
			!(c.Subtree && r.effect != Allow && r.reachesBelow(f)) {
			return false
		}
	case capability.NetConnect, capability.NetLink:
		if r.hasHosts && d&doneHost == 0 && !r.hosts.match(c, !r.grants()) {
			return false
		}
		if r.ports != nil && !r.portOK(c) || r.schemes != nil && !r.schemeOK(c) {
			return false
		}
	case capability.Exec:
		if c.Shell {
			// Arbitrary shell can run anything: only a rule that names
			// it grants it, and a denial of exec in general covers it.
			return r.shell || (!r.grants() && r.programs == nil)
		}
		if r.programs != nil && d&doneProgram == 0 && !r.matchProgram(c.Program) {
			return false
		}
	case capability.ID:
		if r.idKinds != nil && !slices.Contains(r.idKinds, c.IDKind) {
			return false
		}
		if r.idIn != nil && !slices.ContainsFunc(r.idIn, func(vs *ValueSet) bool { return vs.IDKind == c.IDKind && vs.Has(c.ID) }) {
			return false
		}
		// An unproven id is granted only by a rule that says so (as an
		// unbound tool is), and such a rule grants nothing else; a deny
		// rule meets every id.
		if r.grants() && c.Unproven != r.unproven || !r.grants() && r.unproven && !c.Unproven {
			return false
		}
	}
	return true
}

// portOK checks the port matcher, which the rule MUST have: a capability
// without a port meets it only in a rule that cannot grant.
func (r *rule) portOK(c *capability.Capability) bool {
	if c.Port == 0 {
		return !r.grants()
	}
	return inPorts(c.Port, r.ports)
}

// schemeOK is portOK for the scheme matcher.
func (r *rule) schemeOK(c *capability.Capability) bool {
	if c.Scheme == "" {
		return !r.grants()
	}
	return slices.Contains(r.schemes, c.Scheme)
}

// pathOK checks the path_under matcher, which the rule MUST have. On a
// case-insensitive volume a deny meets every case variant its fold key
// does, and a grant only ASCII case variants: the one folding every such
// volume shares, so that a grant never reaches a name a volume may hold
// as another file (ß and ss, say).
func (r *rule) pathOK(f *pathForms) bool {
	switch {
	case !f.fold:
		return anyPathUnder(f.nfc, r.paths)
	case r.grants():
		return anyPathUnderFold(f.nfc, r.paths)
	}
	return anyPathUnderFold(f.key, r.foldPaths)
}

func anyPathUnder(p string, dirs []string) bool {
	for _, d := range dirs {
		if capability.PathUnder(p, d) {
			return true
		}
	}
	return false
}

func anyPathUnderFold(p string, dirs []string) bool {
	for _, d := range dirs {
		if capability.PathUnderFold(p, d) {
			return true
		}
	}
	return false
}

// pathForms is the path of an fs capability in the forms rules match.
type pathForms struct {
	// nfc is the path in NFC: what every rule matches on a
	// case-sensitive volume, and rules that grant on the others.
	nfc string
	// key is what the path index walks: nfc; on a case-insensitive
	// volume, its fold key, or the ASCII path itself, which the fold
	// index folds as it reads.
	key  string
	fold bool
	// formed is set by formsOf; an ASCII path needs no forms, and the
	// path index walks it as it is (pathIndex.walk).
	formed bool
}

// formsOf returns the forms of the path p, and false if it has none (it
// is not valid UTF-8, or a name folds to nothing): such a capability is
// invalid. An ASCII path is its own forms, found without allocating.
func formsOf(p string, fold bool) (f pathForms, ok bool) {
	f.fold, f.formed = fold, true
	if capability.IsASCII(p) {
		f.nfc, f.key = p, p
		return f, true
	}
	if f.nfc, ok = capability.NormPath(p); !ok {
		return f, false
	}
	f.key = f.nfc
	if fold {
		f.key, ok = capability.FoldPath(f.nfc)
	}
	return f, ok
}

// reachesBelow reports whether one of the rule's directories is strictly
// under the path f, in the forms pathOK meets them by: a deny or ask rule
// for such a directory reaches a capability on the path's whole subtree
// (capability.Capability.Subtree), though not the path itself. On a
// case-insensitive volume a deny's directories are its fold keys, met by
// the path's key, and a grant's are in NFC, met in ASCII case only.
func (r *rule) reachesBelow(f *pathForms) bool {
	dirs, p := r.paths, f.nfc
	if f.fold && !r.grants() {
		dirs, p = r.foldPaths, f.key
	}
	for _, d := range dirs {
		if strictlyUnder(d, p, f.fold) {
			return true
		}
	}
	return false
}

// strictlyUnder reports whether dir is under p and is not p, both
// canonical and in one form: NFC, or fold keys (fold, where ASCII
// letters compare in either case).
func strictlyUnder(dir, p string, fold bool) bool {
	return len(dir) > len(p) && underForm(dir, p, fold)
}

// underForm is capability.PathUnder, or with fold PathUnderFold.
func underForm(p, dir string, fold bool) bool {
	if fold {
		return capability.PathUnderFold(p, dir)
	}
	return capability.PathUnder(p, dir)
}

func inPorts(p uint16, ranges []portRange) bool {
	for _, r := range ranges {
		if r.lo <= p && p <= r.hi {
			return true
		}
	}
	return false
}

// matchProgram matches the program as written. A deny rule's pattern
// without a "/" also matches the base name of a program given by path, so
// that denying "curl" covers /usr/bin/curl; an allow rule for "git" does
// not allow /tmp/x/git.
func (r *rule) matchProgram(prog string) bool {
	if r.programs.match(prog) {
		return true
	}
	if r.grants() {
		return false
	}
	base := path.Base(prog)
	if base == prog {
		return false
	}
	for i := range r.programs {
		if !hasSlash(r.programs[i].pattern) && r.programs[i].match(base) {
			return true
		}
	}
	return false
}

func hasSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

// validCap reports whether c is a capability the policy can decide: a known
// kind with the fields its matchers need, in canonical form. Anything else
// is denied without consulting the rules.
func validCap(c *capability.Capability) bool {
	switch c.Kind {
	case capability.FSRead, capability.FSWrite:
		return canonicalPath(c.Path)
	case capability.NetConnect, capability.NetLink:
		return c.Host != ""
	case capability.Exec:
		return c.Shell || c.Program != ""
	case capability.ID:
		return true
	}
	return false
}

// canonicalPath reports whether p is absolute and clean: what CanonPath
// returns, and what the path index can walk.
func canonicalPath(p string) bool {
	switch {
	case p == "/":
		return true
	case p == "" || p[0] != '/' || p[len(p)-1] == '/':
		return false
	case strings.IndexByte(p, 0) >= 0 || strings.Contains(p, "//"):
		return false
	case !strings.Contains(p, "/."):
		return true
	}
	// A component starts with a dot: is it "." or ".."?
	for i := 0; i+1 < len(p); i++ {
		if p[i] != '/' || p[i+1] != '.' {
			continue
		}
		rest := p[i+2:]
		if rest == "" || rest[0] == '/' || rest[0] == '.' && (len(rest) == 1 || rest[1] == '/') {
			return false
		}
	}
	return true
}

// matches reports whether the rule matches the action (c nil) or the
// capability c of req, evaluating its condition last. vars is created on
// the first condition evaluated. A condition that fails to evaluate makes a
// deny or ask rule match and an allow rule not match: fail closed.
func (r *rule) matches(req *Request, c *capability.Capability, vars **celVars) (bool, error) {
	if c == nil {
		if r.kinds != 0 || !r.callScalars(req) || !r.callLists(req) {
			return false, nil
		}
	} else {
		var f pathForms
		if c.Kind == capability.FSRead || c.Kind == capability.FSWrite {
			var ok bool
			if f, ok = formsOf(c.Path, req.FoldCase); !ok {
				return false, nil
			}
		}
		if !r.kinds.has(c.Kind) || !r.callScalars(req) || !r.matchCap(c, &f, 0) || !r.callLists(req) {
			return false, nil
		}
	}
	return r.cond(req, c, vars)
}

// residue says which matchers of r a candidate listed in the index must
// still check once it passes its own checks (the call bits and
// signatures, cand.pass, which only filter list matchers): those the
// index did not check where it lists the candidate, for capabilities of
// kind k (none for an action rule) found by the matchers d. A rule of
// kind k is listed only in k's index, and an action rule only in the
// action index, so the kind needs no check.
func (r *rule) residue(k capability.Kind, d done) need {
	var n need
	if len(r.servers) > 0 && d&doneServer == 0 || len(r.tools) > 0 && d&doneTool == 0 || r.principals != nil ||
		r.prompts != nil || r.methods != nil {
		n |= needLists
	}
	switch {
	case len(r.roles) == 1 && len(r.roles[0]) <= 16:
		n |= needRole
	case r.roles != nil:
		n |= needRoles
	}
	if r.when != nil {
		n |= needCond
	}
	if r.kinds == 0 {
		return n
	}
	switch k {
	case capability.FSRead, capability.FSWrite:
		if r.paths != nil && d&donePath == 0 {
			n |= needCap
		}
	case capability.NetConnect, capability.NetLink:
		switch {
		case r.hasHosts && d&doneHost == 0:
			n |= needCap
		default:
			if r.ports != nil {
				n |= needPort
			}
			if r.schemes != nil {
				n |= needScheme
			}
		}
	case capability.ID:
		// Always: whether the id is unproven is the capability's, which
		// the index does not know.
		n |= needCap
	case capability.Exec:
		// Found under the very program (programExact, which only a call
		// that is no shell command looks up), the rule matches by its
		// programs; how a shell command or a program's base name meets
		// it is matchCap's to say.
		if d&doneProgram == 0 {
			n |= needCap
		}
	default:
		n |= needCap
	}
	return n
}

// need is a set of the checks of a candidate's rule that its own checks
// and the index leave to do.
type need uint8

const (
	needCap    need = 1 << iota // the capability matchers: matchCap
	needLists                   // the server, tool and principal lists: callListsExcept
	needRole                    // the one role, by its words: evaluator.hasRole
	needRoles                   // the roles
	needPort                    // the port matcher of a net.connect rule whose hosts are checked: portOK
	needScheme                  // likewise the scheme matcher: schemeOK
	needCond                    // the condition
)

// matchRest is matches for a candidate of the index that passed its
// checks: it checks the matchers of c.need, in the evaluator's call and
// capability (nil for the action), that the index did not (d).
func (e *evaluator) matchRest(c *cand, d done) bool { return e.matchNeeded(c, d, c.need) }

// matchNeeded is matchRest for the checks n.
func (e *evaluator) matchNeeded(c *cand, d done, n need) bool {
	r := c.r
	if n&needRole != 0 && !e.hasRole(r) ||
		n&needRoles != 0 && !anyRole(r.roles, e.req.Roles) ||
		n&needCap != 0 && !r.matchCap(e.cap, &e.path, d) ||
		n&needPort != 0 && !r.portOK(e.cap) ||
		n&needScheme != 0 && !r.schemeOK(e.cap) ||
		n&needLists != 0 && !r.callListsExcept(e.req, d) {
		return false
	}
	if n&needCond == 0 {
		return true
	}
	ok, _ := r.cond(e.req, e.cap, &e.vars)
	return ok
}

func (r *rule) cond(req *Request, c *capability.Capability, vars **celVars) (bool, error) {
	if r.when == nil {
		return true, nil
	}
	if *vars == nil {
		*vars = newCELVars(req)
	}
	(*vars).setCap(c)
	var ok bool
	var err error
	if c != nil && c.Subtree {
		// The capability stands for its kind on every path under its
		// own: the condition must hold whatever the path is.
		ok, err = r.when.evalSubtree(*vars)
	} else {
		ok, err = r.when.eval(*vars)
	}
	if err != nil {
		return r.effect != Allow, err
	}
	return ok, nil
}
