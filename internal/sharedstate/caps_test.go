package sharedstate

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/pgtest"
	"github.com/aegis-mcp/aegis/internal/session"
)

// TestTakeAcrossReplicas: two stores on one database (two replicas) take
// from the same session's caps at once; each cap holds exactly, whoever
// takes.
func TestTakeAcrossReplicas(t *testing.T) {
	where := pgtest.Schema(t, pgtest.URL(t))
	ctx := context.Background()
	var stores [2]*Store
	for i := range stores {
		s, err := OpenCaps(ctx, where, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	for _, tt := range []struct {
		name   string
		limits session.Limits
		turns  int // the calls are spread over this many turns
		want   int64
		cap    session.Cap
	}{
		{"per session", session.Limits{PerSession: 7}, 1, 7, session.PerSession},
		{"per turn", session.Limits{PerTurn: 3}, 2, 6, session.PerTurn},
		{"per minute", session.Limits{PerMinute: 5}, 1, 5, session.PerMinute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sess := "s-" + tt.name
			var allowed atomic.Int64
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					turn := string(rune('a' + i%tt.turns))
					ok, c, err := stores[i%2].Take(ctx, sess, turn, "send", tt.limits)
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						allowed.Add(1)
					} else if c != tt.cap {
						t.Errorf("refused by %v, want %v", c, tt.cap)
					}
				}()
			}
			wg.Wait()
			if got := allowed.Load(); got != tt.want {
				t.Errorf("%d calls allowed, want %d", got, tt.want)
			}
			// Another session, another tool: their own caps.
			if ok, _, err := stores[0].Take(ctx, sess+"-other", "a", "send", tt.limits); !ok || err != nil {
				t.Errorf("another session: %v %v", ok, err)
			}
			if ok, _, err := stores[1].Take(ctx, sess, "a", "other-tool", tt.limits); !ok || err != nil {
				t.Errorf("another tool: %v %v", ok, err)
			}
		})
	}
}

// TestTakeMinuteSlides: the per-minute cap counts the last 60 seconds.
func TestTakeMinuteSlides(t *testing.T) {
	where := pgtest.Schema(t, pgtest.URL(t))
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	s, err := OpenCaps(context.Background(), where, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := session.Limits{PerMinute: 2}
	for i, want := range []bool{true, true, false} {
		if ok, _, err := s.Take(context.Background(), "s", "a", "t", l); ok != want || err != nil {
			t.Fatalf("take %d: %v %v", i, ok, err)
		}
	}
	now = now.Add(61 * time.Second)
	if ok, _, _ := s.Take(context.Background(), "s", "a", "t", l); !ok {
		t.Errorf("a minute later the cap still refuses")
	}
}

// TestSessions: what one replica learns of a session (taint, values,
// ids), another knows; other sessions know nothing of it.
func TestSessions(t *testing.T) {
	where := pgtest.Schema(t, pgtest.URL(t))
	ctx := context.Background()
	a, err := OpenSessions(ctx, where)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenSessions(ctx, where)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.Taint("s1", "web/fetch"); err != nil {
		t.Fatal(err)
	}
	if err := a.TaintValues("s1", "web/fetch", []string{"evil.example", "host:evil.example"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Record("s1", "payee", []string{"p-1", "p-2"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		got  func() (bool, error)
		want bool
	}{
		{"tainted", func() (bool, error) { return b.Tainted("s1") }, true},
		{"another session clean", func() (bool, error) { return b.Tainted("s2") }, false},
		{"a tainted value", func() (bool, error) { return b.CarriesTaint("s1", []string{"x", "host:evil.example"}) }, true},
		{"clean values", func() (bool, error) { return b.CarriesTaint("s1", []string{"x", "y"}) }, false},
		{"values of another session", func() (bool, error) { return b.CarriesTaint("s2", []string{"evil.example"}) }, false},
		{"ids returned", func() (bool, error) { return b.Has("s1", "payee", []string{"p-2", "p-1", "p-2"}) }, true},
		{"one id not returned", func() (bool, error) { return b.Has("s1", "payee", []string{"p-1", "p-3"}) }, false},
		{"another kind", func() (bool, error) { return b.Has("s1", "account", []string{"p-1"}) }, false},
		{"another session's ids", func() (bool, error) { return b.Has("s2", "payee", []string{"p-1"}) }, false},
	} {
		if got, err := tt.got(); err != nil || got != tt.want {
			t.Errorf("%s: %v %v, want %v", tt.name, got, err, tt.want)
		}
	}
}
