package dlp

import (
	"os"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
)

// prose1K is 1 KiB of ordinary English text.
func prose1K(b testing.TB) string {
	data, err := os.ReadFile("testdata/negatives/prose.txt")
	if err != nil {
		b.Fatal(err)
	}
	return string(data[:1024])
}

// result64K is a 64 KiB tool result of ordinary text, code, logs and identifiers.
func result64K() string { return bulkNegative(newFaker(4), 64<<10)[:64<<10] }

// result64KSecrets is result64K with a secret of each kind every few kilobytes.
func result64KSecrets() string {
	f := newFaker(5)
	s := result64K()
	var b strings.Builder
	for i := 0; i < len(s); i += 4096 {
		b.WriteString(s[i:min(len(s), i+4096)])
		b.WriteString(" " + f.secret(Kinds()[(i/4096)%len(kinds)]) + " ")
	}
	return b.String()
}

func benchScan(b *testing.B, s string) {
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	var dst []Finding
	for b.Loop() {
		dst = Scan(s, dst[:0])
	}
}

func BenchmarkScanProse1K(b *testing.B)          { benchScan(b, prose1K(b)) }
func BenchmarkScanResult64K(b *testing.B)        { benchScan(b, result64K()) }
func BenchmarkScanResult64KSecrets(b *testing.B) { benchScan(b, result64KSecrets()) }

// BenchmarkScanRegexp* run the reference's regular expressions (nine token formats,
// against Scan's twenty-five kinds) over the same texts: the cost a regexp-based scanner
// would start from.
func BenchmarkScanRegexpProse1K(b *testing.B)   { benchRegexp(b, prose1K(b)) }
func BenchmarkScanRegexpResult64K(b *testing.B) { benchRegexp(b, result64K()) }

func benchRegexp(b *testing.B, s string) {
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		referenceAny.FindAllStringIndex(s, -1)
	}
}

func BenchmarkRedact(b *testing.B) {
	s := result64KSecrets()
	fs := Scan(s, nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Redact(s, fs)
	}
}

// BenchmarkScanValue is the DLP share of checking one typical call's arguments.
func BenchmarkScanValue(b *testing.B) {
	var d args.Doc
	if err := d.Decode([]byte(`{"path":"/home/alice/projects/app/main.go","edits":[{"oldText":"func main() {\n\tfmt.Println(\"hi\")\n}","newText":"func main() {\n\tlog.Print(\"hi\")\n}"}],"dryRun":false}`), nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var dst []Located
	for b.Loop() {
		dst = ScanValue(d.Root(), dst[:0])
	}
}

// BenchmarkScanValueReadCall is the DLP share of the gateway's typical call
// (BenchmarkCheckAllChecks): read_text_file's arguments, with the encoding the gateway
// pins.
func BenchmarkScanValueReadCall(b *testing.B) {
	var d args.Doc
	if err := d.Decode([]byte(`{"path":"/home/u/projects/app/internal/server/handler.go","head":40,"encoding":"utf-8"}`), nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var dst []Located
	for b.Loop() {
		if dst = ScanValue(d.Root(), dst[:0]); len(dst) != 0 {
			b.Fatal(dst)
		}
	}
}
