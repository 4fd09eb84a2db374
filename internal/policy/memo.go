package policy

import (
	"strings"
	"sync/atomic"
)

// actionMemo remembers, for the (server, tool) pairs of recent calls, the
// action rules whose server and tool matchers match the pair, so that
// Decide matches tool globs and looks names up once per pair rather than
// once per call. It is a table of immutable entries, each stored whole in
// a slot: lookups take no lock and never allocate; a miss builds the entry
// from the index (and allocates). A pair's entry is in one of memoProbe
// slots from its hash on: a miss takes the first empty one, or, when all
// are full, replaces the first, so that pairs whose hashes collide do not
// evict each other until memoProbe of them meet. A slot, once full, is
// never emptied, so a lookup ends at an empty slot. A call's server and
// tool come from the tools its servers offer, so the pairs are few and
// recur. An entry is exact: it is used only for the very server and tool
// it was built for.
type actionMemo struct {
	slots [memoSlots]atomic.Pointer[actionEntry]
}

// memoSlots is the number of entries an actionMemo holds, a power of two;
// a pair's entry is in one of memoProbe slots.
const (
	memoSlots = 256
	memoProbe = 8
)

// actionEntry is the memo's answer for one (server, tool) pair: the action
// candidates whose server and tool matchers match it, as candidates found
// by both (doneServer | doneTool). The words of the names (strWords) let a
// lookup compare names of up to 16 bytes without a call.
type actionEntry struct {
	server, tool string
	sa, sb       uint64 // strWords(server)
	ta, tb       uint64 // strWords(tool)
	cands        []cand
}

// candidates returns the action candidates for the pair (server, tool),
// building and remembering them on a miss.
func (m *actionMemo) candidates(idx *index, server, tool string) []cand {
	var sa, sb, ta, tb uint64 // strWords, written out
	switch n := len(server); {
	case n >= 8:
		sa, sb = load64(server), load64(server[n-8:])
	case n >= 4:
		sa, sb = uint64(load32(server)), uint64(load32(server[n-4:]))
	case n > 0:
		sa = uint64(server[0])<<16 | uint64(server[n>>1])<<8 | uint64(server[n-1])
	}
	switch n := len(tool); {
	case n >= 8:
		ta, tb = load64(tool), load64(tool[n-8:])
	case n >= 4:
		ta, tb = uint64(load32(tool)), uint64(load32(tool[n-4:]))
	case n > 0:
		ta = uint64(tool[0])<<16 | uint64(tool[n>>1])<<8 | uint64(tool[n-1])
	}
	h := mix(sa^ta*0x9e3779b97f4a7c15^uint64(len(server))<<56, sb^tb^uint64(len(tool))<<48^0xe7037ed1a0b428db)
	e := m.slots[h&(memoSlots-1)].Load()
	if e != nil && e.is(server, tool, sa, sb, ta, tb) {
		return e.cands // the pair's first slot: most lookups
	}
	for i := uint64(1); e != nil && i < memoProbe; i++ {
		e = m.slots[(h+i)&(memoSlots-1)].Load()
		if e != nil && e.is(server, tool, sa, sb, ta, tb) {
			return e.cands
		}
	}
	return m.add(h, &actionEntry{server: strings.Clone(server), tool: strings.Clone(tool), sa: sa, sb: sb, ta: ta, tb: tb,
		cands: idx.actionCandidates(server, tool)})
}

// is reports whether e is the entry of (server, tool), whose words are sa,
// sb, ta and tb.
func (e *actionEntry) is(server, tool string, sa, sb, ta, tb uint64) bool {
	return e.sa == sa && e.sb == sb && e.ta == ta && e.tb == tb &&
		len(e.server) == len(server) && len(e.tool) == len(tool) &&
		(len(server) <= 16 || e.server == server) && (len(tool) <= 16 || e.tool == tool)
}

// add stores e, whose pair hashes to h, in the first empty slot of its
// memoProbe, or else in the first, and returns its candidates. Two calls
// adding one pair at once may store it twice, which only takes a slot.
func (m *actionMemo) add(h uint64, e *actionEntry) []cand {
	for i := range uint64(memoProbe) {
		if m.slots[(h+i)&(memoSlots-1)].CompareAndSwap(nil, e) {
			return e.cands
		}
	}
	m.slots[h&(memoSlots-1)].Store(e)
	return e.cands
}

// actionCandidates returns the action rules whose server and tool matchers
// match (server, tool), from the lists that index the action rules by
// those names, as candidates whose server and tool are checked.
func (idx *index) actionCandidates(server, tool string) []cand {
	var out []cand
	add := func(cs []cand) {
	next:
		for i := range cs {
			r := cs[i].r
			if !r.servers.match(server) || !r.tools.match(tool) {
				continue
			}
			for j := range out {
				if out[j].r == r {
					continue next
				}
			}
			out = append(out, candOf(r, 0, doneServer|doneTool))
		}
	}
	add(idx.actionByTool.get(tool))
	add(idx.actionByServer.get(server))
	add(idx.actionOther)
	return out
}
