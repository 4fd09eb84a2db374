package chain

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// BenchmarkDecodeChainLines decodes, as Scan does, the first entry lines
// of a chain kept in AEGIS_BENCH_CHAIN (the recheck benchmark's chain of
// internal/gateway): the mix of entries recheck reads.
func BenchmarkDecodeChainLines(b *testing.B) {
	dir := os.Getenv("AEGIS_BENCH_CHAIN")
	if dir == "" {
		b.Skip("AEGIS_BENCH_CHAIN is not set")
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "chain-*.jsonl"))
	if len(segs) == 0 {
		b.Skip("no segment in AEGIS_BENCH_CHAIN")
	}
	f, err := os.Open(segs[0])
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() && len(lines) < 20000 {
		if !bytes.HasPrefix(sc.Bytes(), checkpointPrefix) {
			lines = append(lines, bytes.Clone(sc.Bytes()))
		}
	}
	var size int
	for _, l := range lines {
		size += len(l)
	}
	b.SetBytes(int64(size / len(lines)))
	b.ReportAllocs()
	ar := new(arena)
	var e Entry
	i := 0
	for b.Loop() {
		if _, err := decodeEntryIn(lines[i], &e, ar); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(lines) {
			i = 0
		}
	}
}

// TestArenaStringsStay decodes many entries with one arena, as a scan's
// worker does, keeping every entry: the strings and slices of each stay
// those of its line after the arena has moved on through many blocks of
// string bytes and of capabilities (nothing the arena hands out is
// written again), and equal those the decoder makes without an arena.
func TestArenaStringsStay(t *testing.T) {
	ar := new(arena)
	var lines [][]byte
	var kept []Entry
	for i := range 3000 {
		e := benchEntry(i)
		e.Seq = uint64(i + 1)
		e.Session = fmt.Sprintf("session-%d-%s", i, strings.Repeat("x", i%300))
		e.Caps = append(e.Caps, Cap{Kind: "net.connect", Scheme: "https", Host: fmt.Sprintf("h%d.example", i), Port: 443, URL: fmt.Sprintf("https://h%d.example/%s", i, strings.Repeat("p", i%5000))})
		e.Hash, _ = e.ComputeHash()
		line, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var got Entry
		if _, err := decodeEntryIn(line, &got, ar); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		lines, kept = append(lines, line), append(kept, got)
	}
	for i, line := range lines {
		var want Entry
		if _, err := decodeEntry(line, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, kept[i]); diff != "" {
			t.Fatalf("entry %d changed after later decoding (-want +got):\n%s", i, diff)
		}
	}
}
