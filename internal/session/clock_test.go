package session

import (
	"sync"
	"time"
)

// fakeClock is the injected clock of the tests: time moves only when a test says so.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newStore returns a store on a fake clock, with o's fields (o may be nil).
func newStore(o *Options) (*Store, *fakeClock) {
	c := newClock()
	var opt Options
	if o != nil {
		opt = *o
	}
	opt.Now = c.Now
	return New(&opt), c
}
