package egress

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/aegis-mcp/aegis/internal/dnstest"
)

func TestStatic(t *testing.T) {
	s, err := NewStatic(map[string][]string{
		"A.Example.":        {"10.0.0.1", "::ffff:10.0.0.2", "fd00::1"},
		"blackhole.example": {},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		in      string
		want    []netip.Addr
		wantErr error
	}{
		{"canonical key", "a.example", addrs("10.0.0.1", "10.0.0.2", "fd00::1"), nil},
		{"blackhole", "blackhole.example", nil, nil},
		{"absent", "b.example", nil, ErrNotFound},
		// Check passes canonical names; Static matches them exactly.
		{"not canonical", "A.example", nil, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Resolve(t.Context(), tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Resolve(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("Resolve(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// counting is a resolver that counts its calls and answers from a table
// that a test can change, as a rebinding DNS server would.
type counting struct {
	mu     sync.Mutex
	calls  int
	answer map[string][]netip.Addr
	err    error
}

func (c *counting) Resolve(_ context.Context, name string) ([]netip.Addr, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.err != nil {
		return nil, c.err
	}
	a, ok := c.answer[name]
	if !ok {
		return nil, fmt.Errorf("resolving %s: %w", name, ErrNotFound)
	}
	return a, nil
}

func (c *counting) String() string { return "counting" }

func TestChain(t *testing.T) {
	first := &counting{answer: map[string][]netip.Addr{"split.example": addrs("10.0.0.1"), "hole.example": nil}}
	second := &counting{answer: map[string][]netip.Addr{"split.example": addrs("93.184.215.14"), "other.example": addrs("93.184.215.15")}}
	ch := Chain{first, second}
	tests := []struct {
		name    string
		in      string
		want    []netip.Addr
		wantErr error
	}{
		{"first wins (split horizon)", "split.example", addrs("10.0.0.1"), nil},
		{"first's empty answer wins", "hole.example", nil, nil},
		{"falls through", "other.example", addrs("93.184.215.15"), nil},
		{"nobody knows", "none.example", nil, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ch.Resolve(t.Context(), tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a real error stops the chain", func(t *testing.T) {
		broken := &counting{err: context.DeadlineExceeded}
		last := &counting{answer: map[string][]netip.Addr{"x.example": addrs("93.184.215.14")}}
		if _, err := (Chain{broken, last}).Resolve(t.Context(), "x.example"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error = %v, want the first resolver's", err)
		}
		if last.calls != 0 {
			t.Error("the chain asked the next resolver after an error that is not ErrNotFound")
		}
	})
	t.Run("empty chain", func(t *testing.T) {
		if _, err := (Chain{}).Resolve(t.Context(), "x.example"); !errors.Is(err, ErrNotFound) {
			t.Errorf("error = %v, want ErrNotFound", err)
		}
	})
}

func TestCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &counting{answer: map[string][]netip.Addr{
			"a.example": addrs("93.184.215.14"),
			"b.example": addrs("93.184.215.15"),
			"c.example": addrs("93.184.215.16"),
		}}
		c := NewCache(inner, time.Minute, 2)
		ctx := t.Context()
		resolve := func(name string) []netip.Addr {
			t.Helper()
			a, err := c.Resolve(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		resolve("a.example")
		resolve("a.example")
		if inner.calls != 1 {
			t.Fatalf("calls = %d after two lookups within the TTL, want 1", inner.calls)
		}
		// A rebinding server changes its answer; the cache keeps the one
		// that was checked until it expires.
		inner.answer["a.example"] = addrs("10.0.0.1")
		if got := resolve("a.example"); got[0] != netip.MustParseAddr("93.184.215.14") {
			t.Fatalf("cached answer changed to %v", got)
		}
		time.Sleep(time.Minute + time.Second)
		if got := resolve("a.example"); got[0] != netip.MustParseAddr("10.0.0.1") {
			t.Fatalf("answer after the TTL = %v, want the new one", got)
		}
		if inner.calls != 2 {
			t.Fatalf("calls = %d after expiry, want 2", inner.calls)
		}
		// Bounded: a third name evicts the oldest.
		resolve("b.example")
		resolve("c.example")
		if n := c.Len(); n != 2 {
			t.Fatalf("cache holds %d names, want at most 2", n)
		}
		before := inner.calls
		resolve("a.example") // evicted: asked again
		if inner.calls != before+1 {
			t.Fatalf("evicted name was served from the cache")
		}
		// Errors are not cached.
		inner.err = errors.New("SERVFAIL")
		if _, err := c.Resolve(ctx, "d.example"); err == nil {
			t.Fatal("no error from a failing resolver")
		}
		inner.err = nil
		inner.answer["d.example"] = addrs("93.184.215.17")
		if got := resolve("d.example"); len(got) != 1 {
			t.Fatalf("an error was cached: %v", got)
		}
		// The cache hands out copies: a caller cannot poison it.
		got := resolve("d.example")
		got[0] = netip.MustParseAddr("127.0.0.1")
		if again := resolve("d.example"); again[0] != netip.MustParseAddr("93.184.215.17") {
			t.Fatalf("caller's edit reached the cache: %v", again)
		}
	})
}

func TestCacheConcurrent(t *testing.T) {
	inner := &counting{answer: map[string][]netip.Addr{"a.example": addrs("93.184.215.14"), "b.example": addrs("93.184.215.15")}}
	c := NewCache(inner, time.Hour, 1)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := "a.example"
			if i%2 == 1 {
				name = "b.example"
			}
			for range 100 {
				if _, err := c.Resolve(t.Context(), name); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := c.Len(); n > 1 {
		t.Errorf("cache holds %d names, bound is 1", n)
	}
}

func TestSystemTimeout(t *testing.T) {
	// A resolver whose Dial never answers: the lookup must end at the
	// timeout with an error, without touching the network.
	s := System{Timeout: time.Millisecond, Resolver: blockingResolver()}
	_, err := s.Resolve(t.Context(), "a.example")
	if err == nil {
		t.Fatal("no error from a resolver that never answers")
	}
}

// TestNameserver resolves through a DNS server of the test's own on
// loopback, named by the nameserver setting: the checker sees each answer
// the server gives, a rebinding name's second answer included, and the
// hosts table still comes first.
func TestNameserver(t *testing.T) {
	allowed, denied := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")
	dns, err := dnstest.NewServer(map[string]dnstest.Answers{
		"rebind.test": dnstest.Sequence([]netip.Addr{allowed}, []netip.Addr{denied}),
		"table.test":  dnstest.Sequence([]netip.Addr{denied}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	ch, err := New(&Config{
		Nameserver: dns.Addr().String(),
		Hosts:      map[string][]string{"table.test": {"127.0.0.2"}},
		Admit: []Admit{
			{Hosts: []string{"*.test"}, Classes: []string{"internal-name"}},
			{Hosts: []string{allowed.String()}, Classes: []string{"loopback"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		url    string
		reason Reason
		addrs  []netip.Addr
	}{
		{"the first answer", "http://rebind.test/", Allowed, []netip.Addr{allowed}},
		{"the second answer, rebound", "http://rebind.test/", BlockedAddress, []netip.Addr{denied}},
		{"the table before the nameserver", "http://table.test/", Allowed, []netip.Addr{allowed}},
		{"a name the server does not hold", "http://other.test/", ResolveFailed, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := ch.Check(t.Context(), capOf(t, tt.url))
			if v.Reason != tt.reason {
				t.Fatalf("Check = %v, want %v", v, tt.reason)
			}
			if tt.reason == BlockedAddress && v.Addr != denied {
				t.Errorf("blocked address %v, want %v", v.Addr, denied)
			}
			if tt.reason == Allowed {
				if diff := cmp.Diff(tt.addrs, v.Addrs, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
					t.Errorf("addresses (-want +got):\n%s", diff)
				}
			}
		})
	}
	var asked []string
	for _, s := range dns.Served() {
		if s.Type == dnsmessage.TypeA {
			asked = append(asked, fmt.Sprint(s.Name, s.Addrs))
		}
	}
	want := []string{"rebind.test.[127.0.0.2]", "rebind.test.[127.0.0.3]"}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("A queries answered (-want +got):\n%s", diff)
	}
}

// TestNameserverNotAnswering: a nameserver that is not there fails the
// lookup, which denies the name; the system's nameservers are not asked
// instead.
func TestNameserverNotAnswering(t *testing.T) {
	// A port just closed: nothing listens there.
	dns, err := dnstest.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := dns.Addr().String()
	dns.Close()
	ch, err := New(&Config{Nameserver: addr, ResolveTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if v := ch.Check(t.Context(), capOf(t, "http://public.example.com/")); v.Reason != ResolveFailed {
		t.Errorf("Check = %v, want %v", v, ResolveFailed)
	}
}
