package session

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// FuzzIDs runs a sequence of records and checks read from data against a naive model
// of one session's ids: a slice in the order the ids were last recorded.
func FuzzIDs(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 3, 1, 1, 0, 4, 1, 2, 2, 200, 1, 3})
	f.Add([]byte{0, 1, 0, 1, 0, 2, 0, 3, 0, 4, 1, 1, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		const max, ttl = 3, 100 * time.Second
		st, clock := newStore(&Options{MaxIDs: max, IDTTL: ttl})
		st.Open("s", capability.Interactive)
		type rec struct {
			id string
			at time.Duration
		}
		var model []rec // least recently recorded first
		var now time.Duration
		for len(data) >= 2 {
			op, arg := data[0]%3, data[1]
			data = data[2:]
			id := "id" + strconv.Itoa(int(arg%6))
			switch op {
			case 0:
				st.Record("s", "k", []string{id})
				model = slices.DeleteFunc(model, func(r rec) bool { return r.id == id })
				model = append(model, rec{id, now})
				if len(model) > max {
					model = model[1:]
				}
			case 1:
				want := slices.ContainsFunc(model, func(r rec) bool { return r.id == id && now-r.at < ttl })
				if got, reason := st.Check("s", "k", []string{id}); got != want {
					t.Fatalf("Check(%s) at %v = %v (%s), model says %v; model %v", id, now, got, reason, want, model)
				}
			case 2:
				d := time.Duration(arg) * time.Second
				clock.Advance(d)
				now += d
			}
		}
	})
}

// FuzzTake runs a sequence of calls read from data against a naive model of one
// tool's caps that keeps every allowed call; limits change from call to call.
func FuzzTake(f *testing.F) {
	f.Add([]byte{0, 0, 3, 0, 0, 3, 1, 0, 3, 2, 30, 3, 0, 1, 2})
	f.Add([]byte{0, 1, 1, 0, 2, 1, 0, 3, 1, 0, 4, 1, 0, 5, 1, 0, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		st, clock := newStore(nil)
		type call struct {
			turn string
			at   time.Duration
		}
		var allowed []call
		var minute []call  // the allowed calls while a per-minute cap was set
		var turns []string // most recent first, as the counter keeps them
		counts := map[string]int{}
		var now, lastUse time.Duration
		held := false // the store holds the session
		for len(data) >= 3 {
			op, a, b := data[0]%2, data[1], data[2]
			data = data[3:]
			if op == 1 {
				d := time.Duration(a) * time.Second
				clock.Advance(d)
				now += d
				continue
			}
			turn := strconv.Itoa(int(a % 6))
			l := Limits{PerTurn: int(b%4) - 1, PerMinute: int(b/4%4) - 1, PerSession: int(b/16%8) * 2}
			if l == (Limits{}) {
				if ok, c := st.Take("s", turn, "x", l); !ok {
					t.Fatalf("Take with no limits refused by %v", c)
				}
				continue
			}
			// A session idle for IdleTTL is forgotten, and its caps start
			// again from zero (documented in Take's package doc).
			if held && now-lastUse >= DefaultIdleTTL {
				allowed, minute, turns, counts = nil, nil, nil, map[string]int{}
			}
			held, lastUse = true, now
			// The model: the turn moves to the front of the last turnSlots turns.
			if i := slices.Index(turns, turn); i >= 0 {
				turns = slices.Delete(turns, i, i+1)
			} else {
				counts[turn] = 0
			}
			turns = slices.Insert(turns, 0, turn)
			if len(turns) > turnSlots {
				delete(counts, turns[turnSlots])
				turns = turns[:turnSlots]
			}
			inMinute := 0
			for _, c := range minute {
				if now-c.at < time.Minute {
					inMinute++
				}
			}
			want := NoCap
			switch {
			case l.PerSession != 0 && len(allowed) >= l.PerSession:
				want = PerSession
			case l.PerTurn != 0 && counts[turn] >= l.PerTurn:
				want = PerTurn
			case l.PerMinute != 0 && inMinute >= l.PerMinute:
				want = PerMinute
			}
			ok, got := st.Take("s", turn, "x", l)
			if got != want || ok != (want == NoCap) {
				t.Fatalf("Take(turn %s, %+v) at %v = %v, %v; model says %v", turn, l, now, ok, got, want)
			}
			if ok {
				allowed = append(allowed, call{turn, now})
				if l.PerMinute > 0 {
					minute = append(minute, call{turn, now})
				}
				counts[turn]++
			}
		}
	})
}
