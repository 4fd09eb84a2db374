package dlp

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/google/go-cmp/cmp"
)

// b64Fixture is a plain text of testdata/base64 with the secrets Scan finds in it, and
// the parts of it that must not survive redaction in any encoding.
type b64Fixture struct {
	file  string
	kinds []Kind
	parts []string // secret text that must not come back, plain or encoded
}

var b64Fixtures = []b64Fixture{
	{"aws.txt", []Kind{AWSAccessKey, AWSSecretKey}, []string{"AKIAQYLPMN5HHHFIQR7Z", "q8F2kLm9PzXc4RtY7uWv1BnJ3dHs6GaE0oKiQwTe"}},
	{"id_ed25519.txt", []Kind{PrivateKey}, []string{"QyNTUxOQAAACCq3lKg7dQpVb2nB9cJ4mYf0tWxU1zR8eHkLo5sA6iGvQAAAJgc0Zq1HNGa"}},
}

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/base64/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	std    = base64.StdEncoding.EncodeToString
	rawStd = base64.RawStdEncoding.EncodeToString
	urlEnc = base64.URLEncoding.EncodeToString
	rawURL = base64.RawURLEncoding.EncodeToString
)

func bs(s string) []byte { return []byte(s) }

// wrapWith wraps s every width bytes with sep between the lines.
func wrapWith(s string, width int, sep string) string {
	return strings.ReplaceAll(wrap(s, width), "\n", sep)
}

// b64Spellings are the ways an attacker (or a careless tool) may hand a plain text p
// to a client as base64 in a string: each returns the string, and whether the client
// gets a value it can still use after redaction (false: the whole run is replaced).
var b64Spellings = []struct {
	name     string
	spell    func(p string) string
	faithful bool // redaction keeps the run base64 of the redacted text (else it may not)
}{
	{"standard, padded", func(p string) string { return std(bs(p)) }, true},
	{"standard, unpadded", func(p string) string { return rawStd(bs(p)) }, true},
	{"URL-safe, padded", func(p string) string { return urlEnc(bs(p)) }, true},
	{"URL-safe, unpadded", func(p string) string { return rawURL(bs(p)) }, true},
	{"PEM-wrapped at 64", func(p string) string { return wrapWith(std(bs(p)), 64, "\n") }, true},
	{"MIME-wrapped at 76, CRLF", func(p string) string { return wrapWith(std(bs(p)), 76, "\r\n") }, true},
	{"wrapped by JSON \\n escapes in text", func(p string) string { return wrapWith(std(bs(p)), 64, `\n`) }, true},
	{"inside a sentence", func(p string) string { return "here is the file: " + std(bs(p)) + " - thanks!" }, true},
	{"after key=", func(p string) string { return "key=" + std(bs(p)) }, true},
	{"glued to one letter", func(p string) string { return "key" + std(bs(p)) }, true},
	{"glued to two letters", func(p string) string { return "ke" + std(bs(p)) }, true},
	{"glued to three letters", func(p string) string { return "k" + rawStd(bs(p)) + "zz" }, false},
	{"percent-encoded in a URL query", func(p string) string {
		return "https://x.example/?d=" + url.QueryEscape(std(bs(p))) + "&v=1"
	}, true},
	{"secret at byte offset 1", func(p string) string { return std(bs("#" + p)) }, true},
	{"secret at byte offset 2", func(p string) string { return std(bs("#!" + p)) }, true},
	{"a fragment of a larger blob, from char 1", func(p string) string { return std(bs("##" + p))[1:] }, true},
	{"a fragment of a larger blob, from char 2", func(p string) string { return std(bs("##" + p))[2:] }, true},
	{"a fragment of a larger blob, from char 3", func(p string) string { return std(bs("#####" + p))[3:] }, true},
	{"a fragment that starts inside the text's first byte", func(p string) string { return std(bs("##" + p))[3:] }, false},
	{"base64 of base64", func(p string) string { return std(bs(std(bs(p)))) }, true},
	{"base64 of URL-safe base64 wrapped", func(p string) string { return wrapWith(std(bs(rawURL(bs(p)))), 76, "\n") }, true},
	{"base64 of base64 of base64", func(p string) string { return rawURL(bs(std(bs(std(bs(p)))))) }, true},
	{"base64 of a sentence holding base64", func(p string) string { return std(bs("payload=" + std(bs(p)) + ";")) }, true},
}

