package schema

import (
	"encoding/json"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
)

// typical is a call of four fields against a schema of five, the shape of most tool
// calls.
var typical = []byte(`{"path":"r.txt","limit":50,"mode":"fast","tags":[{"k":"q3"}]}`)

// BenchmarkCheck validates a typical call against the closed schema (the fast path).
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

// BenchmarkTypical compares, in one run, the ways of checking the typical call: Check
// (decode and check) and CheckValue (arguments already decoded) on the fast path and
// on the validator alone, and decoding the same bytes with args and with
// encoding/json.
func BenchmarkTypical(b *testing.B) {
	fast := mustCompile(b, tool, nil)
	slow := *fast
	slow.fast = nil
	var d args.Doc
	if err := d.Decode(typical, nil); err != nil {
		b.Fatal(err)
	}
	for _, bb := range []struct {
		name string
		fn   func() error
	}{
		{"Check/fast", func() error { _, _, err := fast.Check(typical); return err }},
		{"Check/validator", func() error { _, _, err := slow.Check(typical); return err }},
		{"CheckValue/fast", func() error { _, _, err := fast.CheckValue(d.Root()); return err }},
		{"CheckValue/validator", func() error { _, _, err := slow.CheckValue(d.Root()); return err }},
		{"decode/args", func() error { var d args.Doc; return d.Decode(typical, nil) }},
		{"decode/encoding-json", func() error { var m map[string]any; return json.Unmarshal(typical, &m) }},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(typical)))
			for b.Loop() {
				if err := bb.fn(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckServer checks an edit_file call of server-filesystem, pre-decoded, on
// the fast path and with the validator alone.
func BenchmarkCheckServer(b *testing.B) {
	sch := loadTools(b, "testdata/server-filesystem.tools.json")["edit_file"]
	fast := mustCompile(b, string(sch), nil)
	slow := *fast
	slow.fast = nil
	var d args.Doc
	if err := d.Decode([]byte(`{"path":"/tmp/fsroot/notes.md","edits":[{"oldText":"teh","newText":"the"}],"dryRun":false}`), nil); err != nil {
		b.Fatal(err)
	}
	for name, s := range map[string]*Schema{"fast": fast, "validator": &slow} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := s.CheckValue(d.Root()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckClampedFast clamps two fields of a call on the fast path.
func BenchmarkCheckClampedFast(b *testing.B) {
	s := mustCompile(b, `{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":1000},"q":{"type":"string"},"pages":{"type":"array","items":{"type":"object","properties":{"size":{"type":"number"}}}}}}`,
		&Options{Clamp: map[string]Range{"/limit": Ceiling(100), "/pages/*/size": Ceiling(50)}})
	if s.fast == nil {
		b.Fatal(s.slowWhy)
	}
	for name, a := range map[string][]byte{
		"clamped":   []byte(`{"limit":5000,"q":"weekly report","pages":[{"size":10},{"size":70}]}`),
		"unclamped": []byte(`{"limit":50,"q":"weekly report","pages":[{"size":10},{"size":20}]}`),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := s.Check(a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckClamped clamps one field and re-encodes the arguments (the validator:
// the schema has an anyOf).
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

// BenchmarkCheckValueReadHead is the closed schema's share of the gateway's typical
// call (BenchmarkCheckAllChecks): read_text_file's arguments, decoded once, checked
// with a clamp on /head that leaves them as they are.
func BenchmarkCheckValueReadHead(b *testing.B) {
	s := mustCompile(b, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"path":{"type":"string"},"tail":{"type":"number"},"head":{"type":"number"}},"required":["path"]}`,
		&Options{Clamp: map[string]Range{"/head": Ceiling(1000)}})
	if s.fast == nil {
		b.Fatal(s.slowWhy)
	}
	var d args.Doc
	if err := d.Decode([]byte(`{"path":"/home/u/projects/app/internal/server/handler.go","head":40}`), nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if out, _, err := s.CheckValue(d.Root()); err != nil || out != nil {
			b.Fatal(out, err)
		}
	}
}
