package schema

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aegis-mcp/aegis/internal/args"
)

const listing = `{
	"type": "object",
	"properties": {
		"limit": {"type": "integer", "minimum": 1, "maximum": 1000},
		"q":     {"type": "string"},
		"pages": {"type": "array", "items": {"type": "object", "properties": {"size": {"type": "number"}}}},
		"opt":   {"anyOf": [{"type": "integer"}, {"type": "null"}]},
		"free":  {"type": "object", "additionalProperties": {"type": "number"}},
		"loose": {}
	}
}`

func listingOptions() *Options {
	return &Options{Clamp: map[string]Range{
		"/limit":        Ceiling(100),
		"/pages/*/size": Ceiling(50),
		"/opt":          Between(0, 10),
		"/free/limit":   Ceiling(10),
		"/loose":        Ceiling(5),
	}}
}

func TestClamp(t *testing.T) {
	s := mustCompile(t, listing, listingOptions())
	tests := []struct {
		name, args  string
		out         string // "" when nothing changes
		clamped     []string
		wantVerdict string
	}{
		{name: "under the ceiling", args: `{"limit":50}`},
		{name: "at the ceiling", args: `{"limit":100}`},
		{name: "1e9 clamped", args: `{"limit":1000000000}`, out: `{"limit":100}`, clamped: []string{"/limit"}},
		{name: "1e9 written with an exponent", args: `{"limit":1e9}`, out: `{"limit":100}`, clamped: []string{"/limit"}},
		{name: "over the schema's own maximum too", args: `{"limit":5000}`, out: `{"limit":100}`, clamped: []string{"/limit"}},
		{name: "fraction over the ceiling", args: `{"limit":100.5}`, out: `{"limit":100}`, clamped: []string{"/limit"}},
		{name: "under the schema's minimum is not clamped", args: `{"limit":-5}`, wantVerdict: "/limit minimum"},
		{name: "string is denied, not clamped", args: `{"limit":"1000"}`, wantVerdict: "/limit clamp"},
		{name: "bool is denied", args: `{"limit":true}`, wantVerdict: "/limit clamp"},
		{name: "array is denied", args: `{"limit":[1000]}`, wantVerdict: "/limit clamp"},
		{name: "object is denied", args: `{"limit":{"n":1000}}`, wantVerdict: "/limit clamp"},
		{name: "null is left to the schema", args: `{"limit":null}`, wantVerdict: "/limit type"},
		{name: "null allowed by the schema", args: `{"opt":null}`},
		{name: "inexact number is denied, not clamped", args: `{"limit":1e400}`, wantVerdict: "/limit number"},
		{name: "2^53+1 is denied", args: `{"limit":9007199254740993}`, wantVerdict: "/limit number"},
		{name: "floor", args: `{"opt":-4}`, out: `{"opt":0}`, clamped: []string{"/opt"}},
		{name: "between, over", args: `{"opt":11}`, out: `{"opt":10}`, clamped: []string{"/opt"}},
		{name: "between, inside", args: `{"opt":3}`},
		{name: "wildcard", args: `{"pages":[{"size":10},{"size":70},{"size":-3},{"size":1e3}]}`,
			out: `{"pages":[{"size":10},{"size":50},{"size":-3},{"size":50}]}`, clamped: []string{"/pages/1/size", "/pages/3/size"}},
		{name: "negative under a ceiling untouched", args: `{"pages":[{"size":-1e300}]}`},
		{name: "wildcard over nothing", args: `{"pages":[]}`},
		{name: "other values keep their spelling", args: `{"q":"a\u0041\/","limit":1e9, "pages" : [ {"size":1.50} ] }`,
			out: `{"q":"a\u0041\/","limit":100,"pages":[{"size":1.50}]}`, clamped: []string{"/limit"}},
		{name: "escaped key re-escaped", args: `{"li\u006dit":5000}`, out: `{"limit":100}`, clamped: []string{"/limit"}},
		{name: "key with quote and control character", args: `{"free":{"a\"\u0001":1,"limit":99}}`, out: `{"free":{"a\"\u0001":1,"limit":10}}`, clamped: []string{"/free/limit"}},
		{name: "case variant of a clamped key", args: `{"free":{"Limit":99}}`, wantVerdict: "/free/limit clamp"},
		{name: "clamped, then invalid elsewhere", args: `{"limit":5000,"q":1}`, wantVerdict: "/q type"},
		{name: "clamp on an open field", args: `{"loose":9}`, out: `{"loose":5}`, clamped: []string{"/loose"}},
		{name: "clamp on an open field, string", args: `{"loose":"9"}`, wantVerdict: "/loose clamp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, clamped, err := s.Check([]byte(tt.args))
			if diff := cmp.Diff(tt.wantVerdict, verdict(err)); diff != "" {
				t.Fatalf("verdict (-want +got):\n%s\nerr: %v", diff, err)
			}
			if diff := cmp.Diff(tt.out, string(out)); diff != "" {
				t.Errorf("out (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.clamped, clamped); diff != "" {
				t.Errorf("clamped (-want +got):\n%s", diff)
			}
			if out != nil {
				// The rewritten arguments pass as they are.
				out2, clamped2, err := s.Check(out)
				if err != nil || out2 != nil || clamped2 != nil {
					t.Errorf("re-check of out: %q %q %v; want no change", out2, clamped2, err)
				}
			}
		})
	}
}

