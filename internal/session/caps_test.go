package session

import (
	"fmt"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/google/go-cmp/cmp"
)

// take is one Take call, after advancing the clock by wait. An empty session, turn or
// tool means "s1", "t1", "send"; a zero limits means the test's limits.
type take struct {
	wait    time.Duration
	session string
	turn    string
	tool    string
	limits  *Limits
	want    Cap // NoCap: allowed
}

func TestTake(t *testing.T) {
	tests := []struct {
		name   string
		opt    *Options
		limits Limits
		takes  []take
	}{
		// Per turn.
		{name: "per turn", limits: Limits{PerTurn: 2}, takes: []take{{}, {}, {want: PerTurn}, {turn: "t2"}, {turn: "t2"}, {turn: "t2", want: PerTurn}}},
		{name: "refusals do not count", limits: Limits{PerTurn: 1}, takes: []take{{}, {want: PerTurn}, {want: PerTurn}, {turn: "t2"}, {turn: "t2", want: PerTurn}}},
		{name: "turn ids are opaque", limits: Limits{PerTurn: 1}, takes: []take{{turn: "7"}, {turn: "07"}, {turn: "7 "}, {turn: "7", want: PerTurn}}},
		{name: "same turn id", limits: Limits{PerTurn: 1}, takes: []take{{turn: "-"}, {turn: "-", want: PerTurn}}},
		{name: "alternating turns keep their counts", limits: Limits{PerTurn: 1}, takes: []take{{turn: "a"}, {turn: "b"}, {turn: "a", want: PerTurn}, {turn: "b", want: PerTurn}}},
		{name: "four recent turns remembered", limits: Limits{PerTurn: 1}, takes: []take{{turn: "a"}, {turn: "b"}, {turn: "c"}, {turn: "d"}, {turn: "a", want: PerTurn}}},
		{name: "fifth turn forgets the oldest", limits: Limits{PerTurn: 1}, takes: []take{{turn: "a"}, {turn: "b"}, {turn: "c"}, {turn: "d"}, {turn: "e"}, {turn: "a"}}},
		{name: "refused call in a new turn still refused", limits: Limits{PerTurn: 1, PerSession: 1}, takes: []take{{}, {turn: "t2", want: PerSession}}},

		// Per session.
		{name: "per session across turns", limits: Limits{PerSession: 3}, takes: []take{{}, {turn: "t2"}, {turn: "t3"}, {turn: "t4", want: PerSession}, {wait: 23 * time.Hour, turn: "t5", want: PerSession}}},
		{name: "sessions apart", limits: Limits{PerSession: 1}, takes: []take{{}, {want: PerSession}, {session: "s2"}, {session: "s2", want: PerSession}}},
		{name: "tools apart", limits: Limits{PerSession: 1}, takes: []take{{}, {tool: "other"}, {want: PerSession}, {tool: "other", want: PerSession}}},
		{name: "longest-lasting cap named", limits: Limits{PerTurn: 1, PerSession: 1, PerMinute: 1}, takes: []take{{}, {want: PerSession}}},
		{name: "turn named before minute", limits: Limits{PerTurn: 1, PerMinute: 1}, takes: []take{{}, {want: PerTurn}, {turn: "t2", want: PerMinute}}},

		// Per minute, sliding.
		{
			name:   "sliding minute",
			limits: Limits{PerMinute: 2},
			takes: []take{
				{}, {wait: 30 * time.Second}, {wait: 29 * time.Second, want: PerMinute},
				{wait: time.Second},                       // t=60s: the call at 0 left the window
				{wait: 29 * time.Second, want: PerMinute}, // t=89s: calls at 30s and 60s
				{wait: time.Second},                       // t=90s
				{wait: 0, turn: "t2", want: PerMinute},    // turns do not reset the minute
				{wait: time.Hour}, {}, {want: PerMinute},
			},
		},
		{name: "refusals leave the window", limits: Limits{PerMinute: 1}, takes: []take{{}, {wait: 10 * time.Second, want: PerMinute}, {wait: 50 * time.Second}}},
		{name: "burst at the edge", limits: Limits{PerMinute: 3}, takes: []take{{}, {}, {}, {wait: time.Minute - 1, want: PerMinute}, {wait: 1}, {}, {}, {want: PerMinute}}},
		{
			name:   "limit lowered keeps recent calls",
			limits: Limits{PerMinute: 3},
			takes:  []take{{}, {}, {limits: &Limits{PerMinute: 2}, want: PerMinute}, {limits: &Limits{PerMinute: 5}}, {limits: &Limits{PerMinute: 1}, want: PerMinute}, {wait: time.Minute, limits: &Limits{PerMinute: 1}}},
		},

		// Limits that fail closed, limits that do nothing.
		{name: "negative per turn", limits: Limits{PerTurn: -1}, takes: []take{{want: PerTurn}}},
		{name: "negative per session", limits: Limits{PerSession: -5}, takes: []take{{want: PerSession}}},
		{name: "negative per minute", limits: Limits{PerMinute: -1}, takes: []take{{want: PerMinute}}},
		{name: "no limits", takes: []take{{}, {}, {}, {tool: "x"}, {session: "s9"}}},

		// Bounds.
		{name: "capacity", opt: &Options{MaxTools: 1}, limits: Limits{PerSession: 10}, takes: []take{{}, {tool: "other", want: Capacity}, {}, {tool: "other", limits: &Limits{}}}},
		{name: "capacity is per session", opt: &Options{MaxTools: 1}, limits: Limits{PerSession: 10}, takes: []take{{}, {session: "s2", tool: "other"}}},
		{
			name:   "evicted session counts again",
			opt:    &Options{MaxSessions: 1},
			limits: Limits{PerSession: 1},
			takes:  []take{{}, {want: PerSession}, {session: "s2"}, {}},
		},
		{
			name:   "idle session counts again",
			opt:    &Options{IdleTTL: time.Hour},
			limits: Limits{PerSession: 1},
			takes:  []take{{}, {want: PerSession}, {wait: time.Hour}},
		},
		{
			name:   "busy session is not idle",
			opt:    &Options{IdleTTL: time.Hour},
			limits: Limits{PerSession: 1},
			takes:  []take{{}, {wait: 59 * time.Minute, want: PerSession}, {wait: 59 * time.Minute, want: PerSession}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, clock := newStore(tt.opt)
			var got, want []string
			for i, tk := range tt.takes {
				clock.Advance(tk.wait)
				l := tt.limits
				if tk.limits != nil {
					l = *tk.limits
				}
				ok, c := st.Take(or(tk.session, "s1"), or(tk.turn, "t1"), or(tk.tool, "send"), l)
				if ok != (c == NoCap) {
					t.Errorf("take %d: ok %v with cap %v", i, ok, c)
				}
				got = append(got, fmt.Sprintf("%d:%v", i, c))
				want = append(want, fmt.Sprintf("%d:%v", i, tk.want))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("caps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTakeClampsPerMinute(t *testing.T) {
	st, _ := newStore(nil)
	l := Limits{PerMinute: 1 << 40}
	for i := range MaxPerMinute {
		if ok, c := st.Take("s", "t", "x", l); !ok {
			t.Fatalf("call %d refused by %v", i, c)
		}
	}
	if ok, c := st.Take("s", "t", "x", l); ok || c != PerMinute {
		t.Errorf("call %d = %v, %v; want refused per_minute", MaxPerMinute, ok, c)
	}
}

func TestTakeWithoutLimitsKeepsNothing(t *testing.T) {
	st, _ := newStore(nil)
	st.Take("s", "t", "x", Limits{})
	if n := st.Len(); n != 0 {
		t.Errorf("Len = %d after a Take with no limits", n)
	}
}

func TestTakeStartsForgottenSessionTainted(t *testing.T) {
	st, _ := newStore(&Options{MaxSessions: 1})
	st.Open("s1", capability.Interactive)
	st.Take("s1", "t", "x", Limits{PerSession: 1})
	st.Open("s2", capability.Interactive) // evicts s1
	if ok, _ := st.Take("s1", "t", "x", Limits{PerSession: 1}); !ok {
		t.Fatal("evicted session's count did not restart")
	}
	origin, tainted, by := st.State("s1")
	if diff := cmp.Diff([]any{capability.OriginUnknown, true, TaintedUnknownSession}, []any{origin, tainted, by}); diff != "" {
		t.Errorf("State (-want +got):\n%s", diff)
	}
}

func TestCapString(t *testing.T) {
	for c, want := range map[Cap]string{NoCap: "", PerTurn: "per_turn", PerMinute: "per_minute", PerSession: "per_session", Capacity: "capacity", Cap(99): ""} {
		if got := c.String(); got != want {
			t.Errorf("Cap(%d).String() = %q, want %q", c, got, want)
		}
	}
}

// TestTakeAcrossSessionsAndTools: calls that move between sessions and
// tools, with sessions evicted and started again under the same id, count
// each (session, tool) on its own — whichever was used last.
func TestTakeAcrossSessionsAndTools(t *testing.T) {
	st, _ := newStore(&Options{MaxSessions: 2})
	st.Open("a", capability.Interactive)
	st.Open("b", capability.Interactive)
	one := Limits{PerSession: 1}
	steps := []struct {
		id, tool string
		want     bool
	}{
		{"a", "x", true},
		{"a", "x", false}, // a's x is spent
		{"a", "y", true},  // a's y is not
		{"b", "x", true},  // nor is b's x
		{"a", "x", false}, // a's x still spent after b's call
		{"b", "y", true},
		{"b", "x", false},
		{"c", "x", true},  // a third session evicts the least recently used, a
		{"b", "x", false}, // b is held still
		{"a", "x", true},  // a again: a new session (tainted as unknown), counting from zero
		{"a", "y", true},
		{"a", "x", false},
	}
	for i, s := range steps {
		if ok, _ := st.Take(s.id, "1", s.tool, one); ok != s.want {
			t.Fatalf("step %d: Take(%s, %s) = %v, want %v", i, s.id, s.tool, ok, s.want)
		}
	}
	if _, tainted, by := st.State("a"); !tainted || by != TaintedUnknownSession {
		t.Errorf("the evicted session came back as tainted %v by %q, want tainted by %q", tainted, by, TaintedUnknownSession)
	}
	if o, _, _ := st.State("b"); o != capability.Interactive {
		t.Errorf("session b's origin is %v after the others' calls", o)
	}
}
