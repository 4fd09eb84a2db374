package dlp

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestScanJSON(t *testing.T) {
	f := newFaker(20)
	gh := withChecksum("ghp_", f.pick(alnum, 30))
	tests := []struct {
		name string
		in   string
		want []Located
	}{
		{name: "nothing", in: `{"path":"/home/a/x.go","n":[1,2.5,true,null]}`},
		{
			name: "string member",
			in:   `{"q":"token ` + gh + `"}`,
			want: []Located{{Kind: GitHubToken, Pointer: "/q"}},
		},
		{
			name: "nested in arrays",
			in:   `{"a":[{"b":"x"},{"b":["y","card 4111111111111111"]}]}`,
			want: []Located{{Kind: Card, Pointer: "/a/1/b/1"}},
		},
		{
			name: "number",
			in:   `{"pan":5555555555554444}`,
			want: []Located{{Kind: Card, Pointer: "/pan"}},
		},
		{
			name: "member name",
			in:   `{"` + gh + `":1}`,
			want: []Located{{Kind: GitHubToken, Pointer: "/" + gh, InKey: true}},
		},
		{
			name: "pointer escapes",
			in:   `{"a/b":{"c~d":"4111111111111111"}}`,
			want: []Located{{Kind: Card, Pointer: "/a~1b/c~0d"}},
		},
		{
			name: "escaped text is scanned unescaped",
			in:   `{"t":"line\ngh\u0070` + gh[3:] + `\u0020"}`,
			want: []Located{{Kind: GitHubToken, Pointer: "/t"}},
		},
		{
			name: "one entry per kind and place",
			in:   `{"t":"4111111111111111 and 5555555555554444"}`,
			want: []Located{{Kind: Card, Pointer: "/t"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ScanJSON([]byte(tc.in), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ScanJSON(%s) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestRedactJSON(t *testing.T) {
	f := newFaker(21)
	gh := withChecksum("ghp_", f.pick(alnum, 30))
	tests := []struct {
		name   string
		in     string
		redact func(Kind) bool
		want   string
	}{
		{name: "unchanged", in: `{"b":1,"a":[true,null,"x\"y"],"c":{}}`, want: `{"b":1,"a":[true,null,"x\"y"],"c":{}}`},
		{name: "string", in: `{"q":"key ` + gh + ` here"}`, want: `{"q":"key [REDACTED:github.token] here"}`},
		{name: "number becomes a string", in: `{"pan":5555555555554444,"n":12}`, want: `{"pan":"[REDACTED:card]","n":12}`},
		{name: "member name", in: `{"` + gh + `":1}`, want: `{"[REDACTED:github.token]":1}`},
		{
			name:   "only the kinds asked for",
			in:     `{"a":"` + gh + `","b":"4111111111111111"}`,
			redact: func(k Kind) bool { return k == Card },
			want:   `{"a":"` + gh + `","b":"[REDACTED:card]"}`,
		},
		{name: "escapes re-encoded", in: `{"t":"tab\there\u0001 \u00e9 ` + gh + `"}`, want: `{"t":"tab\there\u0001 é [REDACTED:github.token]"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := RedactJSON([]byte(tc.in), nil, tc.redact)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("RedactJSON(%s) =\n  %s\nwant\n  %s", tc.in, got, tc.want)
			}
			if !json.Valid(got) {
				t.Errorf("RedactJSON output is not JSON: %s", got)
			}
		})
	}
}

func TestRedactJSONErrors(t *testing.T) {
	f := newFaker(22)
	a, b := withChecksum("ghp_", f.pick(alnum, 30)), withChecksum("ghp_", f.pick(alnum, 30))
	_, _, err := RedactJSON([]byte(`{"`+a+`":1,"`+b+`":2}`), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "two members named") {
		t.Errorf("colliding member names: err = %v", err)
	}
	// A member already named like the marker, in another case: after
	// redaction the object would hold two keys a case-insensitive reader
	// takes for one.
	in := []byte(`{"` + a + `":1,"[redacted:GITHUB.TOKEN]":2}`)
	if _, found, _ := RedactJSON(in, nil, nil); len(found) == 0 {
		t.Fatalf("no finding in %s", in)
	}
	got, _, err := RedactJSON(in, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "two members named") {
		t.Errorf("member names colliding but for case: got %s, err = %v", got, err)
	}
	_, _, err = RedactJSON([]byte(`{"a":1,"a":2}`), nil, nil)
	var se *args.SyntaxError
	if !errors.As(err, &se) {
		t.Errorf("duplicate keys: err = %v, want an args.SyntaxError", err)
	}
	if _, err := ScanJSON([]byte(`[1]`), nil); err == nil {
		t.Error("ScanJSON accepted a top-level array")
	}
	if _, err := AppendRedacted(nil, args.Value{}, nil); err == nil {
		t.Error("AppendRedacted accepted the zero Value")
	}
}

func TestScanValueDeep(t *testing.T) {
	const depth = 150
	in := strings.Repeat(`{"a":[`, depth) + `"4111111111111111"` + strings.Repeat(`]}`, depth)
	got, err := ScanJSON([]byte(in), &args.Limits{MaxDepth: 2*depth + 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []Located{{Kind: Card, Pointer: strings.Repeat("/a/0", depth)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ScanJSON of a deep document (-want +got):\n%s", diff)
	}
}

func TestScanValueNoAllocation(t *testing.T) {
	var d args.Doc
	if err := d.Decode([]byte(`{"path":"/home/a/main.go","edits":[{"old":"x := 1","new":"x := 2"}],"n":12,"ok":true}`), nil); err != nil {
		t.Fatal(err)
	}
	var dst []Located
	if n := testing.AllocsPerRun(20, func() { dst = ScanValue(d.Root(), dst[:0]) }); n != 0 {
		t.Errorf("ScanValue of clean arguments allocates %v times", n)
	}
}

// scanValueRef is ScanValue written plainly: every string, number and member name
// scanned on its own by the full pass (a fresh scanner each, none of Scan's or
// ScanValue's shortcuts), one entry per kind and place.
func scanValueRef(v args.Value) []Located {
	var out []Located
	var addRuns func(s, ptr string, inKey, binary bool)
	add := func(fs []Finding, ptr string, inKey bool) {
	next:
		for _, f := range fs {
			for _, l := range out {
				if l.Kind == f.Kind && l.Pointer == ptr && l.InKey == inKey {
					continue next
				}
			}
			out = append(out, Located{Kind: f.Kind, Pointer: ptr, InKey: inKey})
		}
	}
	// addRuns adds what a fresh scanner finds in the base64 s holds, whole (in
	// a binary field) and in its runs at every alignment, down to
	// maxDecodeDepth, as found in base64.
	var decoded func(s, ptr string, inKey bool, depth int) bool
	runs := func(s, ptr string, inKey bool, depth int, skipWhole bool) {
		for i := 0; depth < maxDecodeDepth; {
			r, ok := nextRun(s, i)
			if !ok {
				break
			}
			i = r.end
			for a := range 4 {
				if r.aligns&(1<<a) != 0 && !(a == 0 && skipWhole && r.start == 0 && r.end == len(s)) {
					dec := string(decodeRun(nil, s, r, a))
					if !decoded(dec, ptr, inKey, depth+1) {
						tails(r, dec, func(t string) { decoded(t, ptr, inKey, depth+1) })
					}
				}
			}
		}
	}
	hits := 0
	decoded = func(s, ptr string, inKey bool, depth int) bool {
		h := hits
		fs := fullScan(s)
		if len(fs) > 0 {
			hits++
		}
		n := len(out)
		add(fs, ptr, inKey)
		for k := n; k < len(out); k++ {
			out[k].InBase64 = true
		}
		runs(s, ptr, inKey, depth, false)
		return hits != h
	}
	addRuns = func(s, ptr string, inKey, binary bool) {
		if len(s) < minFinding {
			return
		}
		whole := false
		if binary {
			if dec, ok := decodeBase64(s); ok {
				whole = true
				decoded(dec, ptr, inKey, 1)
			}
		}
		runs(s, ptr, inKey, 0, whole)
	}
	var walk func(v args.Value, ptr string)
	walk = func(v args.Value, ptr string) {
		switch v.Kind() {
		case args.String:
			add(fullScan(v.Str()), ptr, false)
			binary := strings.HasSuffix(ptr, "/blob") || strings.HasSuffix(ptr, "/data")
			addRuns(v.Str(), ptr, false, binary)
		case args.Number:
			add(fullScan(v.Raw()), ptr, false)
		case args.Array:
			for i := range v.Len() {
				walk(v.Index(i), ptr+"/"+strconv.Itoa(i))
			}
		case args.Object:
			for i := range v.Len() {
				k, e := v.Member(i)
				p := ptr + "/" + string(args.AppendToken(nil, k))
				add(fullScan(k), p, true)
				addRuns(k, p, true, false)
				walk(e, p)
			}
		}
	}
	walk(v, "")
	return out
}

// FuzzScanValue holds ScanValue, which reuses one scanner for every string of a
// document, to scanValueRef.
func FuzzScanValue(f *testing.F) {
	gh := withChecksum("ghp_", strings.Repeat("a1B2", 7)+"xy")
	for _, s := range []string{
		`{"path":"/home/a/x.go","n":[1,2.5,true,null]}`,
		`{"a":"password=\"x y\" and more","b":"Password=hunter2;Server=x","c":"pwd='q'"}`,
		`{"u":"postgres://u:p@h/db","v":"https://a:b@c.example/","w":"4111 1111 1111 1111"}`,
		`{"k":"` + gh + `","AKIAIOSFODNN7EXAMPLE":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}`,
		`{"e":"export API_TOKEN=\"abc\" SECRET_KEY='def'","f":"{Pwd=x}"}`,
		// The scanner is reused: what it remembered of one string must not
		// answer for the next, whose value starts at the same offset.
		`{"a":"password=hunter2hunter2 tail","b":"password=x"}`,
		`{"a":"Pwd=hunter2hunter2;x","b":"Pwd=abc"}`,
		`{"a":"token=\"aaaaaaaaaaaaaaaaaa\" z","b":"token=\"b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d args.Doc
		if d.Decode(data, nil) != nil {
			return
		}
		got, want := ScanValue(d.Root(), nil), scanValueRef(d.Root())
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("ScanValue(%s) differs from scanning each string alone (-want +got):\n%s", data, diff)
		}
	})
}
