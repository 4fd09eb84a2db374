package policy

import (
	"path"
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
	kinds          [capability.ID + 1]kindIndex
}

// cand is a candidate rule with what rejects most candidates without
// reading the rule: the call bits it accepts (rule.mask) and, for host
// rules, its classes and whether it has networks.
type cand struct {
	r        *rule
	sig      uint64 // ruleSig
	capSig   uint64 // ruleCapSig
	prec     uint64 // rule.prec
	mask     uint32
	classes  capability.Class
	prefixes bool
	shadow   bool
}

func candOf(r *rule) cand {
	return cand{r: r, sig: ruleSig(r), capSig: ruleCapSig(r), prec: r.prec, mask: r.mask,
		classes: r.hosts.classes, prefixes: len(r.hosts.prefixes) > 0, shadow: r.shadow}
}

// pass reports whether the candidate survives the checks that need not
// read the rule: it could change the tally, and its call bits and
// signatures fit.
func (c *cand) pass(e *evaluator) bool {
	return e.t.useful(c.prec, c.shadow) && e.bits&^c.mask == 0 && sigOK(c.sig, e.sig) && capSigOK(c.capSig, e.capSig)
}

// kindIndex holds the capability rules of one kind.
type kindIndex struct {
	// generic are the rules with no matcher this index can look up: no
	// path_under, host, program or id_kind.
	generic []cand

	paths *pathNode    // fs: rules by path_under, a trie of path components
	trie  *trieBuilder // paths while the index is built

	hostExact  keyMap // net: rules by exact host
	hostSuffix keyMap // net: rules by *.suffix, keyed by suffix
	hostOther  []cand // net: rules with a CIDR or class pattern

	programExact keyMap // exec: rules by literal program
	programGlob  []cand // exec: rules with a program glob
	shell        []cand // exec: rules with shell: true and a program matcher

	idKind keyMap // id: rules by id_kind
}

// pathNode is a node of the path trie: the rules whose path_under is the
// path from the root to it, and its children. The trie is compressed: an
// edge label is one or more path components ("srv/projects"), so a walk
// takes one step per directory that has rules or branches. A node with few
// children scans their labels; one with many looks up the first component.
type pathNode struct {
	rules  []cand
	labels []string
	kids   []*pathNode
	many   map[string]int // first component of a label → its index
}

const maxListed = 8

// find returns the index of the child whose label is a prefix of rest, by
// whole components, or -1.
func (n *pathNode) find(rest string) int {
	if n.many != nil {
		comp := rest
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			comp = rest[:j]
		}
		if i, ok := n.many[comp]; ok && componentPrefix(rest, n.labels[i]) {
			return i
		}
		return -1
	}
	for i, l := range n.labels {
		if componentPrefix(rest, l) {
			return i
		}
	}
	return -1
}

// componentPrefix reports whether label is rest or a leading run of its
// components.
func componentPrefix(rest, label string) bool {
	return len(rest) >= len(label) && rest[0] == label[0] && rest[:len(label)] == label && (len(rest) == len(label) || rest[len(label)] == '/')
}

// trieBuilder is an uncompressed trie, built rule by rule.
type trieBuilder struct {
	rules    []*rule
	names    []string // children in insertion order
	children map[string]*trieBuilder
}

func (b *trieBuilder) insert(dir string, r *rule) {
	for _, comp := range strings.Split(dir, "/") {
		if comp == "" {
			continue
		}
		child := b.children[comp]
		if child == nil {
			if b.children == nil {
				b.children = map[string]*trieBuilder{}
			}
			child = &trieBuilder{}
			b.children[comp] = child
			b.names = append(b.names, comp)
		}
		b = child
	}
	if len(b.rules) == 0 || b.rules[len(b.rules)-1] != r {
		b.rules = append(b.rules, r)
	}
}

