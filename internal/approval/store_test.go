package approval

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable clock.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }
func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) opts() *Options { return &Options{Now: c.now, Poll: time.Millisecond} }
func openAt(t *testing.T, where string, c *clock) *Store {
	t.Helper()
	var s *Store
	var err error
	if IsURL(where) {
		s, err = OpenPostgres(context.Background(), where, c.opts())
	} else {
		s, err = Open(where, c.opts())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func request(c *clock, id string) *Request {
	return &Request{
		ID: id, Created: c.now(), Expires: c.now().Add(time.Minute),
		Session: "s1", Principal: "alice", Server: "fs", Tool: "write_file",
		ArgsHash: "aa", PolicyHash: "pp", Seq: 7,
		Caps: []string{"fs.write /home/alice/p/x"}, Rules: []string{"ask-writes"}, Reason: "writes ask",
		Arguments: []byte(`{"path":"/home/alice/p/x"}`),
	}
}

// TestAnswer: a pending approval is answered once; what cannot be
// answered says why.
func TestAnswer(t *testing.T) { eachStore(t, testAnswer) }

func testAnswer(t *testing.T, where func(*testing.T) string) {
	ctx := context.Background()
	c := newClock()
	s := openAt(t, where(t), c)
	for _, id := range []string{"0123456789abcdef", "0123456789abcdee", "fedcba9876543210"} {
		if err := s.Put(ctx, request(c, id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, request(c, "0123456789abcdef")); err == nil {
		t.Error("a second approval under the same id was put")
	}
	for _, tt := range []struct {
		name string
		id   string
		a    Answer
		want error // nil: answered
	}{
		{"unknown", "aaaaaaaaaaaaaaaa", Answer{Approve: true, Scope: ScopeCall}, ErrUnknown},
		{"ambiguous prefix", "0123", Answer{Approve: true, Scope: ScopeCall}, ErrAmbiguous},
		{"bad scope", "fedcba98", Answer{Approve: true, Scope: "forever"}, nil},
		{"unique prefix", "fedcba98", Answer{Approve: true, Scope: ScopeSession, By: "bob", Channel: ChannelCLI}, nil},
		{"again", "fedcba9876543210", Answer{Approve: false}, ErrAnswered},
		{"deny", "0123456789abcdee", Answer{Approve: false, By: "bob"}, nil},
		{"not hex", "0123-567", Answer{}, nil},
		{"too short", "012", Answer{}, nil},
		{"upper case", "FEDCBA98", Answer{}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ap, err := s.Answer(ctx, tt.id, tt.a)
			switch {
			case tt.want != nil:
				if !errors.Is(err, tt.want) {
					t.Errorf("err = %v, want %v", err, tt.want)
				}
			case tt.name == "bad scope" || tt.name == "not hex" || tt.name == "too short" || tt.name == "upper case":
				if err == nil {
					t.Errorf("answered %+v, want an error", ap)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			case ap.Answer == nil || ap.Answer.By != tt.a.By || ap.Answer.Approve != tt.a.Approve:
				t.Errorf("answer %+v, want %+v", ap.Answer, tt.a)
			}
		})
	}
	// Expired: an answer after the expiry is refused.
	c.add(2 * time.Minute)
	if _, err := s.Answer(ctx, "0123456789abcdef", Answer{Approve: true, Scope: ScopeCall}); !errors.Is(err, ErrExpired) {
		t.Errorf("answer after expiry: %v, want ErrExpired", err)
	}
	pending, err := s.List(ctx, false)
	if err != nil || len(pending) != 0 {
		t.Errorf("pending after expiry: %v %v, want none", pending, err)
	}
	all, err := s.List(ctx, true)
	if err != nil || len(all) != 3 {
		t.Fatalf("all: %d %v, want 3", len(all), err)
	}
}

// TestAwait: the held call sees the answer; an approval is taken once,
// by the arguments and policy it was made for; a call that goes expires
// its approval, so a late answer is refused.
func TestAwait(t *testing.T) { eachStore(t, testAwait) }

func testAwait(t *testing.T, where func(*testing.T) string) {
	ctx := context.Background()
	c := newClock()
	path := where(t)
	s := openAt(t, path, c)
	other := openAt(t, path, c) // another process: the CLI
	for _, tt := range []struct {
		name             string
		answer           *Answer
		argsHash, policy string
		cancel           bool
		want             error
	}{
		{"approved", &Answer{Approve: true, Scope: ScopeCall, By: "bob", Channel: ChannelCLI}, "aa", "pp", false, nil},
		{"denied", &Answer{Approve: false, By: "bob"}, "aa", "pp", false, nil},
		{"other arguments", &Answer{Approve: true, Scope: ScopeCall}, "ab", "pp", false, ErrMismatch},
		{"other policy", &Answer{Approve: true, Scope: ScopeCall}, "aa", "pq", false, ErrMismatch},
		{"call went", nil, "aa", "pp", true, context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := NewID()
			if err := s.Put(ctx, request(c, id)); err != nil {
				t.Fatal(err)
			}
			actx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan struct{})
			var got Answer
			var err error
			go func() {
				got, err = s.Await(actx, id, tt.argsHash, tt.policy)
				close(done)
			}()
			if tt.cancel {
				cancel()
			} else if _, aerr := other.Answer(ctx, id, *tt.answer); aerr != nil {
				t.Fatal(aerr)
			}
			<-done
			if !errors.Is(err, tt.want) {
				t.Fatalf("Await: %v, want %v", err, tt.want)
			}
			if tt.want == nil && (got.Approve != tt.answer.Approve || got.By != tt.answer.By) {
				t.Errorf("Await = %+v, want %+v", got, *tt.answer)
			}
			// Whatever happened, the approval cannot be used again.
			if _, err := s.Await(ctx, id, "aa", "pp"); tt.answer != nil && tt.answer.Approve && tt.want == nil && !errors.Is(err, ErrAnswered) {
				t.Errorf("second take: %v, want ErrAnswered", err)
			}
			if _, err := other.Answer(ctx, id, Answer{Approve: true, Scope: ScopeCall}); err == nil {
				t.Error("answered again")
			}
		})
	}
}

// TestAwaitExpires: nobody answers, and the approval expires.
func TestAwaitExpires(t *testing.T) { eachStore(t, testAwaitExpires) }

func testAwaitExpires(t *testing.T, where func(*testing.T) string) {
	c := newClock()
	s := openAt(t, where(t), c)
	id := NewID()
	if err := s.Put(context.Background(), request(c, id)); err != nil {
		t.Fatal(err)
	}
	c.add(time.Hour)
	if _, err := s.Await(context.Background(), id, "aa", "pp"); !errors.Is(err, ErrExpired) {
		t.Errorf("Await after expiry: %v, want ErrExpired", err)
	}
}

// TestAnswerRace: many answers race for one approval; one wins.
func TestAnswerRace(t *testing.T) { eachStore(t, testAnswerRace) }

func testAnswerRace(t *testing.T, where func(*testing.T) string) {
	ctx := context.Background()
	c := newClock()
	path := where(t)
	s := openAt(t, path, c)
	id := NewID()
	if err := s.Put(ctx, request(c, id)); err != nil {
		t.Fatal(err)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		st := s
		if i%2 == 1 {
			st = openAt(t, path, c)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := st.Answer(ctx, id, Answer{Approve: i%3 == 0, Scope: ScopeCall}); err == nil {
				wins.Add(1)
			} else if !errors.Is(err, ErrAnswered) {
				t.Errorf("answer %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Errorf("%d answers won, want 1", n)
	}
}

// TestLateApprovalExpires: an approval that lands as its call gives up
// is not left "approved": the call expires it on its way out.
func TestLateApprovalExpires(t *testing.T) { eachStore(t, testLateApprovalExpires) }

func testLateApprovalExpires(t *testing.T, where func(*testing.T) string) {
	ctx := context.Background()
	c := newClock()
	s := openAt(t, where(t), c)
	id := NewID()
	if err := s.Put(ctx, request(c, id)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Answer(ctx, id, Answer{Approve: true, Scope: ScopeCall}); err != nil {
		t.Fatal(err)
	}
	if err := s.expire(id); err != nil { // the call gave up before taking it
		t.Fatal(err)
	}
	if ap, err := s.Get(ctx, id); err != nil || ap.State != Expired {
		t.Errorf("state %v (%v), want expired", ap.State, err)
	}
}
