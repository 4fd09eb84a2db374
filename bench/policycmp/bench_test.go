package policycmp

import (
	"runtime"
	"testing"
)

// benchmark times the engine called name on the request mix, built
// alone.
func benchmark(b *testing.B, name string) {
	for _, e := range Engines() {
		if e.Name != name {
			continue
		}
		decide, err := e.New()
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		Run(b, decide, Mix())
		return
	}
	b.Fatalf("no engine %s", name)
}

func BenchmarkAegis10(b *testing.B)         { benchmark(b, "Aegis10") }
func BenchmarkAegis1100(b *testing.B)       { benchmark(b, "Aegis1100") }
func BenchmarkCedar10(b *testing.B)         { benchmark(b, "Cedar10") }
func BenchmarkCedar1100(b *testing.B)       { benchmark(b, "Cedar1100") }
func BenchmarkCedarSliced10(b *testing.B)   { benchmark(b, "CedarSliced10") }
func BenchmarkCedarSliced1100(b *testing.B) { benchmark(b, "CedarSliced1100") }
func BenchmarkOPA10(b *testing.B)           { benchmark(b, "OPA10") }
func BenchmarkOPA1100(b *testing.B)         { benchmark(b, "OPA1100") }
