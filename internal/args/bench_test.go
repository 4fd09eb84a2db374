package args

import (
	"encoding/json"
	"testing"
)

var (
	typicalCall = []byte(`{"path":"/home/alice/projects/app/main.go","head":10}`)
	editCall    = []byte(`{"path":"/home/alice/projects/app/main.go","edits":[{"oldText":"func main() {\n\tfmt.Println(\"hi\")\n}","newText":"func main() {\n\tlog.Print(\"hi\")\n}"},{"oldText":"import \"fmt\"","newText":"import \"log\""}],"dryRun":false}`)
)

// BenchmarkDecode and BenchmarkStdlibUnmarshal run in the same process so their ratio is
// meaningful; see the package report for measured figures.
func BenchmarkDecode(b *testing.B) {
	benchDecode(b, typicalCall)
}

func BenchmarkStdlibUnmarshal(b *testing.B) {
	benchStdlib(b, typicalCall)
}

func BenchmarkDecodeEdit(b *testing.B) {
	benchDecode(b, editCall)
}

func BenchmarkStdlibUnmarshalEdit(b *testing.B) {
	benchStdlib(b, editCall)
}

func benchDecode(b *testing.B, data []byte) {
	var d Doc
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := d.Decode(data, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func benchStdlib(b *testing.B, data []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeSelect is the args share of a whole check: decode, then select the one
// bound argument and read its string.
func BenchmarkDecodeSelect(b *testing.B) {
	p, err := ParsePointer("/path")
	if err != nil {
		b.Fatal(err)
	}
	var d Doc
	var n int
	fn := func(v Value, _ Loc) { n += len(v.Str()) }
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Decode(typicalCall, nil); err != nil {
			b.Fatal(err)
		}
		p.Select(d.Root(), fn)
	}
	if n == 0 {
		b.Fatal("nothing selected")
	}
}

func BenchmarkSelectWildcard(b *testing.B) {
	d := mustDecode(b, `{"paths":["/a/b","/c/d","/e/f","/g/h"]}`)
	p, err := ParsePointer("/paths/*")
	if err != nil {
		b.Fatal(err)
	}
	var n int
	fn := func(v Value, _ Loc) { n += len(v.Str()) }
	b.ReportAllocs()
	for b.Loop() {
		p.Select(d.Root(), fn)
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	d := mustDecode(b, string(typicalCall))
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = d.Root().AppendJSON(buf[:0])
	}
}

func BenchmarkAppendCanonicalEdit(b *testing.B) {
	d := mustDecode(b, string(editCall))
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = d.Root().AppendCanonical(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