func TestClampOverlapping(t *testing.T) {
	// Two clamps on one value: each applies to what the previous one wrote.
	s := mustCompile(t, `{"properties":{"m":{"additionalProperties":{"type":"number"}}}}`, &Options{Clamp: map[string]Range{
		"/m/*": Ceiling(100),
		"/m/a": Ceiling(10),
	}})
	out, clamped, err := s.Check([]byte(`{"m":{"a":500,"b":500}}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"m":{"a":10,"b":100}}`, string(out)); diff != "" {
		t.Errorf("out (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/m/a", "/m/b"}, clamped); diff != "" {
		t.Errorf("clamped (-want +got):\n%s", diff)
	}
}

func TestClampCompileErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name  string
		clamp map[string]Range
		want  string
	}{
		{"pointer the schema does not allow", map[string]Range{"/nope": Ceiling(1)}, `clamp "/nope": the schema allows no value there`},
		{"pointer below a string", map[string]Range{"/q/x": Ceiling(1)}, `clamp "/q/x": the schema allows no value there`},
		{"not a pointer", map[string]Range{"limit": Ceiling(1)}, `clamp "limit"`},
		{"bad escape", map[string]Range{"/li~2mit": Ceiling(1)}, `clamp "/li~2mit"`},
		{"the root", map[string]Range{"": Ceiling(1)}, "not a number"},
		{"ceiling above the schema's maximum", map[string]Range{"/limit": Ceiling(5000)}, `clamp "/limit": bound 5000 is above the schema's maximum 1000`},
		{"floor below the schema's minimum", map[string]Range{"/limit": Between(0, 10)}, "below the schema's minimum 1"},
		{"fraction for an integer", map[string]Range{"/limit": Ceiling(10.5)}, "not an integer"},
		{"string field", map[string]Range{"/q": Ceiling(10)}, "the schema says the value is string, not a number"},
		{"object items", map[string]Range{"/pages/*": Ceiling(10)}, "not a number"},
		{"no bound", map[string]Range{"/limit": {}}, "no bound set"},
		{"NaN", map[string]Range{"/limit": Ceiling(nan)}, "finite"},
		{"infinite", map[string]Range{"/limit": Ceiling(inf)}, "finite"},
		{"min above max", map[string]Range{"/limit": Between(10, 5)}, "above maximum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile([]byte(listing), &Options{Clamp: tt.clamp})
			if err == nil {
				t.Fatalf("Compile succeeded; want %q", tt.want)
			}
			if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, want ErrCompile containing %q", err, tt.want)
			}
		})
	}
}

