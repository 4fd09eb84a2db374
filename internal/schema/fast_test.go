package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/difftest"
)

// fastCase is a schema, with options, that the differential tests hold the fast path
// to the validator on.
type fastCase struct {
	name string
	raw  map[string]any // the schema, for the generator
	s    *Schema
}

// fastCases compiles the schemas of the real servers in testdata (some with clamps)
// and those of testdata/fastpath.schemas.json, which cover each keyword of the fast
// path.
func fastCases(t testing.TB) []fastCase {
	t.Helper()
	var out []fastCase
	add := func(name string, sch []byte, o *Options) {
		var raw map[string]any
		dec := json.NewDecoder(bytes.NewReader(sch))
		dec.UseNumber()
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, fastCase{name: name, raw: raw, s: mustCompile(t, string(sch), o)})
	}
	for _, file := range []string{"server-filesystem", "server-everything"} {
		tools := loadTools(t, "testdata/"+file+".tools.json")
		names := make([]string, 0, len(tools))
		for n := range tools {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			add(file+"/"+n, tools[n], nil)
		}
	}
	fs := loadTools(t, "testdata/server-filesystem.tools.json")
	add("server-filesystem/read_text_file clamped", fs["read_text_file"], &Options{Clamp: map[string]Range{"/head": Ceiling(1000), "/tail": Between(0, 1000)}})
	ev := loadTools(t, "testdata/server-everything.tools.json")
	add("server-everything/get-resource-links clamped", ev["get-resource-links"], &Options{Clamp: map[string]Range{"/count": Between(2, 5)}})

	b, err := os.ReadFile("testdata/fastpath.schemas.json")
	if err != nil {
		t.Fatal(err)
	}
	var own []struct {
		Name   string
		Schema json.RawMessage
		Clamp  map[string][2]*float64
		Open   []string
	}
	if err := json.Unmarshal(b, &own); err != nil {
		t.Fatal(err)
	}
	for _, c := range own {
		o := &Options{Open: c.Open}
		for p, r := range c.Clamp {
			if o.Clamp == nil {
				o.Clamp = map[string]Range{}
			}
			o.Clamp[p] = Range{Min: r[0], Max: r[1]}
		}
		add(c.Name, c.Schema, o)
	}
	add("tool", []byte(tool), nil)
	return out
}

// TestFastPathTaken holds every schema of the real servers, and each of the package's
// own fast-path schemas, to the fast path: a schema that silently went to the
// validator would still be right, but slow.
func TestFastPathTaken(t *testing.T) {
	for _, c := range fastCases(t) {
		if c.s.fast == nil {
			t.Errorf("%s: no fast path: %s", c.name, c.s.slowWhy)
		}
	}
}

// TestFastPathFallback lists what leaves a schema to the validator, and why.
func TestFastPathFallback(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"anyOf", anyOfModes, "anyOf"},
		{"optional as anyOf with null", `{"properties":{"n":{"anyOf":[{"type":"integer"},{"type":"null"}]}}}`, "anyOf"},
		{"allOf", `{"allOf":[{"properties":{"a":{}}}]}`, "allOf"},
		{"oneOf", `{"properties":{"a":{"oneOf":[{"type":"string"}]}}}`, "oneOf"},
		{"not", `{"properties":{"a":{"not":{"type":"string"}}}}`, "not"},
		{"if", ifThen, "if"},
		{"$ref", refDefs, "$ref"},
		{"zod root $ref", `{"$schema":"http://json-schema.org/draft-07/schema#","$ref":"#/definitions/A","definitions":{"A":{"properties":{"q":{}}}}}`, "$ref"},
		{"patternProperties", `{"patternProperties":{"^x-":{"type":"string"}}}`, "patternProperties"},
		{"propertyNames", `{"propertyNames":{"maxLength":3}}`, "propertyNames"},
		{"dependentSchemas", `{"properties":{"a":{}},"dependentSchemas":{"a":{"properties":{"b":{}}}}}`, "dependentSchemas"},
		{"prefixItems", `{"properties":{"p":{"prefixItems":[{"type":"number"}]}}}`, "prefixItems"},
		{"draft 7 tuple", `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"p":{"items":[{"type":"number"}]}}}`, "prefixItems"},
		{"2019-09 tuple", `{"$schema":"https://json-schema.org/draft/2019-09/schema","properties":{"p":{"items":[{"type":"string"}]}}}`, "items as a list"},
		{"contains", `{"properties":{"p":{"contains":{"type":"string"}}}}`, "contains"},
		{"unevaluatedItems", `{"properties":{"p":{"unevaluatedItems":false}}}`, "unevaluatedItems"},
		{"deep in items", `{"properties":{"p":{"items":{"properties":{"q":{"anyOf":[true]}}}}}}`, "anyOf"},
		{"in a map's values", `{"additionalProperties":{"oneOf":[{"type":"string"}]}}`, "oneOf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema, nil)
			if s.fast != nil {
				t.Fatalf("the fast path took a schema with %s", tt.want)
			}
			if !strings.Contains(s.slowWhy, tt.want) {
				t.Errorf("reason %q does not name %q", s.slowWhy, tt.want)
			}
		})
	}
}

