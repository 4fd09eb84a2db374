// Command ratio times aegis, cedar-go and OPA on the same decisions in one
// process, for several rounds, and prints the medians and the ratios to
// aegis as a Markdown table.
//
//	cd bench && go run ./policycmp/cmd/ratio -rounds 7
//
// Each round builds every engine in turn, checks that it decides the
// request mix as aegis does, and times it with testing.Benchmark
// (-test.benchtime sets how long, 1s by default); the order is rotated
// from round to round, so that load from other processes falls on all
// engines alike. A ratio is
// the competitor's median over aegis's median, both from this run.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/bench/policycmp"
	"github.com/aegis-mcp/aegis/internal/policy"
)

func main() {
	testing.Init()
	rounds := flag.Int("rounds", 5, "rounds of the benchmarks")
	flag.Parse()
	if err := run(*rounds); err != nil {
		fmt.Fprintln(os.Stderr, "ratio:", err)
		os.Exit(1)
	}
}

type run1 struct {
	Name string
	new  func() (func(*policy.Request) policy.Effect, error)
	reqs []*policy.Request
}

type sample struct {
	ns     []float64
	allocs int64
	bytes  int64
}

func run(rounds int) error {
	if rounds < 1 {
		return fmt.Errorf("-rounds %d: want at least 1", rounds)
	}
	engines := policycmp.Engines()
	mix := policycmp.Mix()
	// Aegis's budget is for a call with up to four capabilities: time the
	// four-capability calls of the mix on their own too.
	var four []*policy.Request
	for _, r := range mix {
		if len(r.Caps) == 4 {
			four = append(four, r)
		}
	}
	runs := make([]run1, 0, len(engines)+1)
	for _, e := range engines {
		runs = append(runs, run1{e.Name, e.New, mix})
		if e.Name == "Aegis1100" {
			runs = append(runs, run1{"Aegis1100, 4-capability calls only", e.New, four})
		}
	}

	// What aegis decides on the mix, which every engine must decide too
	// before its speed means anything.
	want := map[string][]policy.Effect{}
	for _, e := range engines {
		if !strings.HasPrefix(e.Name, "Aegis") {
			continue
		}
		decide, err := e.New()
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
		for _, r := range mix {
			want[size(e.Name)] = append(want[size(e.Name)], decide(r))
		}
	}

	start := time.Now()
	load0 := loadavg()
	samples := map[string]*sample{}
	for round := range rounds {
		for k := range runs {
			e := runs[(k+round)%len(runs)]
			// Build the engine alone, check it, time it, and drop it, so
			// that no engine's heap makes another's garbage collection
			// dearer.
			decide, err := e.new()
			if err != nil {
				return fmt.Errorf("%s: %w", e.Name, err)
			}
			if len(e.reqs) == len(mix) {
				for i, r := range mix {
					if got := decide(r); got != want[size(e.Name)][i] {
						return fmt.Errorf("%s decides call %d of the mix %s, aegis %s", e.Name, i, got, want[size(e.Name)][i])
					}
				}
			}
			runtime.GC()
			r := testing.Benchmark(func(b *testing.B) { policycmp.Run(b, decide, e.reqs) })
			s := samples[e.Name]
			if s == nil {
				s = &sample{}
				samples[e.Name] = s
			}
			s.ns = append(s.ns, float64(r.T.Nanoseconds())/float64(r.N))
			s.allocs, s.bytes = r.AllocsPerOp(), r.AllocedBytesPerOp()
		}
		fmt.Fprintf(os.Stderr, "round %d/%d done\n", round+1, rounds)
	}

	fmt.Printf("machine: %d CPUs (%s), %s %s/%s; load average %s at start, %s at end; %d rounds in %v\n\n",
		runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH, load0, loadavg(), rounds, time.Since(start).Round(time.Second))
	ncaps := 0
	for _, r := range mix {
		ncaps += len(r.Caps)
	}
	fmt.Printf("mix: %d calls, %.2f capabilities per call on average, %d with four\n\n", len(mix), float64(ncaps)/float64(len(mix)), len(four))
	fmt.Printf("| engine | median per call | min | max | allocs/call | B/call | × aegis |\n")
	fmt.Printf("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, e := range runs {
		s := samples[e.Name]
		base := samples["Aegis"+size(e.Name)]
		ratio := fmt.Sprintf("%.0f×", median(s.ns)/median(base.ns))
		if len(e.reqs) != len(mix) {
			ratio = "—"
		}
		fmt.Printf("| %s | %s | %s | %s | %d | %d | %s |\n", e.Name, dur(median(s.ns)), dur(slices.Min(s.ns)), dur(slices.Max(s.ns)),
			s.allocs, s.bytes, ratio)
	}
	return nil
}

// size returns the policy size an engine's name ends in.
func size(name string) string {
	if strings.Contains(name, "1100") {
		return "1100"
	}
	return "10"
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func dur(ns float64) string {
	switch {
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.2f ms", ns/1e6)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