// TestBase64InText: a secret in base64 anywhere in a string, in every spelling, is found
// at the string's pointer, and redacted inside the run so that nothing of it comes back
// in any encoding, the text around the run unchanged.
func TestBase64InText(t *testing.T) {
	for _, fx := range b64Fixtures {
		plain := readFixture(t, fx.file)
		for _, sp := range b64Spellings {
			for _, where := range []struct {
				name, tmpl, ptr string
			}{
				{"result text", `{"content":[{"type":"text","text":%s}]}`, "/content/0/text"},
				{"argument", `{"url":%s,"n":1}`, "/url"},
				{"image data", `{"content":[{"type":"image","mimeType":"image/png","data":%s}]}`, "/content/0/data"},
			} {
				value := sp.spell(plain)
				if where.name == "image data" && value != strings.TrimSpace(value) {
					continue
				}
				t.Run(fx.file+"/"+sp.name+"/"+where.name, func(t *testing.T) {
					doc := strings.Replace(where.tmpl, "%s", jsonString(value), 1)
					checkBase64Doc(t, doc, where.ptr, fx, value, sp.faithful, where.name == "image data")
				})
			}
		}
	}
}

func checkBase64Doc(t *testing.T, doc, ptr string, fx b64Fixture, value string, faithful, binary bool) {
	t.Helper()
	var d args.Doc
	if err := d.Decode([]byte(doc), nil); err != nil {
		t.Fatal(err)
	}
	found := ScanValue(d.Root(), nil)
	var want []Located
	for _, k := range fx.kinds {
		want = append(want, Located{Kind: k, Pointer: ptr, InBase64: true})
	}
	if diff := cmp.Diff(want, found); diff != "" {
		t.Errorf("ScanValue (-want +got):\n%s", diff)
	}
	out, err := AppendRedacted(nil, d.Root(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var r args.Doc
	if err := r.Decode(out, nil); err != nil {
		t.Fatalf("redacted output %s: %v", out, err)
	}
	if again := ScanValue(r.Root(), nil); len(again) > 0 {
		t.Errorf("the redacted output still holds %v", again)
	}
	for _, part := range fx.parts {
		if enc, ok := holdsEncoded(string(out), part); ok {
			t.Errorf("the redacted output holds %q as %q", part, enc)
		}
	}
	p, err := args.ParsePointer(ptr)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	p.Select(r.Root(), func(v args.Value, _ args.Loc) { got = v.Str() })
	if binary {
		// A binary field that decodes as a whole is written back as the
		// standard base64 of its redacted bytes.
		if !decodesToMarker(got, 3) {
			t.Errorf("the redacted value %q does not decode to a redaction marker", got)
		}
		return
	}
	if !faithful {
		if !decodesToMarker(got, 3) {
			t.Errorf("the redacted value %q neither holds nor decodes to a redaction marker", got)
		}
		return
	}
	// The text around the run is unchanged, and the run still decodes (to the
	// redacted text).
	if pre := prefixBefore(value); !strings.HasPrefix(got, pre) {
		t.Errorf("the text before the run changed: %q, want it to start with %q", got, pre)
	}
	if suf := suffixAfter(value); !strings.HasSuffix(got, suf) {
		t.Errorf("the text after the run changed: %q, want it to end with %q", got, suf)
	}
	if strings.Contains(got, "[REDACTED:") {
		t.Errorf("a run that can be re-encoded was replaced by a marker: %q", got)
	}
	if !decodesToMarker(got, 3) {
		t.Errorf("the redacted value %q does not decode to a redaction marker", got)
	}
}

// prefixBefore and suffixAfter are the text around the spellings' runs.
func prefixBefore(v string) string {
	for _, p := range []string{"here is the file: ", "key=", "https://x.example/?d="} {
		if strings.HasPrefix(v, p) {
			return p
		}
	}
	return ""
}

func suffixAfter(v string) string {
	for _, s := range []string{" - thanks!", "&v=1"} {
		if strings.HasSuffix(v, s) {
			return s
		}
	}
	return ""
}

// decodesToMarker reports whether s, or some base64 run of it decoded up to depth
// times (at any alignment), holds a redaction marker.
func decodesToMarker(s string, depth int) bool {
	if strings.Contains(s, "[REDACTED:") {
		return true
	}
	if depth == 0 {
		return false
	}
	s = strings.NewReplacer("%2B", "+", "%2F", "/", "%3D", "=", "\\n", "", "\\r", "", "\n", "", "\r", "").Replace(s)
	for _, run := range b64RunRe.FindAllString(s, -1) {
		run = strings.NewReplacer("-", "+", "_", "/").Replace(strings.TrimRight(run, "="))
		for a := range 4 {
			g := strings.Repeat("A", a) + run
			if len(g)%4 == 1 {
				g = g[:len(g)-1]
			}
			if dec, err := base64.RawStdEncoding.DecodeString(g); err == nil && decodesToMarker(string(dec), depth-1) {
				return true
			}
		}
	}
	return false
}

var b64RunRe = regexp.MustCompile(`[A-Za-z0-9+/_-]+=*`)

// holdsEncoded reports whether s holds part as it is, or its base64 in either alphabet at
// any of the three byte alignments (the characters that part alone decides), or the
// base64 of that base64.
func holdsEncoded(s, part string) (string, bool) {
	unwrapped := strings.NewReplacer("\\n", "", "\\r", "", "\n", "", "\r", "", "%2B", "+", "%2F", "/", "%3D", "=").Replace(s)
	var encs []string
	for pad := range 3 {
		e := std(bs(strings.Repeat("#", pad) + part))
		core := e[4 : len(e)-4] // the characters that part alone decides
		encs = append(encs, part, core, strings.NewReplacer("+", "-", "/", "_").Replace(core))
		e2 := std(bs(e))
		encs = append(encs, e2[8:len(e2)-8])
	}
	for _, e := range encs {
		if strings.Contains(unwrapped, e) {
			return e, true
		}
	}
	return "", false
}

// TestBase64Negatives: strings that are base64 of nothing secret, or not base64 at all
// (paths, identifiers, hashes, a PNG), are found to hold nothing and left as they are.
func TestBase64Negatives(t *testing.T) {
	for line := range strings.Lines(readFixture(t, "negatives.txt")) {
		s := strings.TrimSuffix(line, "\n")
		for _, key := range []string{"text", "data"} {
			t.Run(key+"/"+s, func(t *testing.T) {
				doc := `{"` + key + `":` + jsonString(s) + `}`
				var d args.Doc
				if err := d.Decode([]byte(doc), nil); err != nil {
					t.Fatal(err)
				}
				if found := ScanValue(d.Root(), nil); len(found) > 0 {
					t.Errorf("ScanValue(%s) = %v", doc, found)
				}
				out, err := AppendRedacted(nil, d.Root(), nil)
				if err != nil || string(out) != doc {
					t.Errorf("AppendRedacted(%s) = %s, %v", doc, out, err)
				}
			})
		}
	}
}

// TestBase64Depth: base64 is decoded at most maxDecodeDepth times, so four layers are
// text; and a secret found both as it is and in base64 in one string is one entry, not
// marked as base64.
func TestBase64Depth(t *testing.T) {
	plain := readFixture(t, "aws.txt")
	four := std(bs(std(bs(std(bs(std(bs(plain))))))))
	found, err := ScanJSON([]byte(`{"t":"`+four+`"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 0 {
		t.Errorf("four layers of base64: %v, want nothing (the depth is capped)", found)
	}
	both, _ := json.Marshal(map[string]string{"t": "AKIAQYLPMN5HHHFIQR7Z and " + std(bs(plain))})
	found, err = ScanJSON(both, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Located{{Kind: AWSAccessKey, Pointer: "/t"}, {Kind: AWSSecretKey, Pointer: "/t", InBase64: true}}
	if diff := cmp.Diff(want, found); diff != "" {
		t.Errorf("plain and base64 in one string (-want +got):\n%s", diff)
	}
}

// jsonString is s as a JSON string, as AppendRedacted writes it.
func jsonString(s string) string { return string(appendJSONString(nil, s)) }

// FuzzBase64Spellings: base64 of a text in which Scan finds something is found to hold
// the same kinds at the same pointer, in every spelling of base64_test.go's table that
// decodes to the text whole (not the fragments), and redacting it leaves nothing to
// find. The text is ASCII: a finding broken up by non-ASCII bytes is not looked for in
// base64 (minASCII).
func FuzzBase64Spellings(f *testing.F) {
	for _, s := range fuzzSeeds(f)[:40] {
		f.Add(s)
	}
	for _, fx := range b64Fixtures {
		f.Add(readFixture(f, fx.file))
	}
	f.Fuzz(func(t *testing.T, plain string) {
		for i := range len(plain) {
			if c := plain[i]; c >= 0x80 || c < 0x20 && c != '\n' && c != '\t' && c != '\r' {
				return
			}
		}
		fs := Scan(plain, nil)
		if len(fs) == 0 {
			return
		}
		for _, sp := range b64Spellings {
			if strings.Contains(sp.name, "fragment") {
				continue // loses bytes of the text
			}
			value := sp.spell(plain)
			doc := `{"t":` + jsonString(value) + `}`
			var d args.Doc
			if err := d.Decode([]byte(doc), nil); err != nil {
				continue // too long or deep for the default limits
			}
			found := ScanValue(d.Root(), nil)
			// A spelling that puts bytes around the run (a sentence, a
			// URL, a key=, letters glued on) changes what the decoded
			// text's first and last tokens read as, and so may change
			// a finding's kind ("aws_secret_access_key = …" read as a
			// configuration secret, or the key itself as an AWS key):
			// there a finding of any kind is enough. The others find
			// the same kinds.
			context := strings.Contains(sp.name, "sentence") || strings.Contains(sp.name, "URL query") ||
				strings.Contains(sp.name, "key=") || strings.Contains(sp.name, "glued")
			atT := func(l Located) bool { return l.Pointer == "/t" }
			if context && !slices.ContainsFunc(found, atT) {
				t.Errorf("%s of %q: found %v, want a finding at /t", sp.name, plain, found)
			}
			for _, fd := range fs {
				if !context && !slices.ContainsFunc(found, func(l Located) bool { return l.Kind == fd.Kind && l.Pointer == "/t" }) {
					t.Errorf("%s of %q: found %v, want %s at /t", sp.name, plain, found, fd.Kind)
				}
			}
			out, err := AppendRedacted(nil, d.Root(), nil)
			if err != nil {
				continue // member names that redaction would make equal
			}
			var r args.Doc
			if err := r.Decode(out, nil); err != nil {
				t.Fatalf("%s: AppendRedacted(%s) = %s: %v", sp.name, doc, out, err)
			}
			if again := ScanValue(r.Root(), nil); len(again) > 0 {
				t.Errorf("%s of %q: the redacted %s still holds %v", sp.name, plain, out, again)
			}
		}
	})
}
