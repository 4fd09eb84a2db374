package session

import (
	"fmt"
	"strings"
	"time"

	"github.com/aegis-mcp/aegis/internal/args"
)

// IDs appends to dst the ids that p selects under root, in document order: a string's
// text, a number's source text as written (so 42 and 42.0 are different ids), and ""
// for any other value. The gateway uses it on both sides, on a tool's result for [Store.Record] and on
// a call's arguments for [Store.Check], so that both read an id the same way; an
// object or a boolean where an id was expected becomes a blank id, which Record skips
// and Check refuses.
func IDs(dst []string, p args.Pointer, root args.Value) []string {
	p.Select(root, func(v args.Value, _ args.Loc) {
		switch v.Kind() {
		case args.String:
			dst = append(dst, v.Str())
		case args.Number:
			dst = append(dst, v.Raw())
		default:
			dst = append(dst, "")
		}
	})
	return dst
}

// Record remembers ids as ids of the given kind that the server returned in session
// id: the gateway calls it with what [IDs] selects from a real tool result, never with
// text the model wrote. Each id is trimmed of surrounding white space (as
// strings.TrimSpace does); a blank one, or one longer than Options.MaxIDBytes, is not
// recorded. Recording an id again renews it. Past Options.MaxIDs the least recently
// recorded id of the kind is forgotten; past Options.MaxKinds a new kind is not
// recorded at all. Recording into a session the store does not hold starts it in the
// tainted state of a forgotten session.
func (s *Store) Record(id, kind string, ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	st := s.ensure(id, now)
	set := st.ids[kind]
	if set == nil {
		if len(st.ids) >= s.opt.MaxKinds {
			return
		}
		if st.ids == nil {
			st.ids = make(map[string]*idSet)
		}
		set = &idSet{head: -1, tail: -1}
		st.ids[strings.Clone(kind)] = set
	}
	for _, x := range ids {
		x = strings.TrimSpace(x)
		if x != "" && len(x) <= s.opt.MaxIDBytes {
			set.add(x, now, s.opt.MaxIDs)
		}
	}
}

// Check reports whether every candidate is among the ids of the given kind that
// session id recorded in the last Options.IDTTL, and if not, why. It fails closed: an
// empty list, a blank candidate, or a single non-member fails the whole call, and so
// does a session the store does not hold.
//
// Candidates are compared exactly after trimming surrounding white space (Unicode
// White_Space, as strings.TrimSpace): no case folding and no Unicode normalisation, so
// "MSG-1" is not "msg-1" and a decomposed "é" is not a precomposed one. Characters
// that are not White_Space, such as a zero width space or a byte-order mark, are not
// trimmed and make the id a non-member. The reason names the candidate by position,
// never by value.
func (s *Store) Check(id, kind string, candidates []string) (ok bool, reason string) {
	if len(candidates) == 0 {
		return false, "no candidate id of kind " + kind
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	st := s.lookup(id, now)
	if st == nil {
		return false, "session unknown or expired: it has no ids"
	}
	set := st.ids[kind]
	for i, c := range candidates {
		c = strings.TrimSpace(c)
		if c == "" {
			return false, fmt.Sprintf("candidate %d of kind %s is blank", i, kind)
		}
		if set == nil || !set.has(c, now, s.opt.IDTTL) {
			return false, fmt.Sprintf("candidate %d is not among the session's recent ids of kind %s", i, kind)
		}
	}
	return true, ""
}

// idSet is the recent ids of one kind in one session: a map for membership and a
// doubly linked list, threaded through nodes by index, in the order they were last
// recorded. Its nodes grow to the limit and are then reused from the tail, the least
// recently recorded; an expired id stays until its node is reused, but is no member.
type idSet struct {
	index      map[string]int32
	nodes      []idNode
	head, tail int32 // most and least recently recorded; -1 when empty
}

type idNode struct {
	id         string
	at         time.Duration // when last recorded, as an offset from the store's epoch
	prev, next int32
}

func (s *idSet) has(id string, now, ttl time.Duration) bool {
	i, ok := s.index[id]
	return ok && now-s.nodes[i].at < ttl
}

func (s *idSet) add(id string, now time.Duration, max int) {
	if i, ok := s.index[id]; ok {
		s.nodes[i].at = now
		s.unlink(i)
		s.pushFront(i)
		return
	}
	var i int32
	if len(s.nodes) < max {
		s.nodes = append(s.nodes, idNode{})
		i = int32(len(s.nodes) - 1)
	} else {
		i = s.tail
		s.unlink(i)
		delete(s.index, s.nodes[i].id)
	}
	if s.index == nil {
		s.index = make(map[string]int32)
	}
	s.nodes[i] = idNode{id: strings.Clone(id), at: now}
	s.index[s.nodes[i].id] = i
	s.pushFront(i)
}

func (s *idSet) pushFront(i int32) {
	n := &s.nodes[i]
	n.prev, n.next = -1, s.head
	if s.head >= 0 {
		s.nodes[s.head].prev = i
	} else {
		s.tail = i
	}
	s.head = i
}

func (s *idSet) unlink(i int32) {
	n := &s.nodes[i]
	if n.prev >= 0 {
		s.nodes[n.prev].next = n.next
	} else {
		s.head = n.next
	}
	if n.next >= 0 {
		s.nodes[n.next].prev = n.prev
	} else {
		s.tail = n.prev
	}
	n.prev, n.next = -1, -1
}
