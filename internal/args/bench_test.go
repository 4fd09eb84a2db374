package args

import (
	"encoding/json"
	"strings"
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

// BenchmarkValidate measures validate-only throughput: on a small tools/call, and on a
// 1 MiB tools/call result whose text is escape-heavy (where Decode, which unescapes
// every string, is slowest).
func BenchmarkValidate(b *testing.B) {
	for _, tc := range []struct {
		name string
		msg  []byte
	}{
		{"tools_call", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/home/a/notes.txt"},"_meta":{"progressToken":1}}}`)},
		{"1MiB_result", []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` +
			strings.Repeat("lorem ipsum \\n dolor \\u00e9 ", 1<<20/28) + `"}],"structuredContent":{"k":1}}}`)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			top := make([]Member, 0, 8)
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.msg)))
			for range b.N {
				if _, _, err := ValidateTop(tc.msg, 256, top[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
