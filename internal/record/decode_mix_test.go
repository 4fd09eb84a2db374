package record

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

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
		if !bytes.HasPrefix(sc.Bytes(), []byte(`{"checkpoint":`)) {
			lines = append(lines, bytes.Clone(sc.Bytes()))
		}
	}
	var size int
	for _, l := range lines {
		size += len(l)
	}
	b.SetBytes(int64(size / len(lines)))
	b.ReportAllocs()
	ar := new(Arena)
	var e Entry
	i := 0
	for b.Loop() {
		if _, err := DecodeIn(lines[i], &e, ar, false); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(lines) {
			i = 0
		}
	}
}

// TestArenaStringsStay decodes many entries with one Arena, as a scan's
// worker does, keeping every entry: the strings and slices of each stay
// those of its line after the Arena has moved on through many blocks of
// string bytes and of capabilities (nothing the Arena hands out is
// written again), and equal those the decoder makes without an Arena.
func TestArenaStringsStay(t *testing.T) {
	ar := new(Arena)
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
		if _, err := DecodeIn(line, &got, ar, false); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		lines, kept = append(lines, line), append(kept, got)
	}
	for i, line := range lines {
		var want Entry
		if _, err := Decode(line, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, kept[i]); diff != "" {
			t.Fatalf("entry %d changed after later decoding (-want +got):\n%s", i, diff)
		}
	}
}

// FuzzDecodeArena decodes a run of lines with one Arena, as a scan's
// worker does, and each line again without one: the Arena (its interned
// strings, its last value of each field, its blocks of string bytes)
// changes nothing the decoder accepts, refuses or reads.
func FuzzDecodeArena(f *testing.F) {
	var lines [][]byte
	for i := range 4 {
		e := sample()
		e.Seq = uint64(i + 1)
		e.Hash, _ = e.ComputeHash()
		line, _ := e.MarshalJSON()
		lines = append(lines, line)
	}
	m, _ := minimal().MarshalJSON()
	lines = append(lines, m)
	f.Add(bytes.Join(lines, []byte("\n")))
	f.Add(bytes.Join([][]byte{lines[0], m, lines[1]}, []byte("\n")))
	for _, tc := range arenaCases() {
		f.Add(bytes.Join(tc.lines, []byte("\n")))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkArenaDecode(t, bytes.Split(data, []byte("\n")))
	})
}

// checkArenaDecode holds decodeEntryIn with one Arena for all lines to
// decodeEntry without one.
func checkArenaDecode(t *testing.T, lines [][]byte) {
	t.Helper()
	ar := new(Arena)
	for i, line := range lines {
		var got, want Entry
		gf, gerr := DecodeIn(line, &got, ar, false)
		wf, werr := Decode(line, &want)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("line %d %q: with an Arena %v, without %v", i, line, gerr, werr)
		}
		if werr != nil {
			continue
		}
		if !reflect.DeepEqual(want, got) { // cmp.Diff only to tell how: it is slow for a fuzz target
			t.Fatalf("line %d %q: with an Arena (-without +with):\n%s", i, line, cmp.Diff(want, got))
		}
		if gf.Seq != wf.Seq || gf.Prev != wf.Prev || gf.Hash != wf.Hash || !bytes.Equal(gf.Body, wf.Body) {
			t.Fatalf("line %d: facts %+v with an Arena, %+v without", i, gf, wf)
		}
	}
	// A light decoder refuses what the full one refuses, with the same
	// error, and reads the same but for the fields it leaves zero.
	ar = new(Arena)
	for i, line := range lines {
		var got, want Entry
		gf, gerr := DecodeIn(line, &got, ar, true)
		wf, werr := Decode(line, &want)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("line %d %q: light %v, full %v", i, line, gerr, werr)
		}
		if werr != nil {
			continue
		}
		if lw := lightened([]Entry{want}); !reflect.DeepEqual(lw, []Entry{got}) {
			t.Fatalf("line %d %q: light (-full, lightened +light):\n%s", i, line, cmp.Diff(lw, []Entry{got}))
		}
		if gf.Seq != wf.Seq || gf.Prev != wf.Prev || gf.Hash != wf.Hash || !bytes.Equal(gf.Body, wf.Body) {
			t.Fatalf("line %d: facts %+v light, %+v full", i, gf, wf)
		}
	}
}

type arenaCase struct {
	name  string
	lines [][]byte
}

