package policycmp

import (
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
	Name string // Aegis1100, Cedar10, ...
	// New builds the engine and returns its decision. Engines are built
	// one at a time, when they are timed, so that no engine's heap makes
	// another's garbage collection dearer.
	New func() (func(*policy.Request) policy.Effect, error)
}

// Engines lists every engine for both policies, in the order the ratio
// program reports them.
func Engines() []Engine {
	var out []Engine
	for _, p := range []*Policy{Bench10(), Bench1100()} {
		out = append(out,
			Engine{"Aegis" + p.Name, func() (func(*policy.Request) policy.Effect, error) {
				a, err := NewAegis(p)
				if err != nil {
					return nil, err
				}
				return a.Effect, nil
			}},
			Engine{"Cedar" + p.Name, func() (func(*policy.Request) policy.Effect, error) {
				c, err := NewCedar(p, nil)
				if err != nil {
					return nil, err
				}
				return c.Effect, nil
			}},
			Engine{"CedarSliced" + p.Name, func() (func(*policy.Request) policy.Effect, error) {
				c, err := NewCedar(p, &CedarOptions{Sliced: true})
				if err != nil {
					return nil, err
				}
				return c.Effect, nil
			}},
			Engine{"OPA" + p.Name, func() (func(*policy.Request) policy.Effect, error) {
				o, err := NewOPA(p)
				if err != nil {
					return nil, err
				}
				return o.Effect, nil
			}},
		)
	}
	return out
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
