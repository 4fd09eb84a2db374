// Command ratio times aegis, cedar-go and OPA on the same decisions in one
// process, for several rounds, and prints the medians and the ratios to
// aegis as a Markdown table.
//
//	cd bench && go run ./policycmp/cmd/ratio -rounds 7
//
// Each round runs every engine once with testing.Benchmark (-test.benchtime
// sets how long, 1s by default), in an order rotated from round to round,
// so that load from other processes falls on all engines alike. A ratio is
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

type sample struct {
	ns     []float64
	allocs int64
	bytes  int64
}

func run(rounds int) error {
	if rounds < 1 {
		return fmt.Errorf("-rounds %d: want at least 1", rounds)
	}
	engines, err := policycmp.Engines()
	if err != nil {
		return err
	}
	mix := policycmp.Mix()
	// The engines must agree on the mix before their speed means anything.
	byName := map[string]policycmp.Engine{}
	for _, e := range engines {
		byName[e.Name] = e
	}
	for _, e := range engines {
		ref := byName["Aegis"+size(e.Name)]
		for i, r := range mix {
			if got, want := e.Effect(r), ref.Effect(r); got != want {
				return fmt.Errorf("%s decides call %d of the mix %s, %s decides %s", e.Name, i, got, ref.Name, want)
			}
		}
	}

	start := time.Now()
	load0 := loadavg()
	samples := map[string]*sample{}
	for round := range rounds {
		for k := range engines {
			e := engines[(k+round)%len(engines)]
			r := testing.Benchmark(func(b *testing.B) { policycmp.Run(b, e.Effect, mix) })
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
	fmt.Printf("| engine | median per call | min | max | allocs/call | B/call | × aegis |\n")
	fmt.Printf("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, e := range engines {
		s := samples[e.Name]
		base := samples["Aegis"+size(e.Name)]
		fmt.Printf("| %s | %s | %s | %s | %d | %d | %.0f× |\n", e.Name, dur(median(s.ns)), dur(slices.Min(s.ns)), dur(slices.Max(s.ns)),
			s.allocs, s.bytes, median(s.ns)/median(base.ns))
	}
	return nil
}

// size returns the policy size an engine's name ends in.
func size(name string) string {
	if strings.HasSuffix(name, "1100") {
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
