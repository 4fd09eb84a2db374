package session

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// TestTakeConcurrent shows that concurrent calls cannot overrun a cap: of many calls
// racing on one tool, exactly the cap's worth are allowed.
func TestTakeConcurrent(t *testing.T) {
	const workers, each, limit = 8, 200, 500
	st, _ := newStore(nil)
	st.Open("s", capability.Interactive)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range each {
				turn := fmt.Sprint(i % 3)
				if ok, _ := st.Take("s", turn, "send", Limits{PerSession: limit, PerTurn: 1000}); ok {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != limit {
		t.Errorf("%d calls allowed, want %d", got, limit)
	}
}

// TestConcurrentUse runs every operation from many goroutines on few sessions and a
// small table, so that eviction races with use; -race checks the locking, and each
// goroutine checks what must hold whatever the interleaving.
func TestConcurrentUse(t *testing.T) {
	st, clock := newStore(&Options{MaxSessions: 3, MaxIDs: 4, MaxTools: 2})
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := range 300 {
				s := fmt.Sprintf("s%d", (w+i)%5)
				switch i % 6 {
				case 0:
					st.Open(s, capability.Origin(i%3))
				case 1:
					st.Record(s, "k", []string{fmt.Sprint(i), fmt.Sprint(i + 1)})
				case 2:
					if ok, _ := st.Check(s, "k", []string{"never-recorded"}); ok {
						t.Error("Check allowed an id nobody recorded")
					}
					if ok, _ := st.Check(s, "k", nil); ok {
						t.Error("Check allowed an empty list")
					}
				case 3:
					st.Take(s, fmt.Sprint(i%4), fmt.Sprint("tool", i%3), Limits{PerTurn: 2, PerMinute: 5, PerSession: 50})
				case 4:
					// Nobody opens "never-opened": held or forgotten, it is tainted.
					st.Taint(s, "web_fetch")
					st.Record("never-opened", "k", []string{"x"})
					if _, tainted, _ := st.State("never-opened"); !tainted {
						t.Error("a session nobody opened is untainted")
					}
				case 5:
					clock.Advance(1)
					if n := st.Len(); n > 3 {
						t.Errorf("Len = %d over MaxSessions 3", n)
					}
				}
			}
		})
	}
	wg.Wait()
}
