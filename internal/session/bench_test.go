package session

import (
	"fmt"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// benchStore holds 1,000 sessions with 100 ids each of one kind, on a clock that moves
// one second per reading, so the minute window sees 60 calls at most.
func benchStore(b *testing.B) *Store {
	c := newClock()
	st := New(&Options{Now: func() time.Time { c.Advance(time.Second); return c.Now() }, IDTTL: 1 << 62, IdleTTL: 1 << 62})
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("msg-%08d", i)
	}
	for i := range 1000 {
		s := fmt.Sprintf("session-%d", i)
		st.Open(s, capability.Interactive)
		st.Record(s, "mail.message", ids)
	}
	return st
}

func BenchmarkCheck(b *testing.B) {
	st := benchStore(b)
	candidates := []string{"msg-00000007", " msg-00000042 ", "msg-00000099"}
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := st.Check("session-500", "mail.message", candidates); !ok {
			b.Fatal("refused")
		}
	}
}

func BenchmarkCheckRefused(b *testing.B) {
	st := benchStore(b)
	candidates := []string{"msg-00000007", "msg-99999999"}
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := st.Check("session-500", "mail.message", candidates); ok {
			b.Fatal("allowed")
		}
	}
}

func BenchmarkTake(b *testing.B) {
	st := benchStore(b)
	l := Limits{PerTurn: 1 << 40, PerMinute: 100, PerSession: 1 << 40}
	b.ReportAllocs()
	for b.Loop() {
		if ok, c := st.Take("session-500", "turn-1", "send_mail", l); !ok {
			b.Fatalf("refused by %v", c)
		}
	}
}

func BenchmarkTakeRefused(b *testing.B) {
	st := benchStore(b)
	l := Limits{PerTurn: 1}
	st.Take("session-500", "turn-1", "send_mail", l)
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := st.Take("session-500", "turn-1", "send_mail", l); ok {
			b.Fatal("allowed")
		}
	}
}

func BenchmarkTakeParallel(b *testing.B) {
	st := benchStore(b)
	l := Limits{PerTurn: 1 << 40, PerMinute: 100, PerSession: 1 << 40}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			st.Take("session-500", "turn-1", "send_mail", l)
		}
	})
}
