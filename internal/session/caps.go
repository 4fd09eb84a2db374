package session

import (
	"strings"
	"time"
)

// Limits are the caps of one tool (DESIGN.md R18). A zero field means no cap of that
// kind; a negative one allows no call at all, so a configuration error fails closed.
type Limits struct {
	// PerTurn caps the calls in one turn of the session.
	PerTurn int
	// PerMinute caps the calls in any 60 seconds (a sliding window, not a calendar
	// minute). A value above MaxPerMinute acts as MaxPerMinute. The window holds the
	// calls allowed while a per-minute cap was set.
	PerMinute int
	// PerSession caps the calls in the whole session.
	PerSession int
}

// MaxPerMinute is the largest PerMinute honoured: the window keeps the time of each of
// the last PerMinute calls.
const MaxPerMinute = 10_000

// Cap names the cap that refused a call.
type Cap uint8

// The caps, as Take reports them.
const (
	NoCap      Cap = iota // the call was allowed
	PerSession            // Limits.PerSession
	PerTurn               // Limits.PerTurn
	PerMinute             // Limits.PerMinute
	Capacity              // the session already counts Options.MaxTools capped tools
)

// String returns the cap's name as the configuration spells it: "per_turn",
// "per_minute", "per_session"; "capacity" for Capacity and "" for NoCap.
func (c Cap) String() string {
	switch c {
	case PerSession:
		return "per_session"
	case PerTurn:
		return "per_turn"
	case PerMinute:
		return "per_minute"
	case Capacity:
		return "capacity"
	}
	return ""
}

// turnSlots is how many recent turns each tool counts separately. A turn id that comes
// back after this many newer turns of the same tool counts from zero again; the model
// does not choose turn ids, and turns move forward.
const turnSlots = 4

// counter is the count of one capped tool in one session.
type counter struct {
	tool  string           // its key in the session's tools
	total int              // calls in the session
	turns [turnSlots]turnN // the most recent turns first
	calls []time.Duration  // ring of the times of the last n calls, as long as the largest per-minute limit seen
	next  int              // where the next call's time goes in calls
	n     int              // how many times calls holds
}

type turnN struct {
	turn string
	n    int
	used bool
}

// Take counts one call of tool in the given turn of session id, if the call is within
// limits, and reports the cap that refuses it otherwise. A refused call is not counted:
// it consumes none of the budget, so a model that keeps trying is not locked out of the
// next turn or minute by its own refusals. The gateway SHOULD call Take last, once
// every other check has allowed the call, since an allowed Take counts the call
// whether or not it is then forwarded.
//
// When more than one cap refuses, Take names the one that lasts longest: per_session,
// then per_turn, then per_minute. Turns are told apart by their opaque id alone;
// a gateway that knows no turns passes one id, and per_turn then caps the session.
// Limits with no cap allow the call without recording anything. Taking in a session
// the store does not hold starts it in the tainted state of a forgotten session.
func (s *Store) Take(id, turn, tool string, l Limits) (ok bool, c Cap) {
	if l == (Limits{}) {
		return true, NoCap
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	st := s.ensure(id, now)
	k := st.lastCounter
	if k == nil || k.tool != tool {
		k = st.tools[tool]
	}
	if k == nil {
		if len(st.tools) >= s.opt.MaxTools {
			return false, Capacity
		}
		if st.tools == nil {
			st.tools = make(map[string]*counter)
		}
		k = &counter{tool: strings.Clone(tool)}
		st.tools[k.tool] = k
	}
	st.lastCounter = k
	return k.take(turn, now, l)
}

func (k *counter) take(turn string, now time.Duration, l Limits) (bool, Cap) {
	k.toFront(turn)
	switch {
	case over(k.total, l.PerSession):
		return false, PerSession
	case over(k.turns[0].n, l.PerTurn):
		return false, PerTurn
	case l.PerMinute != 0 && !k.minuteAllows(now, l.PerMinute):
		return false, PerMinute
	}
	k.total++
	k.turns[0].n++
	if l.PerMinute > 0 {
		k.record(now)
	}
	return true, NoCap
}

// over reports whether n calls already reach limit.
func over(n, limit int) bool { return limit != 0 && n >= limit }

// toFront moves the count of turn to turns[0]; a new turn takes the slot of the least
// recently seen one, with a count of zero.
func (k *counter) toFront(turn string) {
	i := 0
	for i < turnSlots-1 && !(k.turns[i].used && k.turns[i].turn == turn) {
		i++
	}
	t := k.turns[i]
	if !t.used || t.turn != turn {
		t = turnN{turn: strings.Clone(turn), used: true}
	}
	copy(k.turns[1:i+1], k.turns[:i])
	k.turns[0] = t
}

// minuteAllows reports whether a call at now stays within limit calls in the last
// minute: whether fewer than limit calls are recorded, or the limit-th most recent is
// a minute old or more.
func (k *counter) minuteAllows(now time.Duration, limit int) bool {
	if limit < 0 {
		return false
	}
	limit = min(limit, MaxPerMinute)
	if limit > len(k.calls) {
		k.grow(limit)
	}
	if k.n < limit {
		return true
	}
	i := k.next - limit
	if i < 0 {
		i += len(k.calls)
	}
	return now-k.calls[i] >= time.Minute
}

// record adds now to the ring.
func (k *counter) record(now time.Duration) {
	k.calls[k.next] = now
	k.next = (k.next + 1) % len(k.calls)
	k.n = min(k.n+1, len(k.calls))
}

// grow makes the ring hold limit times. It never shrinks: a lowered limit reads fewer
// of the recorded times, and raising it again finds them all. Nothing in the window is
// lost when it grows: a call is allowed only if fewer than limit calls are in the
// window, so the window never holds more calls than the largest limit seen, which is
// how many times the ring holds.
func (k *counter) grow(limit int) {
	calls := make([]time.Duration, limit)
	start := k.next - k.n
	if start < 0 {
		start += len(k.calls)
	}
	for j := range k.n {
		calls[j] = k.calls[(start+j)%len(k.calls)]
	}
	k.calls, k.next = calls, k.n
}
