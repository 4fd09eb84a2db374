package policy

import (
	"path"
	"slices"
	"strings"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// index narrows the rules Decide evaluates for a call to those that can
// match it. It only prunes: every candidate is matched in full, so a rule
// listed twice, or a candidate that does not match, changes nothing.
type index struct {
	actionByTool   keyMap // action rules whose tool list is all literal names
	actionByServer keyMap // the others whose server list is all literal names
	actionOther    []cand // the rest
	kinds          [capability.NetLink + 1]kindIndex
	// memo holds the action candidates of recent (server, tool) pairs,
	// found from the three lists above.
	memo *actionMemo
}

// cand is a candidate rule with what rejects most candidates without
// reading the rule: the call bits it accepts (rule.mask), its signatures
// and the lanes they use, and, for host rules, its classes and whether it
// has networks.
type cand struct {
	r        *rule
	sig      uint64 // ruleSig
	sigLanes uint64 // nonzero16(sig)
	capSig   uint64 // ruleCapSig
	capLanes uint64 // nonzero32(capSig)
	prec     uint64 // rule.prec
	mask     uint32
	classes  capability.Class
	prefixes bool
	shadow   bool
	// need are the checks left to do where the candidate is listed
	// (rule.residue); none for most.
	need need
}

// candOf returns the candidate for r in a list of the index for
// capabilities of kind k (any kind for an action rule) whose candidates
// the index found by the matchers d.
func candOf(r *rule, k capability.Kind, d done) cand {
	sig, capSig := ruleSig(r), ruleCapSig(r)
	return cand{r: r, sig: sig, sigLanes: nonzero16(sig), capSig: capSig, capLanes: nonzero32(capSig),
		prec: r.prec, mask: r.mask, classes: r.hosts.classes, prefixes: len(r.hosts.prefixes) > 0, shadow: r.shadow,
		need: r.residue(k, d)}
}

// pass reports whether the candidate survives the checks that need not
// read the rule: its call bits and call signature fit (sigOK), and it
// could change the tally. It is small enough to inline.
func (c *cand) pass(e *evaluator) bool {
	return e.bits&^c.mask == 0 && nonzero16(c.sig&e.sig) == c.sigLanes && e.t.useful(c.prec, c.shadow)
}

// passCap reports whether the candidate's capability signature fits
// (sigOK's test on the two 32-bit capability lanes). Only net.connect capabilities have one: every other kind,
// and the action, pass, so only the net.connect lists check it.
func (c *cand) passCap(e *evaluator) bool {
	return nonzero32(c.capSig&e.capSig) == c.capLanes
}

// done says which matchers of a candidate the index has checked already,
// by finding it under the call's or capability's own value.
type done uint8

const (
	doneServer  done = 1 << iota // found under the call's server: its server list is literal names
	doneTool                     // likewise for the tool
	donePath                     // found under a directory the path is under
	doneHost                     // found under the exact host
	doneProgram                  // found under the exact program, and its programs are literal
)

// kindIndex holds the capability rules of one kind.
type kindIndex struct {
	// generic are the rules with no matcher this index can look up: no
	// path_under, host, program or id_kind.
	generic []cand

	paths pathIndex // fs: rules by path_under

	hostExact  keyMap // net: rules by exact host
	hostSuffix keyMap // net: rules by *.suffix, keyed by suffix
	suffixLens []int  // net: the lengths of hostSuffix's keys, in order, without repeats
	hostOther  []cand // net: rules with a CIDR or class pattern
	// otherClasses are the classes of the rules of hostOther, and
	// otherPrefixes is set if one has a network: a host of none of those
	// classes that is no address meets none of them.
	otherClasses  capability.Class
	otherPrefixes bool

	programExact keyMap // exec: rules by literal program
	programGlob  []cand // exec: rules with a program glob (and under their literal ones in programExact)
	globPrec     uint64 // exec: the highest precedence in programGlob
	shell        []cand // exec: rules with shell: true and a program matcher

	idKind keyMap // id: rules by id_kind

	// foldPaths holds the rules of paths by the fold keys of their
	// directories, for a case-insensitive volume (Request.FoldCase): a
	// deny is found under the key of a directory the path is under; a
	// grant is listed there too, but left to check that the path is
	// under the directory in ASCII case only (rule.pathOK). It is last,
	// and apart, so that the lists every call reads stay as close as
	// they were.
	foldPaths *pathIndex
}

func buildIndex(rules []*rule) index {
	idx := index{memo: new(actionMemo)}
	for _, r := range rules {
		if r.kinds == 0 {
			idx.addAction(r)
			continue
		}
		for k := capability.FSRead; k <= capability.NetLink; k++ {
			if r.kinds.has(k) {
				idx.kinds[k].add(k, r)
			}
		}
	}
	for _, k := range []capability.Kind{capability.FSRead, capability.FSWrite} {
		idx.kinds[k].paths.finish()
		if f := idx.kinds[k].foldPaths; f != nil {
			f.finish()
		}
	}
	return idx
}

func (idx *index) addAction(r *rule) {
	switch {
	case allLiteral(r.tools):
		for _, g := range r.tools {
			idx.actionByTool.add(g.literal, r, 0, doneTool)
		}
	case allLiteral(r.servers):
		for _, g := range r.servers {
			idx.actionByServer.add(g.literal, r, 0, doneServer)
		}
	default:
		idx.actionOther = append(idx.actionOther, candOf(r, 0, 0))
	}
}

// allLiteral reports whether gs is a non-empty list of literal names.
func allLiteral(gs globs) bool {
	for _, g := range gs {
		if g.wild {
			return false
		}
	}
	return len(gs) > 0
}

func (ki *kindIndex) add(k capability.Kind, r *rule) {
	switch k {
	case capability.FSRead, capability.FSWrite:
		if r.paths == nil {
			break
		}
		for _, p := range r.paths {
			ki.paths.add(p, r, k, donePath)
		}
		d := donePath
		if r.grants() {
			d = 0
		}
		if ki.foldPaths == nil {
			ki.foldPaths = &pathIndex{fold: true}
		}
		for _, p := range r.foldPaths {
			ki.foldPaths.add(p, r, k, d)
		}
		return
	case capability.NetConnect, capability.NetLink:
		if !r.hasHosts {
			break
		}
		for _, h := range r.hosts.exact {
			ki.hostExact.add(h, r, k, doneHost)
		}
		for _, s := range r.hosts.suffixes {
			ki.hostSuffix.add(s, r, k, 0)
			if i, found := slices.BinarySearch(ki.suffixLens, len(s)); !found {
				ki.suffixLens = slices.Insert(ki.suffixLens, i, len(s))
			}
		}
		if len(r.hosts.prefixes) > 0 || r.hosts.classes != 0 {
			ki.hostOther = append(ki.hostOther, candOf(r, k, 0))
			ki.otherClasses |= r.hosts.classes
			ki.otherPrefixes = ki.otherPrefixes || len(r.hosts.prefixes) > 0
		}
		return
	case capability.Exec:
		if r.programs == nil {
			break // generic, shell: true or not
		}
		// Literal programs are looked up; a rule with a glob among them
		// is also a candidate for every program.
		glob := false
		for _, g := range r.programs {
			if g.wild {
				glob = true
			} else {
				ki.programExact.add(g.literal, r, k, doneProgram)
			}
		}
		if glob {
			ki.programGlob = append(ki.programGlob, candOf(r, k, 0))
			ki.globPrec = max(ki.globPrec, r.prec)
		}
		if r.shell {
			ki.shell = append(ki.shell, candOf(r, k, 0))
		}
		return
	case capability.ID:
		if r.idKinds == nil {
			break
		}
		for _, id := range r.idKinds {
			ki.idKind.add(id, r, k, 0)
		}
		return
	}
	ki.generic = append(ki.generic, candOf(r, k, 0))
}

// keyMap maps names to candidates. A filter of its keys' lengths and first
// and last bytes makes most lookups of an absent key cost no hashing.
type keyMap struct {
	filter [16]uint64 // bit keyBit of each key
	keys   strTable
	vals   [][]cand // by the keys' values in keys
}

// keyBit summarises a key for keyMap's filter.
func keyBit(s string) uint {
	if s == "" {
		return 0
	}
	return uint(len(s)*131+int(s[0])*7+int(s[len(s)-1])) & 1023
}

// add lists r under key, as a candidate for candOf(r, kind, d).
func (k *keyMap) add(key string, r *rule, kind capability.Kind, d done) {
	b := keyBit(key)
	k.filter[b/64] |= 1 << (b % 64)
	i := k.keys.put(key)
	if i == len(k.vals) {
		k.vals = append(k.vals, nil)
	}
	k.vals[i] = appendOnce(k.vals[i], r, kind, d)
}

// get returns the candidates listed under key: strTable.get, written out
// after the filter, so that a lookup is one call.
func (k *keyMap) get(key string) []cand {
	if b := keyBit(key); k.filter[b/64]&(1<<(b%64)) == 0 {
		return nil
	}
	t := &k.keys
	var a, b uint64
	switch n := len(key); {
	case n >= 8:
		a, b = load64(key), load64(key[n-8:])
	case n >= 4:
		a, b = uint64(load32(key)), uint64(load32(key[n-4:]))
	case n > 0:
		a = uint64(key[0])<<16 | uint64(key[n>>1])<<8 | uint64(key[n-1])
	}
	for j := strHash(a, b, len(key)) & t.mask; ; j = (j + 1) & t.mask {
		s := &t.slots[j]
		if s.val == 0 {
			return nil
		}
		if s.a == a && s.b == b && len(s.key) == len(key) && (len(key) <= 16 || sameLong(s.key, key)) {
			return k.vals[s.val-1]
		}
	}
}

// appendOnce appends candOf(r, k, d) unless r is already last: a rule
// listing a key twice is indexed once under it.
func appendOnce(cs []cand, r *rule, k capability.Kind, d done) []cand {
	if len(cs) > 0 && cs[len(cs)-1].r == r {
		return cs
	}
	return append(cs, candOf(r, k, d))
}

// tally combines the rules that match one target (the action or one
// capability): the deciding rule, enforced and with shadow rules enforced.
// A rule's precedence is one number (rule.prec), so that comparing two is
// one comparison: the stricter effect wins, then the earlier rule.
type tally struct {
	rule      *rule // nil: nothing enforced matched, default deny
	would     *rule // the same with shadow rules counted
	prec      uint64
	wouldPrec uint64
}

// precedence returns the number a rule is ranked by in a tally; it is
// never zero, the precedence of an empty tally.
func precedence(effect Effect, index int32) uint64 {
	return uint64(effect.rank()+1)<<32 | uint64(^uint32(index))
}

// useful reports whether matching a rule of precedence prec could change
// the tally: if not, Decide skips it (and its condition).
func (t *tally) useful(prec uint64, shadow bool) bool {
	return prec > t.wouldPrec || !shadow && prec > t.prec
}

func (t *tally) add(r *rule) {
	if !r.shadow && r.prec > t.prec {
		t.rule, t.prec = r, r.prec
	}
	if r.prec > t.wouldPrec {
		t.would, t.wouldPrec = r, r.prec
	}
}

// evaluator runs candidates through the full matcher into a tally.
type evaluator struct {
	req    *Request
	bits   uint32 // callBits(req)
	sig    uint64 // requestSig(req)
	capSig uint64 // capSig(cap)
	cap    *capability.Capability
	path   pathForms // of an fs cap
	vars   *celVars
	t      tally

	// roles are the keys of the call's roles (nRoles of them), set when
	// a candidate first needs them (rolesSet) unless the call has more
	// roles than they hold.
	roles    [4]nameKey
	nRoles   int
	rolesSet bool
}

// hasRole reports whether the call has the one role of r (rule.role).
func (e *evaluator) hasRole(r *rule) bool {
	if !e.rolesSet {
		return e.hasRoleFirst(r)
	}
	for _, k := range e.roles[:e.nRoles] {
		if k == r.role {
			return true
		}
	}
	return false
}

// hasRoleFirst is hasRole before the call's roles are set: it sets them,
// or, for a call of more roles than they hold, compares the names.
func (e *evaluator) hasRoleFirst(r *rule) bool {
	if len(e.req.Roles) > len(e.roles) {
		return anyRole(r.roles, e.req.Roles)
	}
	for _, role := range e.req.Roles {
		var k nameKey // keyOf(role), written out
		switch n := len(role); {
		case n > 16:
			continue // no rule's one role
		case n >= 8:
			k = nameKey{load64(role), load64(role[n-8:]), n}
		case n >= 4:
			k = nameKey{uint64(load32(role)), uint64(load32(role[n-4:])), n}
		case n > 0:
			k = nameKey{uint64(role[0])<<16 | uint64(role[n>>1])<<8 | uint64(role[n-1]), 0, n}
		}
		e.roles[e.nRoles] = k
		e.nRoles++
	}
	e.rolesSet = true
	for _, k := range e.roles[:e.nRoles] {
		if k == r.role {
			return true
		}
	}
	return false
}

// consider runs the candidates cs, which the index found with the matchers
// d checked; it is small enough to inline, so that the many empty lists of
// a call cost no call.
func (e *evaluator) consider(cs []cand, d done) {
	if len(cs) > 0 {
		e.considerAll(cs, d)
	}
}

// considerAll is consider's loop, for any list but those of net.connect
// (considerNet).
func (e *evaluator) considerAll(cs []cand, d done) {
	for i := range cs {
		c := &cs[i]
		if !c.pass(e) {
			continue
		}
		switch c.need {
		case 0:
		case needRole: // hasRole, written out
			if !e.rolesSet {
				if !e.hasRoleFirst(c.r) {
					continue
				}
				break
			}
			i := 0
			for i < e.nRoles && e.roles[i] != c.r.role {
				i++
			}
			if i == e.nRoles {
				continue
			}
		default:
			if !e.matchRest(c, d) {
				continue
			}
		}
		e.t.add(c.r)
	}
}

// considerFull is considerAll for candidates found where the index did
// not look them up (exec rules under a program's base name): it checks
// their capability matchers whatever their need says.
func (e *evaluator) considerFull(cs []cand) {
	for i := range cs {
		if c := &cs[i]; c.pass(e) && e.matchNeeded(c, 0, c.need|needCap) {
			e.t.add(c.r)
		}
	}
}

// considerNet is consider for the lists of net.connect rules, whose
// candidates have capability signatures.
func (e *evaluator) considerNet(cs []cand, d done) {
	for i := range cs {
		c := &cs[i]
		if !c.pass(e) || !c.passCap(e) {
			continue
		}
		switch c.need {
		case 0:
		case needPort, needScheme, needPort | needScheme:
			if c.need&needPort != 0 && !c.r.portOK(e.cap) || c.need&needScheme != 0 && !c.r.schemeOK(e.cap) {
				continue
			}
		default:
			if !e.matchRest(c, d) {
				continue
			}
		}
		e.t.add(c.r)
	}
}

// considerHosts is consider for rules with networks or classes: a rule
// whose classes the host lacks, and that has no network or meets a name,
// cannot match by them.
func (e *evaluator) considerHosts(cs []cand) {
	if len(cs) > 0 {
		e.considerAllHosts(cs)
	}
}

func (e *evaluator) considerAllHosts(cs []cand) {
	classes, addr := e.cap.Classes, e.cap.Addr.IsValid()
	for i := range cs {
		// A rule here that matches by exact name or suffix is also in
		// hostExact or hostSuffix.
		c := &cs[i]
		if c.classes&classes == 0 && !(c.prefixes && addr) {
			continue
		}
		if c.pass(e) && c.passCap(e) && (c.need == 0 || e.matchRest(c, 0)) {
			e.t.add(c.r)
		}
	}
}

// action tallies the action rules for the call.
func (idx *index) action(e *evaluator) {
	e.cap = nil
	e.consider(idx.memo.candidates(idx, e.req.Server, e.req.Tool), doneServer|doneTool)
}

// capability tallies the capability rules for e.cap, and reports whether
// e.cap is valid (validCap); the tally of an invalid one means nothing.
func (idx *index) capability(e *evaluator) bool {
	c := e.cap
	switch c.Kind {
	case capability.FSRead, capability.FSWrite:
		ki := &idx.kinds[c.Kind]
		paths := &ki.paths
		if p := c.Path; !e.req.FoldCase {
			// The walk finds whether p is ASCII, and if not walks its
			// forms.
			e.path = pathForms{nfc: p, key: p}
		} else {
			var ok bool
			if e.path, ok = formsOf(p, e.req.FoldCase); !ok {
				return false
			}
			if e.path.fold {
				if paths = ki.foldPaths; paths == nil {
					paths = &pathIndex{fold: true} // no rule has a path: an empty index checks the path
				}
			}
		}
		if !paths.walk(e) {
			return false
		}
		e.consider(ki.generic, 0)
		if c.Subtree {
			// The index walked, in the forms it walked the path by.
			paths.under(e)
		}
	case capability.NetConnect, capability.NetLink:
		if c.Host == "" {
			return false
		}
		e.capSig = capSig(c)
		ki := &idx.kinds[c.Kind]
		if len(ki.generic) > 0 {
			e.considerNet(ki.generic, 0)
		}
		if ki.otherClasses&c.Classes != 0 || ki.otherPrefixes && c.Addr.IsValid() {
			e.considerHosts(ki.hostOther)
		}
		if cs := ki.hostExact.get(c.Host); len(cs) > 0 {
			e.considerNet(cs, doneHost)
		}
		if c.Addr.IsValid() {
			break
		}
		// The suffixes to look up follow a dot of the host; only those
		// of a key's length can be keys.
		h := c.Host
		for _, n := range ki.suffixLens {
			if n >= len(h) {
				break
			}
			if h[len(h)-n-1] == '.' {
				if cs := ki.hostSuffix.get(h[len(h)-n:]); len(cs) > 0 {
					e.considerNet(cs, 0)
				}
			}
		}
	case capability.Exec:
		ki := &idx.kinds[capability.Exec]
		if c.Shell {
			e.consider(ki.generic, 0)
			e.consider(ki.shell, 0)
			break
		}
		if c.Program == "" {
			return false
		}
		e.consider(ki.generic, 0)
		// A rule found under the program is not considered again among
		// the globs: it could not change the tally (tally.useful), and
		// when no glob rule could, they are skipped.
		e.consider(ki.programExact.get(c.Program), doneProgram)
		if e.t.useful(ki.globPrec, false) {
			e.consider(ki.programGlob, 0)
		}
		if strings.IndexByte(c.Program, '/') >= 0 {
			if base := path.Base(c.Program); base != c.Program {
				if cs := ki.programExact.get(base); len(cs) > 0 {
					e.considerFull(cs)
				}
			}
		}
	case capability.ID:
		ki := &idx.kinds[capability.ID]
		e.consider(ki.generic, 0)
		e.consider(ki.idKind.get(c.IDKind), 0)
	default:
		return false
	}
	return true
}
