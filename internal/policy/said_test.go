package policy

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// saidPolicies are policies whose allow rules look alike: the same ID in
// the same file, with other reasons, lines and modes, so that a reason
// kept for one rule (saidCache) would read plausibly for another.
var saidPolicies = []string{
	`version: 1
rules:
  - id: any
    effect: allow
    reason: first
    tool: "*"
  - id: home
    effect: allow
    path_under: /home/a
`,
	`version: 1
rules:
  - id: any
    effect: allow
    reason: second
    tool: "*"
  - id: home
    effect: allow
    path_under: /home/a
`,
	`version: 1
rules:

  - id: any
    effect: allow
    tool: "*"
  - id: home
    effect: allow
    path_under: /home/a
`,
	`version: 1
rules:
  - id: other
    effect: allow
    reason: first
    tool: "*"
  - id: unbound
    effect: allow
    reason: legacy
    unbound: true
  - id: home
    effect: allow
    path_under: /home/a
`,
	// As the first, a line further down.
	`# moved
version: 1
rules:
  - id: any
    effect: allow
    reason: first
    tool: "*"
  - id: home
    effect: allow
    path_under: /home/a
`,
	// A shadow policy: nothing it says is enforced, so nothing is allowed
	// by it, and its rules reach Reason only as Would. It comes last.
	`version: 1
mode: shadow
rules:
  - id: any
    effect: allow
    reason: first
    tool: "*"
  - id: home
    effect: allow
    path_under: /home/a
`,
}

// allowing is how many of saidPolicies allow calls: all but the last.
var allowing = len(saidPolicies) - 1

// parseSaid parses saidPolicies[i%len(saidPolicies)], as said.yaml, or as
// other.yaml for i of len(saidPolicies) and over: the same rules in
// another file.
func parseSaid(t testing.TB, i int) *Set {
	t.Helper()
	file := "said.yaml"
	if i >= len(saidPolicies) {
		file, i = "other.yaml", i%len(saidPolicies)
	}
	s, err := Parse(file, []byte(saidPolicies[i]), &Options{Home: testHome})
	if err != nil {
		t.Fatalf("policy %d: %v", i, err)
	}
	return s
}

// saidRequest builds a request from a few draws: servers and tools that
// differ by a quote or a space, bound or not, 0 to 6 capabilities (past
// inlineCaps).
func saidRequest(rng *rand.Rand) *Request {
	servers := []string{"fs", "web", "fs ", `f"s`, "", "mail"}
	tools := []string{"read_file", "read_text_file", "fetch", "x\x00y", "", "read_file "}
	q := req(servers[rng.IntN(len(servers))], tools[rng.IntN(len(tools))])
	q.Bound = rng.IntN(4) != 0
	q.Taint = rng.IntN(2) == 0
	for range rng.IntN(7) {
		q.Caps = append(q.Caps, fsRead("/home/a/"+strconv.Itoa(rng.IntN(3))))
	}
	return q
}

// wantReason is the reason of d, built here without saidCache: for an
// allow, the spec of ruleSays and the capability count.
func wantReason(t testing.TB, d Decision, q *Request) string {
	t.Helper()
	if d.Effect() != Allow {
		return "" // not explained by allowReason; compared by the caller
	}
	r := d.Action().Rule
	if r == nil {
		t.Fatalf("%s/%s: allowed with no action rule", q.Server, q.Tool)
	}
	s := ruleSays(r, Allow, "tool "+strconv.Quote(q.Tool)+" on server "+strconv.Quote(q.Server))
	switch n := len(q.Caps); n {
	case 0:
	case 1:
		s += ", and its capability is allowed"
	default:
		s += fmt.Sprintf(", and its %d capabilities are allowed", n)
	}
	return s
}

// checkSaid decides q under s and holds its Reason, twice (the first may
// keep it, the second reuses it), to the one built afresh.
func checkSaid(t testing.TB, s *Set, q *Request) (allowed bool) {
	d := s.Decide(q)
	want := wantReason(t, d, q)
	for range 2 {
		got := d.Reason()
		if d.Effect() == Allow && got != want {
			t.Errorf("%q/%q bound=%v caps=%d: Reason() = %q, want %q", q.Server, q.Tool, q.Bound, len(q.Caps), got, want)
			return true
		}
		if d.Effect() != Allow && got == "" {
			t.Errorf("%q/%q: empty reason for %s", q.Server, q.Tool, d.Effect())
		}
	}
	return d.Effect() == Allow
}

