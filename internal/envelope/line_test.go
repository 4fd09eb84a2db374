package envelope

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// referenceLine is the record line as Put wrote it with encoding/json,
// before appendLine: the reference appendLine is held to.
func referenceLine(r Record, nonce [16]byte) ([]byte, error) {
	r.V = Version
	r.Nonce = hex.EncodeToString(nonce[:])
	if r.Redactions == nil {
		r.Redactions = []Redaction{}
	}
	asString := func(raw []byte) []byte {
		if len(raw) > maxRaw {
			raw = raw[:maxRaw]
		}
		b, _ := json.Marshal(strings.ToValidUTF8(string(raw), "\uFFFD"))
		return b
	}
	if !json.Valid(r.Arguments) {
		r.Arguments = asString(r.Arguments)
	}
	if len(r.InputResponses) > 0 && !json.Valid(r.InputResponses) {
		r.InputResponses = asString(r.InputResponses)
	}
	return json.Marshal(&r)
}

// checkLine compares appendLine with referenceLine on r: the same bytes,
// or both an error.
func checkLine(t *testing.T, r Record, nonce [16]byte) {
	t.Helper()
	want, werr := referenceLine(r, nonce)
	prefix := []byte("prefix")
	got, gerr := appendLine(prefix, &r, &nonce)
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("appendLine overwrote what dst held: %q", got)
	}
	got = got[len(prefix):]
	switch {
	case werr != nil && gerr == nil:
		t.Fatalf("json.Marshal fails (%v) but appendLine wrote %q", werr, got)
	case werr == nil && gerr != nil:
		t.Fatalf("appendLine fails (%v) but json.Marshal wrote %q", gerr, want)
	case werr == nil && !bytes.Equal(got, want):
		t.Fatalf("line differs from json.Marshal's\n got %q\nwant %q", got, want)
	}
}

func nest(open, close string, n int, inner string) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