// compile returns the compressed trie.
func (b *trieBuilder) compile() *pathNode {
	n := &pathNode{}
	for _, r := range b.rules {
		n.rules = append(n.rules, candOf(r))
	}
	for _, name := range b.names {
		label, c := name, b.children[name]
		for len(c.rules) == 0 && len(c.names) == 1 {
			label += "/" + c.names[0]
			c = c.children[c.names[0]]
		}
		n.labels = append(n.labels, label)
		n.kids = append(n.kids, c.compile())
	}
	if len(n.labels) > maxListed {
		n.many = make(map[string]int, len(n.labels))
		for i, l := range n.labels {
			first, _, _ := strings.Cut(l, "/")
			n.many[first] = i
		}
	}
	return n
}

func buildIndex(rules []*rule) index {
	var idx index
	for _, r := range rules {
		if r.kinds == 0 {
			idx.addAction(r)
			continue
		}
		for k := capability.FSRead; k <= capability.ID; k++ {
			if r.kinds.has(k) {
				idx.kinds[k].add(k, r)
			}
		}
	}
	for k := range idx.kinds {
		if ki := &idx.kinds[k]; ki.trie != nil {
			ki.paths, ki.trie = ki.trie.compile(), nil
		}
	}
	return idx
}

func (idx *index) addAction(r *rule) {
	switch {
	case allLiteral(r.tools):
		for _, g := range r.tools {
			idx.actionByTool.add(g.literal, r)
		}
	case allLiteral(r.servers):
		for _, g := range r.servers {
			idx.actionByServer.add(g.literal, r)
		}
	default:
		idx.actionOther = append(idx.actionOther, candOf(r))
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
		if ki.trie == nil {
			ki.trie = &trieBuilder{}
		}
		for _, p := range r.paths {
			ki.trie.insert(p, r)
		}
		return
	case capability.NetConnect:
		if !r.hasHosts {
			break
		}
		for _, h := range r.hosts.exact {
			ki.hostExact.add(h, r)
		}
		for _, s := range r.hosts.suffixes {
			ki.hostSuffix.add(s, r)
		}
		if len(r.hosts.prefixes) > 0 || r.hosts.classes != 0 {
			ki.hostOther = append(ki.hostOther, candOf(r))
		}
		return
	case capability.Exec:
		if r.programs == nil {
			break // generic, shell: true or not
		}
		glob := false
		for _, g := range r.programs {
			if g.wild {
				glob = true
			}
		}
		if glob {
			ki.programGlob = append(ki.programGlob, candOf(r))
		} else {
			for _, g := range r.programs {
				ki.programExact.add(g.literal, r)
			}
		}
		if r.shell {
			ki.shell = append(ki.shell, candOf(r))
		}
		return
	case capability.ID:
		if r.idKinds == nil {
			break
		}
		for _, id := range r.idKinds {
			ki.idKind.add(id, r)
		}
		return
	}
	ki.generic = append(ki.generic, candOf(r))
}

// keyMap maps names to candidates. It remembers the lengths of its keys, so
// that most lookups of an absent key cost no hashing.
type keyMap struct {
	lens uint64 // bit n: a key of length n; bit 63: a key of 63 bytes or more
	m    map[string][]cand
}

func lenBit(n int) uint64 { return 1 << min(n, 63) }

func (k *keyMap) add(key string, r *rule) {
	if k.m == nil {
		k.m = map[string][]cand{}
	}
	k.lens |= lenBit(len(key))
	k.m[key] = appendOnce(k.m[key], r)
}

func (k *keyMap) get(key string) []cand {
	if k.lens&lenBit(len(key)) == 0 {
		return nil
	}
	return k.m[key]
}

func (k *keyMap) empty() bool { return k.m == nil }

// appendOnce appends r unless it is already last: a rule listing a key
// twice is indexed once under it.
func appendOnce(cs []cand, r *rule) []cand {
	if len(cs) > 0 && cs[len(cs)-1].r == r {
		return cs
	}
	return append(cs, candOf(r))
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
	vars   *celVars
	t      tally
}