// TestAllowReasonDifferential holds every allow reason to the one built
// afresh through random sequences of calls to policies whose rules look
// alike, and through reloads: each policy parsed again (equal rules at new
// addresses) after the last copy is dropped and collected, so that a new
// rule may take an old one's address.
func TestAllowReasonDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sets := make([]*Set, 2*len(saidPolicies))
	for i := range sets {
		sets[i] = parseSaid(t, i)
	}
	allowed := 0
	for round := range 200 {
		if round%10 == 0 {
			// Reload one policy, and collect the old one.
			i := rng.IntN(len(sets))
			sets[i] = nil
			runtime.GC()
			sets[i] = parseSaid(t, i)
		}
		for range 50 {
			s := sets[rng.IntN(len(sets))]
			if checkSaid(t, s, saidRequest(rng)) {
				allowed++
			}
		}
		if t.Failed() {
			return
		}
	}
	if allowed < 1000 {
		t.Fatalf("only %d of 10000 calls allowed: the test does not exercise saidCache", allowed)
	}
}

// TestAllowReasonBound: a bound and an unbound call allowed by the same
// rule share a reason, and an unbound call that no rule allows is not
// explained by an allow kept for the bound one.
func TestAllowReasonBound(t *testing.T) {
	s := parseSaid(t, 3)
	bound := req("legacy", "fetch")
	unbound := with(req("legacy", "fetch"), func(q *Request) { q.Bound = false })
	for range 3 {
		checkSaid(t, s, bound)
		checkSaid(t, s, unbound)
	}
	s = parseSaid(t, 0) // no unbound rule: the unbound call is denied
	checkSaid(t, s, bound)
	d := s.Decide(unbound)
	if d.Effect() != Deny {
		t.Fatalf("unbound call: %s, want deny", d.Effect())
	}
	if got, want := d.Reason(), `no rule allows unbound tool "fetch" on server "legacy"`; got != want {
		t.Errorf("unbound call: Reason() = %q, want %q", got, want)
	}
}

// TestAllowReasonConcurrent decides calls on many goroutines, under
// policies whose rules look alike and share slots of saidCache, and holds
// each allow reason to the one built afresh. Run with -race.
func TestAllowReasonConcurrent(t *testing.T) {
	var sets []*Set
	for range 16 { // equal rules at sixteen addresses each
		for i := range 2 * len(saidPolicies) {
			sets = append(sets, parseSaid(t, i))
		}
	}
	// Rules that share a slot of saidCache: make sure some do.
	slots := map[uintptr][]*Rule{}
	shared := 0
	for _, s := range sets {
		d := s.Decide(req("fs", "fetch"))
		if r := d.Action().Rule; r != nil {
			k := slotOf(r)
			if len(slots[k]) == 1 {
				shared++
			}
			slots[k] = append(slots[k], r)
		}
	}
	t.Logf("%d action rules in %d slots, %d shared", len(sets), len(slots), shared)
	workers := 4 * runtime.GOMAXPROCS(0)
	if workers < 8 {
		workers = 8
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 2000 {
				checkSaid(t, sets[rng.IntN(len(sets))], saidRequest(rng))
			}
		})
	}
	wg.Wait()
}

// TestAllowReasonSameSlot alternates calls allowed by two distinct rules
// that fall in the same slot of saidCache, with the same tool and server,
// for many such pairs (rules that differ in ID, reason, line or file, or
// not at all): each call gets its own rule's reason.
func TestAllowReasonSameSlot(t *testing.T) {
	q := req("fs", "fetch", fsRead("/home/a/x"))
	var keep []*Set
	bySlot := map[uintptr]*Set{}
	pairs := 0
	for i := 0; pairs < 40 && i < 20000; i++ {
		s := parseSaid(t, i%(2*len(saidPolicies)))
		if s.Decide(q).Effect() != Allow {
			continue
		}
		keep = append(keep, s)
		k := slotOf(s.Decide(q).Action().Rule)
		if o, ok := bySlot[k]; ok {
			pairs++
			for range 3 {
				checkSaid(t, o, q)
				checkSaid(t, s, q)
			}
		}
		bySlot[k] = s
	}
	if pairs < 40 {
		t.Fatalf("only %d pairs of rules share a slot", pairs)
	}
	runtime.KeepAlive(keep)
}

// TestAllowReasonRuleKeptAlive: a reason kept in saidCache holds its rule,
// so a rule of a later policy never takes the address of the rule a kept
// reason was built for (no ABA through the address).
func TestAllowReasonRuleKeptAlive(t *testing.T) {
	q := req("fs", "fetch")
	addrs := map[*Rule]bool{}
	for i := range 300 {
		s := parseSaid(t, i%allowing)
		d := s.Decide(q)
		r := d.Action().Rule
		if addrs[r] {
			// An address seen before may come back only once the
			// reason that held it has been replaced in its slot.
			if m := saidCache[slotOf(r)].Load(); m != nil && m.rule == r && (m.of.Reason != r.Reason || m.of.Line != r.Line || m.of.ID != r.ID) {
				t.Fatalf("slot %d holds a reason of another rule at %p", slotOf(r), r)
			}
		}
		addrs[r] = true
		checkSaid(t, s, q)
		s = nil
		if i%8 == 0 {
			runtime.GC()
		}
	}
}

// slotOf is the slot of saidCache that r's reason goes in.
func slotOf(r *Rule) uintptr {
	return uintptr(saidSlot(r))
}