func TestLineIsJSONMarshal(t *testing.T) {
	nonce := [16]byte{0x00, 0x01, 0xab, 0xff, 0x10, 0x9c}
	nasty := []string{
		"", "plain", `"quoted" \back\slash/`, "<script>alert(1)</script> & co",
		"\u2028line\u2029para", "\x00\x01\x07\x08\x0b\x0c\x1f\x7f", "\b\f\n\r\t",
		"\xff\xfe", "a\xe2\x80", "\xe2\x80\xa8", "\xe2\x80", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 beyond",
		"\uFFFD real replacement", "é ü 日本 😀", "\xc0\xaf overlong", strings.Repeat("<&>", 100),
	}
	cases := []struct {
		name string
		r    Record
	}{
		{"typical", Record{Time: t0, Session: "5f0c2a9e", Principal: "alice", Server: "demo", Tool: "read_file", Forwarded: true,
			Arguments: json.RawMessage(`{"path":"/home/u/projects/notes.md"}`)}},
		{"nil redactions and zero record", Record{}},
		{"empty redactions", Record{Time: t0, Arguments: json.RawMessage(`{}`), Redactions: []Redaction{}}},
		{"redactions", Record{Time: t0, Arguments: json.RawMessage(`{"a":1}`), Redactions: []Redaction{
			{Pointer: "/a<b>", Kind: "aws.access_key"}, {Pointer: "/\u2028/~1&", Kind: "\xff"}, {}}}},
		{"nanoseconds", Record{Time: time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.UTC)}},
		{"one nanosecond", Record{Time: time.Date(2026, 1, 2, 3, 4, 5, 1, time.UTC)}},
		{"half-hour zone", Record{Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("IST", 5*3600+1800))}},
		{"negative zone", Record{Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", -9*3600-1800))}},
		{"zone with seconds", Record{Time: time.Date(1900, 1, 1, 0, 0, 0, 0, time.FixedZone("LMT", 17*60+30))}},
		{"zone of -00:00:30", Record{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", -30))}},
		{"zone of 23:59", Record{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 23*3600+59*60))}},
		{"zone of 24 hours fails", Record{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600))}},
		{"zone of -100 hours fails", Record{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", -100*3600))}},
		{"local time", Record{Time: time.Date(2026, 6, 1, 0, 0, 0, 0, time.Local)}},
		{"monotonic reading", Record{Time: time.Now()}},
		{"year 0", Record{Time: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"year 9999", Record{Time: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)}},
		{"year 10000 fails", Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"year -1 fails", Record{Time: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"year 9999 in UTC, 10000 in its zone fails", Record{Time: time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC).In(time.FixedZone("", 2*3600))}},
		{"far future fails", Record{Time: time.Unix(1<<62, 0)}},
	}
	for i, s := range nasty {
		cases = append(cases, struct {
			name string
			r    Record
		}{"nasty string " + string(rune('a'+i)), Record{Time: t0, Session: s, Principal: s, Server: s, Tool: s,
			Redactions: []Redaction{{Pointer: s, Kind: s}}, Arguments: json.RawMessage(`{}`)}})
	}
	args := []string{
		"", " ", "\t\n\r ", "{}", "[]", "1", "-0", "-0.5e+10", "1E-3", "0.0", `"s"`, "null", "true", "false",
		"{ \"a\" :\n1 ,\t\"b\" : [ 1 , 2 ] , \"c\" : { } }",
		`{"html":"<b>&amp;</b>"}`, "{\"ls\":\"\u2028\u2029\"}", `{"escaped":"\u2028\u003c\/\"\\\b\f\n\r\t\u00e9\uD83D\uDE00\ud800"}`,
		"{\"bad utf8\":\"\xff\xfe\"}", "{\"\xe2\x80\":\"cut separator\"}", "{\"k\":\"\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xaa\"}",
		"\xe2\x80\xa8", "\"\xe2\x80", "{\"a\":1}\xe2\x80\xa8",
		`{"a":1,}`, `{'a':1}`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{:1}`, `{"a":1 "b":2}`, `01`, `1.`, `.5`, `-`, `1e`, `1e+`, `+1`,
		`tru`, `nul`, `truex`, `{"a":1} x`, `{}{}`, "{\"a\":\"\x01\"}", `{"a":"\x"}`, `{"a":"\u12G4"}`, `{"a":"\u12"}`, `"\`, `"`,
		`{"a":"unterminated`, `[`, `]`, `{`, `}`, `{"a":[}`, `[1}`, `{"a":1]`, "\x00", "{}\x00", `NaN`, `Infinity`, `-Infinity`,
		`{"a":-01}`, `{"a":1.e5}`, `{"a":00}`, `{"a":"\u0000"}`, "\ufeff{}",
		nest("[", "]", maxFastDepth, "1"), nest("[", "]", maxFastDepth+1, "1"),
		nest(`{"a":`, "}", maxFastDepth, "1"), nest(`{"a":`, "}", maxFastDepth+1, "<&>"),
		nest("[", "]", 10000, ""), nest("[", "]", 10001, ""), nest("[ ", " ]", 200, "{ }"),
		strings.Repeat("x", maxRaw+10), strings.Repeat("é", maxRaw), strings.Repeat("\xff", maxRaw+1),
		"{" + strings.Repeat("é", maxRaw), strings.Repeat("a", maxRaw-1) + "é",
	}
	for i, a := range args {
		cases = append(cases, struct {
			name string
			r    Record
		}{"arguments " + string(rune('A'+i%26)) + string(rune('a'+i/26)), Record{Time: t0, Arguments: json.RawMessage(a)}})
	}
	cases = append(cases, struct {
		name string
		r    Record
	}{"nil arguments", Record{Time: t0, Arguments: nil}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkLine(t, tc.r, nonce)
		})
	}
}