// arenaCases are runs of lines in which a field's value changes in ways a
// reader that remembers the last value could miss: one byte longer or
// shorter, an escape where the value ended, non-ASCII, the value as a
// prefix of the next, a refused line between two good ones.
func arenaCases() []arenaCase {
	line := func(edit func(e *Entry)) []byte {
		e := sample()
		edit(e)
		e.Hash, _ = e.ComputeHash()
		b, err := e.MarshalJSON()
		if err != nil {
			panic(err)
		}
		return b
	}
	set := func(v string) func(e *Entry) {
		return func(e *Entry) {
			e.Server, e.Tool, e.Principal, e.Origin, e.Tier, e.Reason = v, v+"t", v, v, v, v
			e.Roles, e.Rules = []string{v, v + "2"}, []string{v, v, v, v, v}
			e.Caps = []Cap{{Kind: v, Path: "/" + v}}
		}
	}
	var cases []arenaCase
	// Digests the light decoder checks without decoding: all zeros, an
	// upper-case digit, a digit short, in each optional digest.
	good := line(func(e *Entry) {})
	for _, key := range []string{`"args_hash":"`, `"envelope":"`, `"policy_hash":"`, `"tool_schema_hash":"`} {
		at := bytes.Index(good, []byte(key)) + len(key)
		for name, edit := range map[string]func(b []byte) []byte{
			"zeros":       func(b []byte) []byte { copy(b[at:], strings.Repeat("0", 64)); return b },
			"upper":       func(b []byte) []byte { b[at+63] = 'A'; return b },
			"short":       func(b []byte) []byte { return append(b[:at+63:at+63], b[at+64:]...) },
			"not hex":     func(b []byte) []byte { b[at] = 'g'; return b },
			"one nonzero": func(b []byte) []byte { copy(b[at:], strings.Repeat("0", 63)); return b },
		} {
			cases = append(cases, arenaCase{key + " " + name, [][]byte{good, edit(bytes.Clone(good)), good}})
		}
	}
	for _, pair := range [][2]string{
		{"fs", "fsx"}, {"fsx", "fs"}, {"fs", `fs"`}, {"fs", `fs\`}, {"fs", "fs\n"},
		{"fs", "fs\u00e9"}, {"fs\u00e9", "fs"}, {"abcdefghijklmnop", "abcdefghijklmnopq"},
		{"abcdefghijklmnopq", "abcdefghijklmnop"}, {"a", "b"}, {"same", "same"},
		{strings.Repeat("long", 40), strings.Repeat("long", 40) + "!"},
	} {
		a, b := line(set(pair[0])), line(set(pair[1]))
		cases = append(cases, arenaCase{fmt.Sprintf("%q then %q", pair[0], pair[1]), [][]byte{a, b, a}})
		// The second line with its value cut short, or a quote past it.
		cases = append(cases, arenaCase{fmt.Sprintf("%q then broken", pair[0]), [][]byte{a, b[:len(b)/2], bytes.Replace(b, []byte(`"server":"`), []byte(`"server":""`), 1), a}})
	}
	return cases
}

// TestDecodeArenaCases runs arenaCases through checkArenaDecode.
func TestDecodeArenaCases(t *testing.T) {
	for _, tc := range arenaCases() {
		t.Run(tc.name, func(t *testing.T) { checkArenaDecode(t, tc.lines) })
	}
}

// checkTimeFields holds timeFields, the word-at-a-time reader of a time,
// to timestampSlow on the 32 bytes of b: both accept or both refuse, and
// read the same time.
func checkTimeFields(t *testing.T, b []byte) {
	t.Helper()
	y, mo, dd, h, mi, s, ns, ok := timeFields(b)
	d := decoder{b: b, build: true}
	want := d.timestampSlow()
	if ok != (d.err == nil) {
		t.Fatalf("%q: timeFields ok %v, timestampSlow error %v", b, ok, d.err)
	}
	if got := time.Date(y, time.Month(mo), dd, h, mi, s, ns, time.UTC); ok && got != want {
		t.Fatalf("%q: timeFields read %v, timestampSlow %v", b, got, want)
	}
}

// TestTimeFields puts every byte value in every position of valid times
// (and a few times at the edges of their fields' ranges).
func TestTimeFields(t *testing.T) {
	for _, s := range []string{
		"2026-11-29T12:00:00.000000001Z", "2024-02-29T23:59:59.999999999Z", "2023-02-29T00:00:00.000000000Z",
		"0000-01-01T00:00:00.000000000Z", "9999-12-31T23:59:59.999999999Z", "2026-04-31T00:00:00.000000000Z",
		"2026-00-10T00:00:00.000000000Z", "2026-13-10T00:00:00.000000000Z", "2026-01-00T00:00:00.000000000Z",
		"2026-01-10T24:00:00.000000000Z", "2026-01-10T00:60:00.000000000Z", "2026-01-10T00:00:60.000000000Z",
		"2100-02-29T00:00:00.000000000Z", "2000-02-29T00:00:00.000000000Z",
	} {
		base := []byte(s + `",`)
		checkTimeFields(t, base)
		for pos := range 30 {
			for c := range 256 {
				b := bytes.Clone(base)
				b[pos] = byte(c)
				checkTimeFields(t, b)
			}
		}
	}
	// The fast path takes the times a Log writes.
	if _, _, _, _, _, _, _, ok := timeFields([]byte(`2026-11-29T12:00:00.000000001Z","`)); !ok {
		t.Error("timeFields refused a time in the stored form")
	}
}

// FuzzTimeFields holds timeFields to timestampSlow on arbitrary bytes.
func FuzzTimeFields(f *testing.F) {
	f.Add([]byte(`2026-11-29T12:00:00.000000001Z","`))
	f.Add([]byte(`2024-02-29T23:59:59.999999999Z","`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 32 {
			return
		}
		checkTimeFields(t, b[:32])
	})
}

// TestToolSchemaKeyError: the tool_schema_hash key, tested in two parts,
// is named whole in an error, at the offset where it starts, whichever part
// is wrong (from a review).
func TestToolSchemaKeyError(t *testing.T) {
	e := sample()
	e.Hash, _ = e.ComputeHash()
	good, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(good, []byte(`,"tool_schema_hash":`))
	for _, bad := range []string{`"tool_schema_hasX"`, `"tool_schemX_hash"`, `"tool_schema_hash "`} {
		line := bytes.Replace(good, []byte(`"tool_schema_hash"`), []byte(bad), 1)
		_, err := Decode(line, nil)
		want := fmt.Sprintf("byte %d: want %q", at, `,"tool_schema_hash":`)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v; want it to say %s", bad, err, want)
		}
	}
}

// lightened returns ents with the fields a light DecodeIn leaves zero
// set to zero.
func lightened(ents []Entry) []Entry {
	if ents == nil {
		return nil
	}
	out := make([]Entry, len(ents))
	for i, e := range ents {
		e.Session, e.Time = "", time.Time{}
		e.ArgsHash, e.Envelope, e.PolicyHash, e.ToolSchemaHash = Digest{}, Digest{}, Digest{}, Digest{}
		out[i] = e
	}
	return out
}