// checkOut is what CheckValue returns for one call.
type checkOut struct {
	Out     string
	Clamped []string
	Err     string
}

// checkTwin holds CheckValue with c's fast path to CheckValue with the
// validator alone: the same out, clamped and violation.
func checkTwin(c *fastCase) *difftest.Twin[args.Value, checkOut] {
	slow := *c.s
	slow.fast = nil
	run := func(s *Schema) func(args.Value) checkOut {
		return func(root args.Value) checkOut {
			out, clamped, err := s.CheckValue(root)
			return checkOut{string(out), clamped, errText(err)}
		}
	}
	return &difftest.Twin[args.Value, checkOut]{
		Name: c.name + ": CheckValue with the fast path",
		Fast: run(c.s),
		Ref:  run(&slow),
		Show: args.Value.Raw,
	}
}

// validOut is one side's verdict on clamped arguments, and the validator's
// reason.
type validOut struct {
	Pass bool
	Why  string
}

// validTwin holds the fast path's own answer (fast.go) to the validator's
// (check.go), on the arguments as clamped: it neither passes what the
// validator refuses nor refuses what it passes, which would only be slow.
// c's schema must have a fast path.
func validTwin(c *fastCase) *difftest.Twin[args.Value, validOut] {
	s := c.s
	clamped := func(root args.Value) (map[args.Value]string, error) {
		if len(s.clamps) == 0 {
			return nil, nil
		}
		repl, _, err := s.clamp(root)
		return repl, err
	}
	return &difftest.Twin[args.Value, validOut]{
		Name: c.name + ": the fast path",
		Fast: func(root args.Value) validOut {
			repl, err := clamped(root)
			if err != nil {
				return validOut{Why: "clamp: " + err.Error()}
			}
			return validOut{Pass: s.fast.valid(root, repl)}
		},
		Ref: func(root args.Value) validOut {
			repl, err := clamped(root)
			if err != nil {
				return validOut{Why: "clamp: " + err.Error()}
			}
			if v := s.validate(root, repl); v != nil {
				return validOut{Why: v.Error()}
			}
			return validOut{Pass: true}
		},
		Same: func(fast, v validOut) (bool, string) { return fast.Pass == v.Pass, "" },
		Show: args.Value.Raw,
	}
}