func TestClampThroughRefAndAllOf(t *testing.T) {
	const sch = `{
		"$defs": {"lim": {"type": "integer", "maximum": 50}},
		"allOf": [{"properties": {"a": {"$ref": "#/$defs/lim"}}}, {"properties": {"b": {}}}]
	}`
	if _, err := Compile([]byte(sch), &Options{Clamp: map[string]Range{"/a": Ceiling(60)}}); err == nil || !strings.Contains(err.Error(), "maximum 50") {
		t.Errorf("ceiling over a $ref'd maximum: got %v", err)
	}
	s := mustCompile(t, sch, &Options{Clamp: map[string]Range{"/a": Ceiling(20)}})
	out, clamped, err := s.Check([]byte(`{"a":49,"b":1}`))
	if err != nil || string(out) != `{"a":20,"b":1}` || !cmp.Equal(clamped, []string{"/a"}) {
		t.Errorf("got %q %q %v", out, clamped, err)
	}
}

func TestOpen(t *testing.T) {
	const sch = `{
		"properties": {
			"meta":  {"type": "object", "additionalProperties": true},
			"kw":    {"type": "object"},
			"ref":   {"$ref": "#/$defs/bag"},
			"other": {"type": "object"}
		},
		"$defs": {"bag": {"type": "object", "properties": {"known": {"properties": {"x": {}}}}}}
	}`
	s := mustCompile(t, sch, &Options{Open: []string{"/meta", "/kw", "/ref"}})
	tests := []struct {
		name, args, want string
	}{
		{"open map", `{"meta":{"anything":1,"more":{"deep":1}}}`, ""},
		{"open object", `{"kw":{"anything":1}}`, ""},
		{"open through $ref", `{"ref":{"anything":1,"known":{"x":1}}}`, ""},
		{"objects inside an open one stay closed", `{"ref":{"known":{"x":1,"y":2}}}`, "/ref/known/y additionalProperties"},
		{"others stay closed", `{"other":{"anything":1}}`, "/other/anything additionalProperties"},
		{"the root stays closed", `{"extra":1}`, "/extra additionalProperties"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := s.Check([]byte(tt.args))
			if diff := cmp.Diff(tt.want, verdict(err)); diff != "" {
				t.Errorf("verdict (-want +got):\n%s\nerr: %v", diff, err)
			}
		})
	}
	if _, err := Compile([]byte(sch), &Options{Open: []string{"/nope"}}); err == nil || !strings.Contains(err.Error(), `open "/nope"`) {
		t.Errorf("open pointer the schema does not allow: got %v", err)
	}
	root := mustCompile(t, sch, &Options{Open: []string{""}})
	if _, _, err := root.Check([]byte(`{"extra":1}`)); err != nil {
		t.Errorf("open root: %v", err)
	}
}

// walkedClamps returns a copy of s whose clamps all walk their pointer with
// args.Pointer.SelectExact: the reference for the shortcut of a clamp on one member.
func walkedClamps(s *Schema) *Schema {
	w := *s
	w.clamps = append([]clamp(nil), s.clamps...)
	for i := range w.clamps {
		w.clamps[i].member, w.clamps[i].isTopMember = "", false
	}
	w.clampInWalk = false
	return &w
}

// clampsBeforeWalk returns a copy of s that applies its clamps before the fast walk
// rather than in it: the reference for Schema.clampInWalk.
func clampsBeforeWalk(s *Schema) *Schema {
	w := *s
	w.clampInWalk = false
	return &w
}

// checkClampShortcut holds CheckValue with the one-member clamps to the same schema
// with every clamp walking its pointer: the same output, clamped list and violation.
func checkClampShortcut(t *testing.T, s *Schema, data []byte) {
	t.Helper()
	var d args.Doc
	if d.Decode(data, nil) != nil {
		return
	}
	out, clamped, err := s.CheckValue(d.Root())
	wout, wclamped, werr := walkedClamps(s).CheckValue(d.Root())
	if string(out) != string(wout) || !slices.Equal(clamped, wclamped) || errText(err) != errText(werr) {
		t.Fatalf("CheckValue(%s) = %q %q %v; with the pointers walked %q %q %v", data, out, clamped, err, wout, wclamped, werr)
	}
	bout, bclamped, berr := clampsBeforeWalk(s).CheckValue(d.Root())
	if string(out) != string(bout) || !slices.Equal(clamped, bclamped) || errText(err) != errText(berr) {
		t.Fatalf("CheckValue(%s) = %q %q %v; clamped before the walk %q %q %v", data, out, clamped, err, bout, bclamped, berr)
	}
}

