package policycmp

import (
	"fmt"
	"testing"

	"github.com/aegis-mcp/aegis/internal/policy"
)

// MixSeed and MixSize fix the request mix every benchmark decides.
const (
	MixSeed = 20251129
	MixSize = 512
)

// Mix returns the benchmark's request mix.
func Mix() []*policy.Request { return Requests(MixSeed, MixSize) }

// Engine is one way of deciding a call, as the benchmarks time it.
type Engine struct {
	Name   string // Aegis1100, Cedar10, ...
	Effect func(*policy.Request) policy.Effect
}

// Engines builds every engine for both policies, in the order the ratio
// program reports them.
func Engines() ([]Engine, error) {
	var out []Engine
	for _, p := range []*Policy{Bench10(), Bench1100()} {
		a, err := NewAegis(p)
		if err != nil {
			return nil, fmt.Errorf("aegis %s: %w", p.Name, err)
		}
		c, err := NewCedar(p, nil)
		if err != nil {
			return nil, fmt.Errorf("cedar %s: %w", p.Name, err)
		}
		cs, err := NewCedar(p, &CedarOptions{Sliced: true})
		if err != nil {
			return nil, fmt.Errorf("cedar %s: %w", p.Name, err)
		}
		o, err := NewOPA(p)
		if err != nil {
			return nil, fmt.Errorf("opa %s: %w", p.Name, err)
		}
		out = append(out,
			Engine{"Aegis" + p.Name, a.Effect},
			Engine{"Cedar" + p.Name, c.Effect},
			Engine{"CedarSliced" + p.Name, cs.Effect},
			Engine{"OPA" + p.Name, o.Effect},
		)
	}
	return out, nil
}

// Run times decide over reqs, one call per iteration, cycling through
// the mix; it reports allocations.
func Run(b *testing.B, decide func(*policy.Request) policy.Effect, reqs []*policy.Request) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		decide(reqs[i])
		if i++; i == len(reqs) {
			i = 0
		}
	}
}
