package schema

import (
	"encoding/json"
	"testing"
)

// typical is a call of four fields against a schema of five, the shape of most tool
// calls.
var typical = []byte(`{"path":"r.txt","limit":50,"mode":"fast","tags":[{"k":"q3"}]}`)

// BenchmarkCheck validates a typical call against the closed schema.
func BenchmarkCheck(b *testing.B) {
	s := mustCompile(b, tool, nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(typical)))
	for b.Loop() {
		if _, _, err := s.Check(typical); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckClamped clamps one field and re-encodes the arguments.
func BenchmarkCheckClamped(b *testing.B) {
	s := mustCompile(b, listing, listingOptions())
	a := []byte(`{"limit":5000,"q":"weekly report","pages":[{"size":10},{"size":70}]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(a)))
	for b.Loop() {
		if out, _, err := s.Check(a); err != nil || out == nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckDenied is the deny path: a key only closing refuses, explained with
// the unclosed schema.
func BenchmarkCheckDenied(b *testing.B) {
	s := mustCompile(b, tool, nil)
	a := []byte(`{"path":"r.txt","limit":50,"mode":"fast","sudo":true}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.Check(a); err == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkDecodeEncodingJSON is the reference: decoding the same arguments with
// encoding/json into map[string]any.
func BenchmarkDecodeEncodingJSON(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(typical)))
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(typical, &m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompile is the once-per-pin cost.
func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile([]byte(tool), nil); err != nil {
			b.Fatal(err)
		}
	}
}