// clampShortcutSchemas are schemas with clamps on one member (the shortcut) and on
// longer pointers and wildcards (the walk), for the differential checks.
func clampShortcutSchemas(t testing.TB) []*Schema {
	return []*Schema{
		mustCompile(t, listing, listingOptions()),
		mustCompile(t, `{"type":"object","properties":{"head":{"type":"number"},"":{},"a/b":{},"~":{}}}`,
			&Options{Clamp: map[string]Range{"/head": Ceiling(1000), "/": Between(-1, 1), "/a~1b": Ceiling(3), "/~0": Ceiling(2)}}),
		// The gateway's read_text_file, whose one clamp the fast walk applies.
		mustCompile(t, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"path":{"type":"string"},"tail":{"type":"number"},"head":{"type":"number"}},"required":["path"]}`,
			&Options{Clamp: map[string]Range{"/head": Ceiling(1000), "/tail": Between(0, 10)}}),
		// Clamps in the walk, with an open rest (a case variant passes the schema)
		// and a bounded member.
		mustCompile(t, `{"type":"object","properties":{"head":{"type":"integer","maximum":5000},"n":{"type":["number","null"]}},"additionalProperties":true}`,
			&Options{Clamp: map[string]Range{"/head": Ceiling(1000), "/n": Between(-5, 5)}, Open: []string{""}}),
	}
}

func TestClampShortcut(t *testing.T) {
	schemas := clampShortcutSchemas(t)
	for _, i := range []int{2, 3} {
		if !schemas[i].clampInWalk {
			t.Fatalf("schema %d does not clamp in the walk", i)
		}
	}
	if !schemas[0].clamps[slices.IndexFunc(schemas[0].clamps, func(c clamp) bool { return c.ptr.String() == "/limit" })].isTopMember {
		t.Fatal("the clamp on /limit does not take the shortcut")
	}
	for _, data := range []string{
		`{"limit":50}`, `{"limit":5000}`, `{"Limit":5000}`, `{"LIMIT":1,"limit":2}`, `{"limıt":5000}`,
		`{"limit":"x"}`, `{"limit":null}`, `{"limit":1e400}`, `{"limit":-0}`, `{"opt":-4,"limit":1e9}`,
		`{"pages":[{"size":70}],"limit":200}`, `{"free":{"Limit":99}}`, `{"li\u006dit":5000}`,
		`{"head":40}`, `{"head":4000}`, `{"Head":4000}`, `{"HEAD":1}`, `{"":5}`, `{"a/b":9}`, `{"~":9}`,
		`{"head":40,"path":"x"}`, `{"x":1,"head":[1]}`, `{"ſ":1}`, `{"K":1,"head":{}}`,
		`{"path":"/a","head":40}`, `{"path":"/a","head":4000,"tail":-3}`, `{"head":4000,"path":1}`,
		`{"path":"/a","Head":4000}`, `{"path":"/a","head":"x","tail":1e400}`, `{"tail":20,"head":2000,"path":"p"}`,
		`{"head":700}`, `{"head":1000.5}`, `{"head":7000,"n":null}`, `{"head":7000,"n":9,"HEAD":1}`, `{"N":9}`, `{"head":1.5}`,
		`{"head":-1e400}`, `{"head":600,"n":"x"}`, `{"n":-9,"head":10}`,
	} {
		for i, s := range schemas {
			t.Run(strconv.Itoa(i)+data, func(t *testing.T) { checkClampShortcut(t, s, []byte(data)) })
		}
	}
}

// FuzzClampShortcut holds the clamp on one member to the pointer's walk on any
// arguments.
func FuzzClampShortcut(f *testing.F) {
	schemas := clampShortcutSchemas(f)
	for _, seed := range []string{`{"limit":5000}`, `{"Limit":5}`, `{"head":4000,"Head":1}`, `{"":2,"~":3,"a/b":4}`,
		`{"path":"/a","head":4000,"tail":-3}`, `{"head":7000,"n":9}`} {
		for i := range schemas {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		checkClampShortcut(t, schemas[int(which)%len(schemas)], data)
	})
}
