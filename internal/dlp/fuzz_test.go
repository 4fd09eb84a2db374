package dlp

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
)

// fuzzSeeds are short texts of the corpus, one per template or category: the fuzzer
// spends its minimisation time (a minute per new input by default) on each byte of an
// interesting input, so long seeds stall it.
func fuzzSeeds(f *testing.F) []string {
	var seeds []string
	seen := map[string]bool{}
	for _, s := range loadPositives(f) {
		if key := fmt.Sprint(s.line, s.want[0].Kind); len(s.text) <= 300 && !seen[key] {
			seen[key] = true
			seeds = append(seeds, s.text)
		}
	}
	for _, n := range loadNegatives(f) {
		if len(n.text) <= 200 && !seen[n.cat] {
			seen[n.cat] = true
			seeds = append(seeds, n.text)
		}
	}
	return append(seeds, "", "\xff", "gh\u200bp_", "-----BEGIN PRIVATE KEY-----", "a://b:c@d", "%3A%2F%2Fa%3Ab%40c",
		"password=", `"password":"\"`, "4111 1111 1111 1111", "eyJhbGciOiJub25lIn0.e30.", "AKIA", "Password=x;",
		"host=a password=b", "Authorization: Bearer x", "\xed\xa0\x80", "sig=a&sv=b")
}

// FuzzScan checks Scan and Redact on any input: no panic; spans in range, sorted, of
// known kinds and on rune boundaries; Redact equal to a naive reference built from a
// byte mask, and never keeping the text of a finding; every token the regular-expression
// reference finds is covered by a finding.
func FuzzScan(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(checkScan)
}

func checkScan(t *testing.T, s string) {
	{
		fs := Scan(s, nil)
		starts := map[int]bool{len(s): true}
		for i := range s {
			starts[i] = true
		}
		for i, fd := range fs {
			if fd.Start < 0 || fd.End > len(s) || fd.Start >= fd.End {
				t.Fatalf("Scan(%q): span out of range: %v", s, fd)
			}
			if !fd.Kind.Known() {
				t.Fatalf("Scan(%q): unknown kind %q", s, fd.Kind)
			}
			if !starts[fd.Start] || !starts[fd.End] {
				t.Fatalf("Scan(%q): %v is not on rune boundaries", s, fd)
			}
			if i > 0 && compareFindings(fs[i-1], fd) >= 0 {
				t.Fatalf("Scan(%q): findings not sorted or duplicated: %v", s, fs)
			}
		}

		r := Redact(s, fs)
		if want := naiveRedact(s, fs); r != want {
			t.Fatalf("Redact(%q, %v) = %q, want %q", s, fs, r, want)
		}
		masked := []byte(s)
		for _, fd := range fs {
			for k := fd.Start; k < fd.End; k++ {
				masked[k] = 0
			}
		}
		for _, fd := range fs {
			text := s[fd.Start:fd.End]
			if len(text) < 8 || strings.ContainsAny(text, "[]") || strings.Contains(string(masked), text) || inMarker(text, fs) {
				continue // too short to mean anything, or present elsewhere in s
			}
			if strings.Contains(r, text) {
				t.Fatalf("Redact(%q) = %q still holds %q", s, r, text)
			}
		}

		for _, ref := range referenceScan(s) {
			if !slices.ContainsFunc(fs, func(fd Finding) bool { return fd.Start <= ref.Start && ref.End <= fd.End }) {
				t.Fatalf("Scan(%q) = %v misses the reference's %v (%q)", s, fs, ref, s[ref.Start:ref.End])
			}
		}
	}
}

// naiveRedact builds Redact's result from a byte mask: every maximal run of covered
// bytes becomes one marker, named by the first finding (in sorted order) that covers
// its first byte.
func naiveRedact(s string, fs []Finding) string {
	owner := make([]int, len(s))
	for k := range owner {
		owner[k] = -1
	}
	for i, fd := range fs {
		for k := fd.Start; k < fd.End; k++ {
			if owner[k] < 0 {
				owner[k] = i
			}
		}
	}
	var b strings.Builder
	for k := 0; k < len(s); {
		if owner[k] < 0 {
			b.WriteByte(s[k])
			k++
			continue
		}
		b.WriteString("[REDACTED:" + string(fs[owner[k]].Kind) + "]")
		for k < len(s) && owner[k] >= 0 {
			k++
		}
	}
	return b.String()
}

func inMarker(text string, fs []Finding) bool {
	for _, fd := range fs {
		if strings.Contains("[REDACTED:"+string(fd.Kind)+"]", text) {
			return true
		}
	}
	return false
}

// FuzzRedactJSON checks the JSON redaction on any arguments document: its output is
// strict JSON that decodes again, holds nothing more to find, and is the input itself
// (re-encoded) when nothing was found.
func FuzzRedactJSON(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"a":"4111111111111111","b":[1,{"c":"postgres://u:Zx9pQ2w@h/d"}],"n":5555555555554444}`))
	f.Add([]byte(`{"s":"\u200b\ud83d\ude00\n\"","password":"Zx9pQ2wL","4111111111111111":true}`))
	for _, s := range fuzzSeeds(f)[:60] {
		b, _ := json.Marshal(map[string]string{"text": s})
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d args.Doc
		if d.Decode(data, nil) != nil {
			return
		}
		found := ScanValue(d.Root(), nil)
		out, err := AppendRedacted(nil, d.Root(), nil)
		if err != nil {
			if !strings.Contains(err.Error(), "two members named") {
				t.Fatalf("AppendRedacted(%s): %v", data, err)
			}
			return
		}
		var d2 args.Doc
		if err := d2.Decode(out, nil); err != nil {
			t.Fatalf("AppendRedacted(%s) = %s, which does not decode: %v", data, out, err)
		}
		if len(found) == 0 && string(d.Root().AppendJSON(nil)) != string(d2.Root().AppendJSON(nil)) {
			t.Fatalf("AppendRedacted(%s) = %s changed a document with no findings", data, out)
		}
		if again := ScanValue(d2.Root(), nil); len(again) > 0 {
			t.Fatalf("AppendRedacted(%s) = %s still holds %v", data, out, again)
		}
	})
}

// FuzzScanPrefilter holds Scan's shortcuts for a string shorter than minFinding or with
// no anchor byte to the scanner they skip: the full pass from the first byte finds the
// same.
func FuzzScanPrefilter(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Add("path")
	f.Add("encoding")
	f.Add("pwd=a;")
	f.Add("utf-8")
	f.Add("/home/u/projects/app/internal/server/handler\u200bgo")
	f.Fuzz(func(t *testing.T, s string) {
		ref := fullScan(s)
		got := Scan(s, nil)
		if len(got) != len(ref) {
			t.Fatalf("Scan(%q) = %v, the full pass %v", s, got, ref)
		}
		for i := range got {
			if got[i] != ref[i] {
				t.Fatalf("Scan(%q) = %v, the full pass %v", s, got, ref)
			}
		}
	})
}