func FuzzRecordLine(f *testing.F) {
	f.Add("s1", "alice", "mail", "send", true, []byte(`{"to":"bob@example.com"}`), "/body", "aws.access_key", int64(1764417600), int64(5), 0, []byte("0123456789abcdef"))
	f.Add("<&>", "\u2028", "\xff", "\x00", false, []byte("{ \"a\" : [1, 2.5e3, \"<\u2029>\"] }"), "", "", int64(-62167219200), int64(0), 3600, []byte{})
	f.Add("", "", "", "", false, []byte("{\"a\":\"\xff\"}"), "\t", "\\", int64(253402300800), int64(0), -86400, []byte{0xff})
	f.Add("é", "日本", "", "", true, []byte(`{"a":`), "~0", "~1", int64(0), int64(999999999), 5*3600+1800, []byte{1, 2})
	f.Fuzz(func(t *testing.T, session, principal, server, tool string, forwarded bool, arguments []byte,
		pointer, kind string, sec, nsec int64, offset int, nonceBytes []byte) {
		var nonce [16]byte
		copy(nonce[:], nonceBytes)
		r := Record{
			Time:    time.Unix(sec, nsec).In(time.FixedZone("", offset)),
			Session: session, Principal: principal, Server: server, Tool: tool,
			Forwarded: forwarded, Arguments: arguments,
		}
		if len(pointer)+len(kind) > 0 {
			r.Redactions = []Redaction{{Pointer: pointer, Kind: kind}, {Pointer: kind, Kind: pointer}}
		}
		checkLine(t, r, nonce)
		// A retry's answers, kept like the arguments.
		r.InputResponses, r.InputRedactions = arguments, r.Redactions
		checkLine(t, r, nonce)
	})
}

// TestPutWritesReferenceLine: what Put writes is the reference line of
// the record with the nonce it wrote, hashed as Hash hashes it; and Put
// leaves the record as it was.
func TestPutWritesReferenceLine(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	in := Record{Time: t0, Session: "s<1>", Tool: "t\u2028", Arguments: json.RawMessage("{ \"a\" : \"&\" }")}
	r := in
	d, err := s.Put(&r)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if diff := cmp.Diff(in, r); diff != "" {
		t.Errorf("Put changed the record (-before +after):\n%s", diff)
	}
	data, err := os.ReadFile(filepath.Join(dir, "2026-11-29.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	line := bytes.TrimSuffix(data, []byte("\n"))
	if Hash(line) != d {
		t.Errorf("Put returned %s, the line hashes to %s", d, Hash(line))
	}
	var got Record
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	nonce, err := hex.DecodeString(got.Nonce)
	if err != nil || len(nonce) != 16 {
		t.Fatalf("nonce %q", got.Nonce)
	}
	want, err := referenceLine(in, [16]byte(nonce))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(line, want) {
		t.Errorf("line\n got %s\nwant %s", line, want)
	}
}

// TestPutRefusesTimeJSONCannotWrite: a time json.Marshal refuses is an
// error, and nothing is written.
func TestPutRefusesTimeJSONCannotWrite(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, at := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 25*3600)),
	} {
		if d, err := s.Put(&Record{Time: at, Arguments: json.RawMessage(`{}`)}); err == nil || !strings.Contains(err.Error(), "time") {
			t.Errorf("Put at %v = %s, %v; want an error about the time", at, d, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files written: %v", ents)
	}
}

var nonceForm = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestNoncesNeverRepeat: the nonces of many records of two stores (two
// seeds) are 32 hex digits and all differ.
func TestNoncesNeverRepeat(t *testing.T) {
	const perStore = 3000
	seen := map[string]bool{}
	for range 2 {
		dir := t.TempDir()
		s, err := Open(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for range perStore {
			if _, err := s.Put(&Record{Time: t0, Arguments: json.RawMessage(`{"to":"bob"}`)}); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		f, err := os.Open(filepath.Join(dir, "2026-11-29.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for sc := bufio.NewScanner(f); sc.Scan(); n++ {
			var r Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if !nonceForm.MatchString(r.Nonce) {
				t.Fatalf("nonce %q is not 32 hex digits", r.Nonce)
			}
			if seen[r.Nonce] {
				t.Fatalf("nonce %s repeats", r.Nonce)
			}
			seen[r.Nonce] = true
		}
		f.Close()
		if n != perStore {
			t.Fatalf("%d records read, want %d", n, perStore)
		}
	}
}
