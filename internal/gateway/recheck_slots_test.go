package gateway

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/record"
	"github.com/google/go-cmp/cmp"
)

// slotEntry varies the number of capabilities (0..3) and their verdicts
// from entry to entry, so that a reused result slot would carry a
// capability of an earlier entry into a later one.
func slotEntry(i int) *record.Entry {
	e := recheckEntry(i)
	ssh := record.Cap{Kind: "fs.read", Path: "/home/alice/.ssh/id_ed25519"}
	ok := record.Cap{Kind: "fs.read", Path: fmt.Sprintf("/home/alice/projects/x/%d", i)}
	net := record.Cap{Kind: "net.connect", Scheme: "https", Host: "10.0.0.7", Port: 443, URL: "https://10.0.0.7/"}
	if e.Server == "fs" && i%100 != 99 {
		e.Tool = "read_multiple_files"
		switch (i * 7919) % 6 {
		case 0:
			e.Caps = nil
		case 1:
			e.Caps = []record.Cap{ssh}
		case 2:
			e.Caps = []record.Cap{ok}
		case 3:
			e.Caps = []record.Cap{ok, ssh}
		case 4:
			e.Caps = []record.Cap{ok, ok, net}
		case 5:
			e.Caps = []record.Cap{ok, ok}
		}
	}
	if i%3 == 0 {
		e.Roles = nil
	}
	return e
}

// TestRecheckChainReusedSlots holds RecheckChain, whose result slots are
// reused from chunk to chunk once a chain has more chunks than are in
// flight (2×GOMAXPROCS+2 of 256 KiB), to Recheck after a plain Scan, at
// several GOMAXPROCS, on every field of the verdict (from a review).
func TestRecheckChainReusedSlots(t *testing.T) {
	dir := t.TempDir()
	const n = 12000 // about 10 MB: more than 18 chunks
	l, err := chain.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := 1 + g; i <= n; i += 32 {
				if _, _, err := l.Append(context.Background(), slotEntry(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	eng := recheckEngine(t, "../../examples/filesystem/policy.yaml")
	render := func(e *record.Entry, v *Verdict, ok bool) string {
		return fmt.Sprintf("%d %v %v %q rules=%v caps=%#v origin=%v taint=%v tier=%v bound=%v args=%v ask=%v find=%v ncap=%d",
			e.Seq, v.Effect, ok, v.Reason(), v.Decision.Rules(), v.Caps, v.Origin, v.Taint, v.Tier, v.Bound, v.Arguments, v.Ask, v.Findings, v.Decision.NumCaps())
	}
	var want []string
	if err := chain.Scan(dir, func(e *record.Entry) error {
		v, ok := eng.Recheck(e)
		want = append(want, render(e, &v, ok))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, procs := range []int{1, 2, 4, 8} {
		old := runtime.GOMAXPROCS(procs)
		var got []string
		err := eng.RecheckChain(dir, func(e *record.Entry, v Verdict, ok bool) error {
			got = append(got, render(e, &v, ok))
			return nil
		})
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("GOMAXPROCS %d: RecheckChain (-Recheck +RecheckChain):\n%.3000s", procs, diff)
		}
	}
	effects := map[string]int{}
	for _, w := range want {
		var seq int
		var eff string
		fmt.Sscan(w, &seq, &eff)
		effects[eff]++
	}
	if len(want) != n || effects["deny"] == 0 || effects["allow"] == 0 {
		t.Fatalf("%d entries, effects %v: want %d with both allows and denials", len(want), effects, n)
	}
}
