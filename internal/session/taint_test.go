package session

import (
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/google/go-cmp/cmp"
)

type stateOf struct {
	Origin    capability.Origin
	Tainted   bool
	TaintedBy string
}

func TestState(t *testing.T) {
	tests := []struct {
		name string
		opt  *Options
		run  func(st *Store, clock *fakeClock)
		want stateOf
	}{
		{"interactive", nil, func(st *Store, _ *fakeClock) { st.Open("s", capability.Interactive) }, stateOf{capability.Interactive, false, ""}},
		{"unattended tainted from the start", nil, func(st *Store, _ *fakeClock) { st.Open("s", capability.Unattended) }, stateOf{capability.Unattended, true, TaintedUnattended}},
		{"opened with unknown origin", nil, func(st *Store, _ *fakeClock) { st.Open("s", capability.OriginUnknown) }, stateOf{capability.OriginUnknown, true, TaintedUnknownOrigin}},
		{"opened with a bad origin", nil, func(st *Store, _ *fakeClock) { st.Open("s", capability.Origin(7)) }, stateOf{capability.OriginUnknown, true, TaintedUnknownOrigin}},
		{"untrusted result", nil, func(st *Store, _ *fakeClock) {
			st.Open("s", capability.Interactive)
			st.Taint("s", "web_fetch")
		}, stateOf{capability.Interactive, true, "web_fetch"}},
		{"first taint kept", nil, func(st *Store, _ *fakeClock) {
			st.Open("s", capability.Interactive)
			st.Taint("s", "web_fetch")
			st.Taint("s", "read_mail")
		}, stateOf{capability.Interactive, true, "web_fetch"}},
		{"unattended keeps its reason", nil, func(st *Store, _ *fakeClock) {
			st.Open("s", capability.Unattended)
			st.Taint("s", "web_fetch")
		}, stateOf{capability.Unattended, true, TaintedUnattended}},
		{"unnamed taint", nil, func(st *Store, _ *fakeClock) {
			st.Open("s", capability.Interactive)
			st.Taint("s", "")
		}, stateOf{capability.Interactive, true, TaintedUnnamed}},
		{"taint in another session", nil, func(st *Store, _ *fakeClock) {
			st.Open("s", capability.Interactive)
			st.Open("other", capability.Interactive)
			st.Taint("other", "web_fetch")
		}, stateOf{capability.Interactive, false, ""}},

		// Open never loosens.
		{"reopen interactive keeps unattended", nil, func(st *Store, _ *fakeClock) {
			st.Open("s", capability.Unattended)
			st.Open("s", capability.Interactive)
		}, stateOf{capability.Unattended, true, TaintedUnattended}},
		{"reopen unattended tightens", nil, func(st *Store, _ *fakeClock) {
			st.Open("s", capability.Interactive)
			st.Open("s", capability.Unattended)
		}, stateOf{capability.Unattended, true, TaintedUnattended}},
		{"reopen keeps taint", nil, func(st *Store, _ *fakeClock) {
			st.Open("s", capability.Interactive)
			st.Taint("s", "web_fetch")
			st.Open("s", capability.Interactive)
		}, stateOf{capability.Interactive, true, "web_fetch"}},
		{"reopen with unknown origin changes nothing", nil, func(st *Store, _ *fakeClock) {
			st.Open("s", capability.Interactive)
			st.Open("s", capability.OriginUnknown)
		}, stateOf{capability.Interactive, false, ""}},

		// Forgotten sessions.
		{"never opened", nil, func(*Store, *fakeClock) {}, stateOf{capability.OriginUnknown, true, TaintedUnknownSession}},
		{"write to an unopened session", nil, func(st *Store, _ *fakeClock) { st.Record("s", "k", []string{"x"}) }, stateOf{capability.OriginUnknown, true, TaintedUnknownSession}},
		{"open after a write keeps the taint", nil, func(st *Store, _ *fakeClock) {
			st.Take("s", "t", "x", Limits{PerTurn: 1})
			st.Open("s", capability.Interactive)
		}, stateOf{capability.Interactive, true, TaintedUnknownSession}},
		{"taint of an unopened session", nil, func(st *Store, _ *fakeClock) { st.Taint("s", "web_fetch") }, stateOf{capability.OriginUnknown, true, TaintedUnknownSession}},
		{"idle too long", &Options{IdleTTL: time.Hour}, func(st *Store, c *fakeClock) {
			st.Open("s", capability.Interactive)
			c.Advance(time.Hour)
		}, stateOf{capability.OriginUnknown, true, TaintedUnknownSession}},
		{"used within the idle ttl", &Options{IdleTTL: time.Hour}, func(st *Store, c *fakeClock) {
			st.Open("s", capability.Interactive)
			c.Advance(59 * time.Minute)
			st.State("s")
			c.Advance(59 * time.Minute)
		}, stateOf{capability.Interactive, false, ""}},
		{"tainted then idle: back tainted", &Options{IdleTTL: time.Hour}, func(st *Store, c *fakeClock) {
			st.Open("s", capability.Interactive)
			st.Taint("s", "web_fetch")
			c.Advance(2 * time.Hour)
			st.Record("s", "k", []string{"x"})
		}, stateOf{capability.OriginUnknown, true, TaintedUnknownSession}},
		{"least recently used evicted", &Options{MaxSessions: 2}, func(st *Store, _ *fakeClock) {
			st.Open("s", capability.Interactive)
			st.Open("b", capability.Interactive)
			st.State("s") // s is now more recent than b
			st.Open("c", capability.Interactive)
		}, stateOf{capability.Interactive, false, ""}},
		{"evicted when the table is full", &Options{MaxSessions: 2}, func(st *Store, _ *fakeClock) {
			st.Open("s", capability.Interactive)
			st.Taint("s", "web_fetch")
			st.Open("b", capability.Interactive)
			st.Open("c", capability.Interactive)
		}, stateOf{capability.OriginUnknown, true, TaintedUnknownSession}},
		{"opened again after eviction starts clean", &Options{MaxSessions: 1}, func(st *Store, _ *fakeClock) {
			st.Open("s", capability.Interactive)
			st.Taint("s", "web_fetch")
			st.Open("b", capability.Interactive)
			st.Open("s", capability.Interactive)
		}, stateOf{capability.Interactive, false, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, clock := newStore(tt.opt)
			tt.run(st, clock)
			var got stateOf
			got.Origin, got.Tainted, got.TaintedBy = st.State("s")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("State (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStateDoesNotStartASession(t *testing.T) {
	st, _ := newStore(nil)
	st.State("s")
	st.Check("s", "k", []string{"x"})
	if n := st.Len(); n != 0 {
		t.Errorf("Len = %d after reads only", n)
	}
}

func TestSweep(t *testing.T) {
	st, clock := newStore(&Options{IdleTTL: time.Hour})
	for _, s := range []string{"a", "b", "c"} {
		st.Open(s, capability.Interactive)
		clock.Advance(10 * time.Minute)
	}
	clock.Advance(35 * time.Minute) // a idle 65m, b 55m, c 45m
	st.State("zzz")
	if n := st.Len(); n != 2 {
		t.Errorf("Len = %d, want 2 (a swept)", n)
	}
	clock.Advance(time.Hour)
	st.State("zzz")
	if n := st.Len(); n != 0 {
		t.Errorf("Len = %d, want 0", n)
	}
}

func TestMaxSessions(t *testing.T) {
	st, _ := newStore(&Options{MaxSessions: 3})
	for i := range 100 {
		st.Open(string(rune('a'+i%26))+string(rune('0'+i/26)), capability.Interactive)
		if n := st.Len(); n > 3 {
			t.Fatalf("Len = %d after %d opens", n, i+1)
		}
	}
}

func TestOriginString(t *testing.T) {
	for o, want := range map[capability.Origin]string{capability.OriginUnknown: "unknown", capability.Interactive: "interactive", capability.Unattended: "unattended", capability.Origin(9): "unknown"} {
		if got := o.String(); got != want {
			t.Errorf("capability.Origin(%d).String() = %q, want %q", o, got, want)
		}
	}
}