// compareFastSlow checks one call both ways, with checkTwin and validTwin.
// It reports whether the arguments decoded and whether they passed.
func compareFastSlow(t testing.TB, c *fastCase, data []byte) (decoded, passed bool) {
	t.Helper()
	var d args.Doc
	if err := d.Decode(data, c.s.limits); err != nil {
		return false, false
	}
	root := d.Root()
	out, _, _ := checkTwin(c).Check(t, root)
	if c.s.fast != nil {
		validTwin(c).Check(t, root)
	}
	return true, out.Err == ""
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestFastPathDifferential generates arguments from each schema (mostly valid, with
// mutations and off-schema values) and holds the fast path to the validator's
// decisions. Each schema must see both passing and refused calls, so the comparison
// cannot hold vacuously.
func TestFastPathDifferential(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	for _, c := range fastCases(t) {
		t.Run(c.name, func(t *testing.T) {
			roots := make([]args.Value, n)
			for i := range roots {
				data := newGen(uint64(i), c.raw).doc()
				d := new(args.Doc)
				if err := d.Decode(data, c.s.limits); err != nil {
					t.Fatalf("generated arguments do not decode: %s: %v", data, err)
				}
				roots[i] = d.Root()
			}
			var pass, fail int
			tw := checkTwin(&c)
			fast := tw.Fast
			tw.Fast = func(root args.Value) checkOut {
				out := fast(root)
				if out.Err == "" {
					pass++
				} else {
					fail++
				}
				return out
			}
			tw.Agree(t, slices.Values(roots))
			if c.s.fast != nil {
				validTwin(&c).Agree(t, slices.Values(roots))
			}
			t.Logf("%d passed, %d refused", pass, fail)
			if pass == 0 || fail == 0 {
				t.Errorf("%d passed and %d refused of %d: the comparison is one-sided", pass, fail, n)
			}
		})
	}
}

// TestFastPathCases pins decisions the generator may miss, each compared with the
// validator and with the expected verdict.
func TestFastPathCases(t *testing.T) {
	cases := map[string]*fastCase{}
	for _, c := range fastCases(t) {
		cases[c.name] = &c
	}
	tests := []struct {
		schema, args, want string
	}{
		{"types", `{"i":5.0}`, ""},
		{"types", `{"i":1e2}`, ""},
		{"types", `{"i":-0}`, ""},
		{"types", `{"i":1.5e1}`, ""},
		{"types", `{"i":1.05e1}`, "/i type"},
		{"types", `{"i":12345678901234567890}`, "/i number"},
		{"types", `{"i":1e21}`, ""},
		{"types", `{"i":5e-324}`, "/i type"},
		{"types", `{"n":1e400}`, "/n number"},
		{"types", `{"n":1e-400}`, "/n number"},
		{"types", `{"n":0.10000000000000001}`, "/n number"},
		{"types", `{"n":0.1000000000000000055511151231257827}`, "/n number"},
		{"types", `{"n":100.000000000000000000000000000000}`, ""},
		{"types", `{"x":{"deep":[1e400]}}`, "/x/deep/0 number"},
		{"types", `{"ann":{"k":[1,2,{"q":null}]}}`, ""},
		{"types", `{"ann":{"k":[1,2,{"q":9007199254740993}]}}`, "/ann/k/2/q number"},
		{"types", `{"m":null,"ni":2.5}`, ""},
		{"types", `{"m":2.5}`, "/m type"},
		{"types", `{"o":{"k":1}}`, "/o/k additionalProperties"},
		{"types", `{"evil":1}`, "/evil additionalProperties"},
		{"numeric bounds", `{"a":-1.5,"b":0.29999999999999999}`, "/b number"},
		{"numeric bounds", `{"a":-1.50000000000000001}`, "/a number"},
		{"numeric bounds", `{"a":-1.5}`, ""},
		{"numeric bounds", `{"a":-1.6}`, "/a minimum"},
		{"numeric bounds", `{"a":1000.0,"b":0.2999}`, ""},
		{"numeric bounds", `{"b":0.3}`, "/b exclusiveMaximum"},
		{"numeric bounds", `{"b":0}`, "/b exclusiveMinimum"},
		{"numeric bounds", `{"b":5e-324}`, ""},
		{"numeric bounds", `{"c":0.3}`, ""},
		{"numeric bounds", `{"c":0.35}`, "/c multipleOf"},
		{"numeric bounds", `{"c":-7e300}`, ""},
		{"numeric bounds", `{"c":1e-300}`, "/c multipleOf"},
		{"numeric bounds", `{"d":49}`, ""},
		{"numeric bounds", `{"d":4.9e1}`, ""},
		{"numeric bounds", `{"d":50}`, "/d multipleOf"},
		{"numeric bounds", `{"e":0.00003}`, ""},
		{"numeric bounds", `{"e":3e-6}`, "/e multipleOf"},
		{"numeric bounds", `{"f":0.75}`, ""},
		{"numeric bounds", `{"f":1e301}`, "/f maximum"},
		{"numeric bounds", `{"g":9007199254740992}`, ""},
		{"numeric bounds", `{"g":9007199254740991}`, "/g minimum"},
		{"numeric bounds", `{"h":-5e-324}`, "/h exclusiveMaximum"},
		{"numeric bounds", `{"h":-1e-323}`, ""},
		{"numeric bounds", `{"k":1.7976931348623157e308}`, ""},
		{"numeric bounds", `{"k":2.4999999999999993e-308}`, "/k minimum"},
		{"numeric bounds", `{"l":9e200}`, ""},
		{"numeric bounds", `{"l":1e200}`, "/l multipleOf"},
		{"numeric bounds", `{"p":0.30000000000000004}`, ""},
		{"numeric bounds", `{"p":0.3}`, ""},
		{"numeric bounds", `{"p":0.3000000000000001}`, "/p maximum"},
		{"strings", `{"a":"😀😀😀😀"}`, ""},
		{"strings", `{"a":"😀😀😀😀😀"}`, "/a maxLength"},
		{"strings", `{"a":"\u00e9"}`, "/a minLength"},
		{"strings", `{"p":"abc"}`, ""},
		{"strings", `{"p":"abc\n"}`, "/p pattern"},
		{"strings", `{"q":"axb","unk":"abc"}`, ""},
		{"strings", `{"unk":"abcd"}`, "/unk maxLength"},
		{"strings", `{"u":"123e4567-e89b-12d3-a456-426614174000","re":"^a+$","jp":"/a~0b"}`, ""},
		{"strings", `{"u":5}`, ""},
		{"strings", `{"u":"../../etc/passwd"}`, "/u format"},
		{"strings", `{"re":"("}`, "/re format"},
		{"strings", `{"jp":"/a~2"}`, "/jp format"},
		{"strings", `{"dt":"2024-01-02T03:04:05Z","em":"a@b.co","ip":"10.0.0.1","ip6":"::1","host":"example.com","uri":"https://x/y","date":"2024-02-29"}`, ""},
		{"strings", `{"date":"2023-02-29"}`, "/date format"},
		{"strings", `{"huge":"x"}`, ""},
		{"enum and const", `{"e":1.0,"n":1,"z":-0,"big":1e300,"nul":null,"f":false,"s":"😀"}`, ""},
		// An object can match an enum or const only where closing declares its
		// members: here none are, so closing refuses it (the validator's decision).
		{"enum and const", `{"c":{"b":[true,null],"a":1e0}}`, "/c/a additionalProperties"},
		{"enum and const", `{"e":[1.0,"x"]}`, ""},
		{"enum and const", `{"e":{"k":[1,2.0]}}`, "/e/k additionalProperties"},
		{"enum and const", `{"e":{"k":[1,2],"j":1}}`, "/e enum"},
		{"enum and const", `{"e":[1,"x",2]}`, "/e enum"},
		{"enum and const", `{"e":"1"}`, "/e enum"},
		{"enum and const", `{"e":false}`, "/e enum"},
		{"enum and const", `{"c":{"a":1}}`, "/c const"},
		{"enum and const", `{"c":{"a":1,"b":[true,null],"x":1}}`, "/c const"},
		{"enum and const", `{"big":-0.00000000025}`, ""},
		{"enum and const", `{"big":"1e300"}`, ""},
		{"enum and const", `{"big":"1E300"}`, "/big enum"},
		{"enum and const", `{"nul":0}`, "/nul const"},
		{"arrays", `{"l":["a","b","c"]}`, ""},
		{"arrays", `{"l":[]}`, "/l minItems"},
		{"arrays", `{"l":["a","b","c","d"]}`, "/l maxItems"},
		{"arrays", `{"u":[1,"1",[1],{"a":1},null,true,false]}`, ""},
		{"arrays", `{"u":[1,1.0]}`, "/u uniqueItems"},
		{"arrays", `{"u":[{"a":1,"b":2},{"b":2,"a":1}]}`, "/u uniqueItems"},
		{"arrays", `{"u":[[1,[2]],[1,[2.0]]]}`, "/u uniqueItems"},
		{"arrays", `{"u":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25]}`, ""},
		{"arrays", `{"u":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,1e1]}`, "/u uniqueItems"},
		{"arrays", `{"uo":[{"k":1},{"k":1,"v":[]}]}`, ""},
		{"arrays", `{"uo":[{"k":1,"v":[]},{"v":[],"k":1}]}`, "/uo uniqueItems"},
		{"arrays", `{"uo":[{"k":1,"x":1}]}`, "/uo/0/x additionalProperties"},
		{"arrays", `{"nested":[[1,2],[3.0]],"free":[{"a":1},[2]]}`, ""},
		{"arrays", `{"nested":[[1,2.5]]}`, "/nested/0/1 type"},
		{"arrays", `{"none":[]}`, ""},
		{"arrays", `{"none":[1]}`, "/none/0 false"},
		{"arrays", `{"anyitem":[{"x":{"y":1}}]}`, ""},
		{"objects", `{"m":{"a":1,"b":2}}`, ""},
		{"objects", `{"m":{"a":1.5}}`, "/m/a type"},
		{"objects", `{}`, "/m required"},
		{"objects", `{"m":{},"f":{"a":1},"t":{}}`, ""},
		{"objects", `{"m":{},"f":{"a":1}}`, " dependentRequired"},
		{"objects", `{"m":{},"f":{"b":1},"t":{}}`, "/f/b additionalProperties"},
		{"objects", `{"m":{},"t":{"x":1}}`, "/t/x additionalProperties"},
		{"objects", `{"m":{},"mm":{}}`, "/mm minProperties"},
		{"objects", `{"m":{},"mm":{"a":"1","b":"2","c":"3"}}`, "/mm maxProperties"},
		{"objects", `{"m":{},"un":{"a":"s","b":true,"c":false}}`, ""},
		{"objects", `{"m":{},"un":{"a":"s","b":1}}`, "/un/b type"},
		{"objects", `{"m":{},"deep":{"x":{"y":"s"}}}`, ""},
		{"objects", `{"m":{},"dr":1}`, " dependentRequired"},
		{"objects", `{"m":{},"deep":{"x":{}}}`, "/deep/x/y required"},
		{"objects", `{"m":{},"ao":{"k":{"q":1}}}`, ""},
		{"objects", `{"m":{},"ao":{"k":{"q":1,"r":2}}}`, "/ao/k/r additionalProperties"},
		{"boolean schemas", `{"t":{"anything":[1]},"o":{}}`, ""},
		{"boolean schemas", `{"f":null}`, "/f false"},
		{"required but undeclared", `{"a":1,"b":"x"}`, ""},
		{"required but undeclared", `{"a":1,"b":2}`, "/b type"},
		{"required but undeclared", `{"a":1}`, "/b required"},
		{"root map", `{"a":"abc","b":10}`, ""},
		{"root map", `{"a":"abcd"}`, "/a maxLength"},
		{"empty", `{}`, ""},
		{"empty", `{"a":1}`, "/a additionalProperties"},
		{"many properties", `{"p0":1,"p11":2,"p10":{"x":1},"p9":null}`, ""},
		{"many properties", `{"p0":1,"p11":2,"p12":1}`, "/p12 additionalProperties"},
		{"many properties", `{"p0":1}`, "/p11 required"},
		{"draft-07", `{"a":"123e4567-e89b-12d3-a456-426614174000","b":10,"c":[1],"d":3.0}`, ""},
		{"draft-07", `{"a":"123e4567-e89b-12d3-a456-426614174000","b":0}`, "/b exclusiveMinimum"},
		{"draft-07", `{"a":"x"}`, "/a format"},
		{"draft-04", `{"n":9.99}`, ""},
		{"draft-04", `{"n":0}`, ""},
		{"draft-04", `{"n":10}`, "/n exclusiveMaximum"},
		{"draft 2019-09", `{"l":["ab"],"o":{"x":1}}`, ""},
		{"draft 2019-09", `{"l":["abc"]}`, "/l/0 maxLength"},
		{"draft 2019-09", `{"o":{"y":1}}`, "/o/y additionalProperties"},
		{"clamped", `{"limit":50,"q":"x"}`, ""},
		{"clamped", `{"limit":5000,"pages":[{"size":70},{"size":1}],"free":{"limit":-3,"other":1e300},"loose":7}`, ""},
		{"clamped", `{"limit":5000,"q":1}`, "/q type"},
		{"clamped", `{"limit":0.5}`, "/limit type"},
		{"clamped", `{"loose":"x"}`, "/loose clamp"},
		{"open", `{"meta":{"a":1},"kw":{"b":{"c":2}},"other":{"z":1,"in":{"x":1}}}`, ""},
		{"open", `{"other":{"in":{"y":1}}}`, "/other/in/y additionalProperties"},
		{"open", `{"meta":{"a":1e400}}`, "/meta/a number"},
		{"open root", `{"a":1,"b":{"c":2}}`, ""},
		{"open root", `{"a":"1"}`, "/a type"},
		{"server-filesystem/edit_file", `{"path":"/a","edits":[{"oldText":"x","newText":"y"}],"dryRun":true}`, ""},
		{"server-filesystem/edit_file", `{"path":"/a","edits":[{"oldText":"x","newText":"y","all":1}]}`, "/edits/0/all additionalProperties"},
		{"server-filesystem/read_text_file clamped", `{"path":"/a","head":1e9,"tail":-4}`, ""},
		{"server-everything/gzip-file-as-resource", `{"data":"../../etc/passwd"}`, "/data format"},
		{"server-everything/get-resource-links clamped", `{"count":0.5}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.schema+" "+tt.args, func(t *testing.T) {
			c := cases[tt.schema]
			if c == nil {
				t.Fatalf("no schema %q", tt.schema)
			}
			if _, ok := compareFastSlow(t, c, []byte(tt.args)); !ok && tt.want == "" {
				_, _, err := c.s.Check([]byte(tt.args))
				t.Errorf("refused: %v", err)
			}
			_, _, err := c.s.Check([]byte(tt.args))
			if diff := cmp.Diff(tt.want, verdict(err)); diff != "" {
				t.Errorf("verdict (-want +got):\n%s\nerr: %v", diff, err)
			}
		})
	}
}

// FuzzFastPath holds the fast path to the validator on fuzzed arguments, both as
// bytes and as documents generated from the schema with the fuzzer's seed.
func FuzzFastPath(f *testing.F) {
	cases := fastCases(f)
	for i := range cases {
		f.Add(uint8(i), uint64(i), []byte(`{}`))
	}
	for _, seed := range []string{
		`{"path":"a","limit":5.0,"mode":"fast","tags":[{"k":"x"}],"ratio":0.75}`,
		`{"i":1e2,"n":0.1,"m":null,"x":{"d":[1e400]}}`,
		`{"a":-1.5,"b":0.2999,"c":0.3,"d":49,"e":0.00003,"l":9e200}`,
		`{"e":[1.0,"x"],"c":{"b":[true,null],"a":1e0},"big":-2.5e-10}`,
		`{"u":[1,"1",[1],{"a":1}],"uo":[{"k":1,"v":[]},{"v":[],"k":1}]}`,
		`{"m":{"a":1},"f":{"a":1},"t":{},"un":{"b":true}}`,
		`{"limit":5000,"pages":[{"size":70}],"free":{"limit":-3},"loose":7}`,
		`{"path":"/a","edits":[{"oldText":"x","newText":"y"}],"dryRun":true,"head":1e9}`,
		`{"a":"😀😀","p":"abc","u":"123e4567-e89b-12d3-a456-426614174000","re":"(","dt":"2024-01-02T03:04:05Z"}`,
	} {
		for i := range cases {
			f.Add(uint8(i), uint64(i)*7919, []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, seed uint64, data []byte) {
		c := &cases[int(which)%len(cases)]
		compareFastSlow(t, c, data)
		g := newGen(seed^uint64(len(data))<<32, c.raw)
		g.extra = data
		compareFastSlow(t, c, g.doc())
	})
}

// gen writes arguments for a schema: mostly what it declares, with values near its
// bounds and spellings the fast path must read as the validator does, and now and
// then something off-schema.
type gen struct {
	r     *rand.Rand
	root  map[string]any
	b     strings.Builder
	extra []byte // the fuzzer's bytes, spliced in as keys and strings
}

func newGen(seed uint64, root map[string]any) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909)), root: root}
}

func (g *gen) doc() []byte {
	g.b.Reset()
	g.object(g.root, 0)
	return []byte(g.b.String())
}

func (g *gen) chance(n int) bool { return g.r.IntN(100) < n }

func pick[T any](g *gen, list []T) T { return list[g.r.IntN(len(list))] }

var (
	genStrings = []string{"", "a", "ab", "abc", "abcd", "abcde", "ABC", "x-y", "axb", "😀😀", "😀😀😀😀😀", "é",
		"123e4567-e89b-12d3-a456-426614174000", "2024-01-02T03:04:05Z", "2024-02-30", "2024-02-29",
		"a@b.co", "10.0.0.1", "::1", "example.com", "https://example.com/x", "/a~0b", "/a~2",
		"^[a-z]+$", "(", "../../etc/passwd", "name", "size", "fast", "Text", "error", "x", "y",
		"1e300", "null", "fast ", "resource", "New York", "true"}
	genNumbers = []string{"0", "-0", "1", "1.0", "1e2", "100e-2", "-1.5", "0.1", "0.3", "0.35",
		"0.30000000000000004", "1e300", "-7e300", "1e-300", "5e-324", "-5e-324", "1e400", "-1e400",
		"9007199254740992", "9007199254740993", "123456789012345678", "12345678901234567890", "0.1e1",
		"7", "14", "21.0", "49", "2.5e-308", "1.7976931348623157e308", "3e200", "9e200", "1e-5",
		"0.00003", "12345.678", "1E3", "1e+3", "0.10000000000000001", "5", "10", "11", "1000",
		"1001", "-1", "2", "3", "0.75", "0.25", "1e21", "1.5e1", "-2.5e-10", "1e-7"}
	genKeys = []string{"extra", "Path", "__proto__", "", "a/b~c", "k", "x", "q"}
)

func (g *gen) value(sch any, depth int) {
	m, ok := sch.(map[string]any)
	if !ok || depth > 6 || g.chance(8) {
		g.random(depth)
		return
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 && g.chance(70) {
		g.literal(pick(g, e))
		return
	}
	if c, ok := m["const"]; ok && g.chance(70) {
		g.literal(c)
		return
	}
	var types []string
	switch t := m["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				types = append(types, s)
			}
		}
	}
	if len(types) == 0 {
		for kw, t := range map[string]string{"properties": "object", "additionalProperties": "object",
			"items": "array", "uniqueItems": "array", "minimum": "number", "maximum": "number",
			"multipleOf": "number", "exclusiveMaximum": "number", "exclusiveMinimum": "number",
			"minLength": "string", "maxLength": "string", "pattern": "string", "format": "string"} {
			if _, ok := m[kw]; ok {
				types = append(types, t)
			}
		}
		sort.Strings(types)
	}
	if len(types) == 0 {
		g.random(depth)
		return
	}
	switch pick(g, types) {
	case "object":
		g.object(m, depth)
	case "array":
		n := g.r.IntN(5)
		g.b.WriteByte('[')
		for i := range n {
			if i > 0 {
				g.b.WriteByte(',')
			}
			if it, ok := m["items"]; ok {
				g.value(it, depth+1)
			} else {
				g.random(depth + 1)
			}
		}
		g.b.WriteByte(']')
	case "string":
		g.str(g.string(m))
	case "number", "integer":
		g.number(m)
	case "boolean":
		g.b.WriteString(pick(g, []string{"true", "false"}))
	case "null":
		g.b.WriteString("null")
	default:
		g.random(depth)
	}
}

// formatExamples are valid values of the formats the validator asserts.
var formatExamples = map[string][]string{
	"uuid": {"123e4567-e89b-12d3-a456-426614174000"}, "date-time": {"2024-01-02T03:04:05Z"},
	"email": {"a@b.co"}, "ipv4": {"10.0.0.1"}, "ipv6": {"::1"}, "hostname": {"example.com", "x"},
	"uri": {"https://example.com/x"}, "date": {"2024-02-29"}, "json-pointer": {"/a~0b", ""},
	"regex": {"^[a-z]+$", "x"},
}

// string picks a string that mostly meets the schema's format, pattern and lengths.
func (g *gen) string(m map[string]any) string {
	pool := genStrings
	if f, ok := m["format"].(string); ok && formatExamples[f] != nil && g.chance(80) {
		pool = formatExamples[f]
	}
	if !g.chance(70) {
		return pick(g, pool)
	}
	var re *regexp.Regexp
	if p, ok := m["pattern"].(string); ok {
		re, _ = regexp.Compile(p)
	}
	bound := func(kw string, def float64) float64 {
		if n, ok := m[kw].(json.Number); ok {
			f, _ := n.Float64()
			return f
		}
		return def
	}
	lo, hi := bound("minLength", 0), bound("maxLength", math.Inf(1))
	var good []string
	for _, s := range pool {
		l := float64(utf8.RuneCountInString(s))
		if l >= lo && l <= hi && (re == nil || re.MatchString(s)) {
			good = append(good, s)
		}
	}
	if len(good) == 0 {
		return pick(g, pool)
	}
	return pick(g, good)
}

// object writes an object of the declared properties, mostly including the required
// ones, sometimes with a key the schema does not declare.
func (g *gen) object(m map[string]any, depth int) {
	props, _ := m["properties"].(map[string]any)
	req := map[string]bool{}
	if r, ok := m["required"].([]any); ok {
		for _, e := range r {
			if s, ok := e.(string); ok {
				req[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	g.r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	seen := map[string]bool{}
	first := true
	member := func(key string, sch any) {
		if seen[strings.ToLower(key)] {
			return // the decoder refuses keys differing only in case
		}
		seen[strings.ToLower(key)] = true
		if !first {
			g.b.WriteByte(',')
		}
		first = false
		g.str(key)
		g.b.WriteByte(':')
		g.value(sch, depth+1)
	}
	g.b.WriteByte('{')
	for _, n := range names {
		if (req[n] && g.chance(95)) || g.chance(60) {
			member(n, props[n])
		}
	}
	for _, n := range slices.Sorted(maps.Keys(req)) {
		if _, ok := props[n]; !ok && g.chance(90) {
			member(n, m["additionalProperties"])
		}
	}
	if add, ok := m["additionalProperties"].(map[string]any); ok {
		for range g.r.IntN(3) {
			member(pick(g, genKeys), add)
		}
	}
	if g.chance(10) {
		key := pick(g, genKeys)
		if len(g.extra) > 0 && g.chance(50) {
			key = string(g.extra[:g.r.IntN(len(g.extra)+1)])
		}
		member(key, nil)
	}
	g.b.WriteByte('}')
}

// number writes a number near the schema's bounds and multiples, or from the pool.
func (g *gen) number(m map[string]any) {
	if g.chance(40) {
		var near []string
		for _, kw := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
			if n, ok := m[kw].(json.Number); ok {
				f, _ := n.Float64()
				k := float64(g.r.IntN(7) - 3)
				near = append(near, string(n))
				for _, x := range []float64{f * k, f + k, f * (1 + k/1e15)} {
					if !math.IsInf(x, 0) {
						near = append(near, strconv.FormatFloat(x, 'g', -1, 64))
					}
				}
			}
		}
		if len(near) > 0 {
			g.b.WriteString(pick(g, near))
			return
		}
	}
	g.b.WriteString(pick(g, genNumbers))
}

func (g *gen) random(depth int) {
	k := g.r.IntN(7)
	if depth > 4 {
		k %= 4
	}
	switch k {
	case 0:
		g.b.WriteString("null")
	case 1:
		g.b.WriteString(pick(g, []string{"true", "false"}))
	case 2:
		g.b.WriteString(pick(g, genNumbers))
	case 3:
		s := pick(g, genStrings)
		if len(g.extra) > 0 && g.chance(30) {
			s = strings.ToValidUTF8(string(g.extra), "?")
		}
		g.str(s)
	case 4, 5:
		g.b.WriteByte('[')
		for i := range g.r.IntN(4) {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.random(depth + 1)
		}
		g.b.WriteByte(']')
	default:
		g.b.WriteByte('{')
		seen := map[string]bool{}
		for range g.r.IntN(3) {
			key := pick(g, genKeys)
			if seen[strings.ToLower(key)] {
				continue
			}
			if len(seen) > 0 {
				g.b.WriteByte(',')
			}
			seen[strings.ToLower(key)] = true
			g.str(key)
			g.b.WriteByte(':')
			g.random(depth + 1)
		}
		g.b.WriteByte('}')
	}
}

// literal writes an enum or const value, its numbers in another spelling now and
// then.
func (g *gen) literal(v any) {
	switch v := v.(type) {
	case json.Number:
		s := string(v)
		if g.chance(30) {
			switch {
			case !strings.ContainsAny(s, ".eE"):
				s = pick(g, []string{s + ".0", s + "e0", s + "0e-1"})
				if strings.HasPrefix(strings.TrimPrefix(s, "-"), "00") {
					s = string(v) // a leading zero is not JSON
				}
			case !strings.ContainsAny(s, "eE"):
				s = pick(g, []string{s + "0", s + "e0"})
			}
		}
		g.b.WriteString(s)
	case []any:
		g.b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.literal(e)
		}
		g.b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		g.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		g.b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.str(k)
			g.b.WriteByte(':')
			g.literal(v[k])
		}
		g.b.WriteByte('}')
	case string:
		g.str(v)
	default:
		b, _ := json.Marshal(v)
		g.b.Write(b)
	}
}

// str writes s as a JSON string, its first character escaped now and then.
func (g *gen) str(s string) {
	b, _ := json.Marshal(s)
	if c := byte('"'); len(s) > 0 {
		c = s[0]
		if g.chance(10) && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '/') {
			g.b.WriteString(`"\u00` + fmt.Sprintf("%02x", c))
			g.b.Write(b[2:])
			return
		}
	}
	g.b.Write(b)
}

// TestFastPathAllocs pins the fast path's promise for a call that passes without
// clamping: no allocation once the arguments are decoded.
func TestFastPathAllocs(t *testing.T) {
	fs := loadTools(t, "testdata/server-filesystem.tools.json")
	tests := []struct {
		name, schema, args string
	}{
		{"typical", tool, string(typical)},
		{"edit_file", string(fs["edit_file"]), `{"path":"/tmp/fsroot/notes.md","edits":[{"oldText":"teh","newText":"the"}],"dryRun":false}`},
		{"numbers", `{"properties":{"a":{"type":"number","multipleOf":0.25,"maximum":1e3},"b":{"enum":[1.5,2.5]},"c":{"type":"integer"}}}`, `{"a":0.75,"b":2.50,"c":1e2}`},
		{"long number", `{"properties":{"a":{"type":"number"}}}`, `{"a":0.30000000000000004}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema, nil)
			var d args.Doc
			if err := d.Decode([]byte(tt.args), nil); err != nil {
				t.Fatal(err)
			}
			if !s.fast.valid(d.Root(), nil) {
				t.Fatal("the fast path refused the call")
			}
			if n := testing.AllocsPerRun(100, func() { _, _, _ = s.CheckValue(d.Root()) }); n != 0 {
				t.Errorf("%v allocations per call, want 0", n)
			}
		})
	}
}

// TestFastPathDefers shows the calls the fast path leaves to the validator although
// they pass: uniqueness past its comparison budget. The decision is the validator's.
func TestFastPathDefers(t *testing.T) {
	s := mustCompile(t, `{"properties":{"u":{"type":"array","uniqueItems":true}}}`, nil)
	items := make([]string, 200)
	for i := range items {
		items[i] = strconv.Itoa(i)
	}
	strs := make([]string, 21)
	for i := range strs {
		strs[i] = `"` + strings.Repeat("x", 40_000) + strconv.Itoa(i) + `"`
	}
	for _, a := range []string{
		`{"u":[` + strings.Join(items, ",") + `]}`,
		`{"u":[` + strings.Join(strs, ",") + `]}`,
	} {
		var d args.Doc
		if err := d.Decode([]byte(a), nil); err != nil {
			t.Fatal(err)
		}
		if s.fast.valid(d.Root(), nil) {
			t.Errorf("%.40s…: the fast path decided past its budget", a)
		}
		if _, _, err := s.CheckValue(d.Root()); err != nil {
			t.Errorf("%.40s…: %v", a, err)
		}
	}
}
