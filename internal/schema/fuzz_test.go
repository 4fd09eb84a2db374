package schema

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
)

// FuzzCheck checks that Check never panics, that it either accepts or returns a
// *Violation, that what it accepts (after clamping) is strict JSON that passes again
// unchanged, and that accepted arguments stay within the clamps.
func FuzzCheck(f *testing.F) {
	fs := loadTools(f, "testdata/server-filesystem.tools.json")
	schemas := []*Schema{
		mustCompile(f, tool, nil),
		mustCompile(f, listing, listingOptions()),
		mustCompile(f, tree, nil),
		mustCompile(f, anyOfModes, nil),
		mustCompile(f, ifThen, nil),
		mustCompile(f, string(fs["edit_file"]), nil),
		mustCompile(f, `{"allOf":[{"properties":{"a":{"type":"string"}}},{"properties":{"b":{"type":"integer"}}}]}`, nil),
	}
	for _, seed := range []string{
		`{"path":"a","limit":5,"tags":[{"k":"x"}]}`,
		`{"limit":1e9,"pages":[{"size":70},{"size":-1}],"opt":-3,"free":{"limit":99}}`,
		`{"name":"r","children":[{"name":"a","children":[{"name":"b","evil":1}]}]}`,
		`{"mode":"a","x":1,"y":{}}`,
		`{"kind":"file","path":"x"}`,
		`{"path":"/a","edits":[{"oldText":"x","newText":"y"}],"dryRun":true}`,
		`{"a":"x","b":1,"c":2}`,
		`{"p\u0061th":"😀😀😀😀😀","__proto__":{}}`,
		`{"limit":9007199254740993,"ratio":1e-400}`,
		`{"limit":"1000","opt":null}`,
	} {
		for i := range schemas {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		s := schemas[int(which)%len(schemas)]
		out, clamped, err := s.Check(data)
		if err != nil {
			var v *Violation
			if !errors.As(err, &v) {
				t.Fatalf("error %v is not a *Violation", err)
			}
			if out != nil || clamped != nil {
				t.Fatalf("a violation with output %q %q", out, clamped)
			}
			if len(v.Message) > MaxMessage {
				t.Fatalf("message of %d bytes", len(v.Message))
			}
			return
		}
		if (out == nil) != (len(clamped) == 0) {
			t.Fatalf("out %q with clamped %q", out, clamped)
		}
		forward := data
		if out != nil {
			forward = out
		}
		var d args.Doc
		if err := d.Decode(forward, nil); err != nil {
			t.Fatalf("forwarded arguments %q are not strict JSON: %v", forward, err)
		}
		out2, clamped2, err := s.Check(forward)
		if err != nil || out2 != nil || clamped2 != nil {
			t.Fatalf("forwarded arguments %q do not pass unchanged: %q %q %v", forward, out2, clamped2, err)
		}
		if out != nil {
			// Clamping rewrites numbers only: the same members, in the same order.
			var a, b args.Doc
			_ = a.Decode(data, nil)
			_ = b.Decode(out, nil)
			if a.Root().Len() != b.Root().Len() {
				t.Fatalf("clamping changed the member count: %q -> %q", data, out)
			}
			if bytes.Equal(out, data) {
				t.Fatalf("out equals the input although something was clamped")
			}
		}
	})
}

// FuzzCompile checks that Compile never panics on any schema, that its errors wrap
// ErrCompile, that a schema it accepts can check arguments without panicking and
// accepts what it forwards, and that its fast path decides as the validator does.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		tool, listing, tree, anyOfModes, ifThen, refDefs, exponential,
		`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"p":{"$id":"#pt","properties":{"x":{}}}},"properties":{"p":{"$ref":"#pt"},"t":{"items":[{"type":"number"}],"additionalItems":false}},"dependencies":{"p":["t"]}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"n":{"type":"number","maximum":10,"exclusiveMaximum":true}}}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","properties":{"p":{"items":[{"type":"string"}],"additionalItems":false}}}`,
		`{"allOf":[{"properties":{"a":{}}},{"additionalProperties":true}],"patternProperties":{"^x-":{"type":"string"}}}`,
		`{"properties":{"a":{"maxLength":1e30,"minItems":5e9}}}`,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`,
		`{"properties":{"a":{"type":["integer","null"],"multipleOf":0.5,"maximum":1e3},"u":{"uniqueItems":true,"items":{"enum":[1,"x",{"k":1}]}},"m":{"additionalProperties":{"const":2}}},"required":["a"]}`,
		`{"properties":{"s":{"type":"string","minLength":1,"maxLength":3,"pattern":"^a","format":"hostname"},"o":{"properties":{"p":false},"unevaluatedProperties":{"type":"number"}}},"dependentRequired":{"s":["o"]},"maxProperties":3}`,
	} {
		f.Add([]byte(s), []byte(`{"path":"a","limit":5,"a":{"x":1},"name":"n","children":[]}`))
	}
	f.Fuzz(func(t *testing.T, schema, arguments []byte) {
		s, err := Compile(schema, nil)
		if err != nil {
			if !errors.Is(err, ErrCompile) {
				t.Fatalf("error %v does not wrap ErrCompile", err)
			}
			return
		}
		// The fast path, where the schema has one, decides as the validator does.
		compareFastSlow(t, &fastCase{name: "fuzzed schema", s: s}, arguments)
		out, _, err := s.Check(arguments)
		if err != nil {
			return
		}
		forward := arguments
		if out != nil {
			forward = out
		}
		if _, _, err := s.Check(forward); err != nil {
			t.Fatalf("forwarded arguments refused on a second check: %v", err)
		}
	})
}

// FuzzPlainIntValue holds the integer shortcut of clamping to strconv.ParseFloat.
func FuzzPlainIntValue(f *testing.F) {
	for _, s := range []string{"0", "-0", "40", "-1", "999999999999999", "1000000000000000", "007", "1e3", "-", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, ok := plainIntValue(raw)
		if !ok {
			if isPlainInt(raw) && strings.Trim(raw, "-0") != "" {
				t.Fatalf("plainIntValue(%q) refused a plain integer", raw)
			}
			return // the caller parses it in full
		}
		want, err := strconv.ParseFloat(raw, 64)
		if err != nil || got != want || math.Signbit(got) != math.Signbit(want) {
			t.Fatalf("plainIntValue(%q) = %v, ParseFloat %v, %v", raw, got, want, err)
		}
	})
}