// consider runs the candidates cs; it is small enough to inline, so that
// the many empty lists of a call cost no call.
func (e *evaluator) consider(cs []cand) {
	if len(cs) > 0 {
		e.considerAll(cs)
	}
}

func (e *evaluator) considerAll(cs []cand) {
	for i := range cs {
		if !cs[i].pass(e) {
			continue
		}
		if r := cs[i].r; r.matchIndexed(e, false) {
			e.t.add(r)
		}
	}
}

// considerUnder is consider for rules found in the path trie on the way to
// e.cap.Path: their path_under holds.
func (e *evaluator) considerUnder(cs []cand) {
	for i := range cs {
		if !cs[i].pass(e) {
			continue
		}
		if r := cs[i].r; r.matchIndexed(e, true) {
			e.t.add(r)
		}
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
	c := e.cap
	for i := range cs {
		// A rule here that matches by exact name or suffix is also in
		// hostExact or hostSuffix.
		if cs[i].classes&c.Classes == 0 && !(cs[i].prefixes && c.Addr.IsValid()) || !cs[i].pass(e) {
			continue
		}
		if r := cs[i].r; r.matchIndexed(e, false) {
			e.t.add(r)
		}
	}
}

// action tallies the action rules for the call.
func (idx *index) action(e *evaluator) {
	e.cap, e.capSig = nil, ^uint64(0)
	e.consider(idx.actionByTool.get(e.req.Tool))
	e.consider(idx.actionByServer.get(e.req.Server))
	e.consider(idx.actionOther)
}

// capability tallies the capability rules for e.cap, and reports whether
// e.cap is valid (validCap); the tally of an invalid one means nothing.
func (idx *index) capability(e *evaluator) bool {
	c := e.cap
	e.capSig = capSig(c)
	if c.Kind == capability.FSRead || c.Kind == capability.FSWrite {
		ki := &idx.kinds[c.Kind]
		if !idx.walkPath(e, ki.paths) {
			return false
		}
		e.consider(ki.generic)
		return true
	}
	if !validCap(c) {
		return false
	}
	ki := &idx.kinds[c.Kind]
	e.consider(ki.generic)
	switch c.Kind {
	case capability.NetConnect:
		e.considerHosts(ki.hostOther)
		e.consider(ki.hostExact.get(c.Host))
		if c.Addr.IsValid() || ki.hostSuffix.empty() {
			break
		}
		for h := c.Host; ; {
			dot := strings.IndexByte(h, '.')
			if dot < 0 {
				break
			}
			h = h[dot+1:]
			e.consider(ki.hostSuffix.get(h))
		}
	case capability.Exec:
		if c.Shell {
			e.consider(ki.shell)
			break
		}
		e.consider(ki.programGlob)
		e.consider(ki.programExact.get(c.Program))
		if base := path.Base(c.Program); base != c.Program {
			e.consider(ki.programExact.get(base))
		}
	case capability.ID:
		e.consider(ki.idKind.get(c.IDKind))
	}
	return true
}

// walkPath considers the rules of the trie nodes on the way to e.cap.Path
// (the root n may be nil), and reports whether the path is canonical.
func (idx *index) walkPath(e *evaluator, n *pathNode) bool {
	p := e.cap.Path
	if !canonicalPath(p) {
		return false
	}
	if n == nil {
		return true
	}
	if len(n.rules) > 0 {
		e.considerUnder(n.rules)
	}
	for rest := p[1:]; rest != "" && len(n.labels) > 0; {
		i := n.find(rest)
		if i < 0 {
			break
		}
		label := n.labels[i]
		if n = n.kids[i]; len(n.rules) > 0 {
			e.considerUnder(n.rules)
		}
		if len(rest) == len(label) {
			break
		}
		rest = rest[len(label)+1:]
	}
	return true
}
