package shape

import (
	"strings"
	"testing"
)

var benchText = strings.Repeat("Dear customer, your order {id} ships on Monday; see f(x){return} for details. ", 20)

func BenchmarkNeutraliseUnchanged(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		Jinja.Neutralise(benchText)
	}
}

func BenchmarkNeutraliseChanged(b *testing.B) {
	s := benchText + "{{{secret}}}"
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Jinja.Neutralise(s)
	}
}

func BenchmarkNeutraliseJSONUnchanged(b *testing.B) {
	d := decode(b, `{"to":"a@example.com","subject":"Order {id}","body":"`+benchText+`","tags":["x","y"]}`)
	b.ReportAllocs()
	for b.Loop() {
		Mustache.NeutraliseJSON(d.Root())
	}
}

func BenchmarkNeutraliseJSONChanged(b *testing.B) {
	d := decode(b, `{"to":"a@example.com","subject":"Order {{id}}","body":"`+benchText+`","tags":["x","y"]}`)
	b.ReportAllocs()
	for b.Loop() {
		Mustache.NeutraliseJSON(d.Root())
	}
}

// BenchmarkReplaceAllBaseline is the naive (and wrong) rewrite, for a same-run ratio.
func BenchmarkReplaceAllBaseline(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		strings.ReplaceAll(strings.ReplaceAll(benchText, "{{", "{ {"), "}}", "} }")
	}
}
