package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aegis-mcp/aegis/internal/args"
)

func mustCompile(t testing.TB, schema string, o *Options) *Schema {
	t.Helper()
	s, err := Compile([]byte(schema), o)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return s
}

// verdict is what a test expects of Check: "" for success, else "pointer keyword".
func verdict(err error) string {
	if err == nil {
		return ""
	}
	var v *Violation
	if !errors.As(err, &v) {
		return "not a Violation: " + err.Error()
	}
	return v.Pointer + " " + v.Keyword
}

// tool is a 2020-12 schema exercising the common keywords.
const tool = `{
	"type": "object",
	"properties": {
		"path":  {"type": "string", "maxLength": 5},
		"limit": {"type": "integer", "minimum": 0, "maximum": 1000},
		"mode":  {"enum": ["fast", "slow"]},
		"tags":  {"type": "array", "maxItems": 3, "uniqueItems": true,
		          "items": {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]}},
		"ratio": {"type": "number", "exclusiveMaximum": 1, "multipleOf": 0.25},
		"id":    {"type": "string", "format": "uuid"},
		"note":  {"type": "string", "format": "x-aegis-unknown", "pattern": "^[a-z]*$"},
		"data":  {},
		"any":   true,
		"obj":   {"type": "object"}
	},
	"required": ["path"]
}`

func TestCheckClosed(t *testing.T) {
	s := mustCompile(t, tool, nil)
	tests := []struct {
		name, args, want string
	}{
		{"minimal", `{"path":"a"}`, ""},
		{"all fields", `{"path":"a","limit":5,"mode":"fast","tags":[{"k":"x"}],"ratio":0.75,"id":"123e4567-e89b-12d3-a456-426614174000","note":"abc","data":{"x":[1]},"any":{"y":2},"obj":{}}`, ""},

		// Keys the schema does not declare.
		{"extra key at root", `{"path":"a","sudo":true}`, "/sudo additionalProperties"},
		{"extra key in object in array", `{"path":"a","tags":[{"k":"x"},{"k":"y","evil":1}]}`, "/tags/1/evil additionalProperties"},
		{"__proto__", `{"path":"a","__proto__":{"admin":true}}`, "/__proto__ additionalProperties"},
		{"constructor", `{"path":"a","constructor":{"prototype":{}}}`, "/constructor additionalProperties"},
		{"key differing only in case", `{"Path":"a"}`, "/path required"},
		{"key differing only in case, optional", `{"path":"a","Limit":5}`, "/Limit additionalProperties"},
		{"fullwidth key", `{"path":"a","ｐａｔｈ":"b"}`, "/ｐａｔｈ additionalProperties"},
		{"key with slash and tilde", `{"path":"a","a/b~c":1}`, "/a~1b~0c additionalProperties"},
		{"empty key", `{"path":"a","":1}`, "/ additionalProperties"},
		{"member of a type:object without properties", `{"path":"a","obj":{"k":1}}`, "/obj/k additionalProperties"},
		{"always-true schema stays open", `{"path":"a","data":{"anything":{"deep":1}}}`, ""},
		{"boolean true schema stays open", `{"path":"a","any":{"anything":1}}`, ""},

		// Spellings and duplicates, refused or accepted by the strict decoder.
		{"unicode-escaped spelling of a declared key", `{"p\u0061th":"a"}`, ""},
		{"duplicate key", `{"path":"a","path":"b"}`, " json"},
		{"duplicate after unescaping", `{"path":"a","p\u0061th":"b"}`, " json"},
		{"case-variant duplicate", `{"path":"a","PATH":"b"}`, " json"},
		{"not an object", `["path"]`, " json"},
		{"trailing garbage", `{"path":"a"} x`, " json"},
		{"lone surrogate", `{"path":"\ud800"}`, " json"},

		// Types.
		{"string for integer", `{"path":"a","limit":"5"}`, "/limit type"},
		{"5.0 is an integer", `{"path":"a","limit":5.0}`, ""},
		{"1e2 is an integer", `{"path":"a","limit":1e2}`, ""},
		{"5.5 is not an integer", `{"path":"a","limit":5.5}`, "/limit type"},
		{"null for string", `{"path":null}`, "/path type"},
		{"bool for string", `{"path":true}`, "/path type"},
		{"object for string", `{"path":{"toString":"x"}}`, "/path type"},
		{"array for string", `{"path":["a"]}`, "/path type"},

		// Numbers without an exact double value.
		{"1e400", `{"path":"a","limit":1e400}`, "/limit number"},
		{"-1e400", `{"path":"a","limit":-1e400}`, "/limit number"},
		{"1e-400", `{"path":"a","ratio":1e-400}`, "/ratio number"},
		{"2^53+1", `{"path":"a","limit":9007199254740993}`, "/limit number"},
		{"huge exponent", `{"path":"a","limit":1e999999999}`, "/limit number"},
		{"tiny exponent", `{"path":"a","limit":1e-999999999}`, "/limit number"},
		{"inexact number in an open field", `{"path":"a","data":[0.10000000000000001]}`, "/data/0 number"},
		{"long but exact", `{"path":"a","limit":100.000000000000000000000000000000}`, ""},

		// Bounds.
		{"enum mismatch", `{"path":"a","mode":"FAST"}`, "/mode enum"},
		{"enum wrong type", `{"path":"a","mode":1}`, "/mode enum"},
		{"maximum", `{"path":"a","limit":1001}`, "/limit maximum"},
		{"minimum", `{"path":"a","limit":-1}`, "/limit minimum"},
		{"exclusiveMaximum", `{"path":"a","ratio":1}`, "/ratio exclusiveMaximum"},
		{"multipleOf", `{"path":"a","ratio":0.3}`, "/ratio multipleOf"},
		{"multipleOf ok", `{"path":"a","ratio":0.5}`, ""},
		{"maxItems", `{"path":"a","tags":[{"k":"1"},{"k":"2"},{"k":"3"},{"k":"4"}]}`, "/tags maxItems"},
		{"uniqueItems", `{"path":"a","tags":[{"k":"1"},{"k":"1"}]}`, "/tags uniqueItems"},
		{"required missing", `{}`, "/path required"},
		{"required missing in item", `{"path":"a","tags":[{}]}`, "/tags/0/k required"},
		{"pattern", `{"path":"a","note":"ABC"}`, "/note pattern"},

		// Lengths count code points, not bytes or UTF-16 units.
		{"five emoji fit maxLength 5", `{"path":"😀😀😀😀😀"}`, ""},
		{"six emoji do not", `{"path":"😀😀😀😀😀😀"}`, "/path maxLength"},
		{"escaped emoji count once", `{"path":"\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00"}`, ""},
		{"six ASCII", `{"path":"abcdef"}`, "/path maxLength"},

		// Formats: known ones asserted, unknown ones annotations.
		{"uuid format asserted", `{"path":"a","id":"../../etc/passwd"}`, "/id format"},
		{"unknown format ignored", `{"path":"a","note":"abc"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, clamped, err := s.Check([]byte(tt.args))
			if diff := cmp.Diff(tt.want, verdict(err)); diff != "" {
				t.Errorf("verdict (-want +got):\n%s\nerr: %v", diff, err)
			}
			if out != nil || clamped != nil {
				t.Errorf("no clamps configured, got out %q clamped %q", out, clamped)
			}
		})
	}
}

func TestCheckCombinators(t *testing.T) {
	tests := []struct {
		name, schema, args, want string
	}{
		// allOf: the branches' properties combine, a third key is refused.
		{"allOf combined", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"integer"}}}]}`, `{"a":"x","b":1}`, ""},
		{"allOf one branch", `{"allOf":[{"properties":{"a":{"type":"string"}}},{"properties":{"b":{"type":"integer"}}}]}`, `{"a":"x"}`, ""},
		{"allOf extra key", `{"allOf":[{"properties":{"a":{"type":"string"}}},{"properties":{"b":{"type":"integer"}}}]}`, `{"a":"x","b":1,"c":2}`, "/c additionalProperties"},
		{"allOf branch type", `{"allOf":[{"properties":{"a":{"type":"string"}}},{"properties":{"b":{"type":"integer"}}}]}`, `{"a":"x","b":"1"}`, "/b type"},
		{"allOf as a property value", `{"properties":{"o":{"allOf":[{"properties":{"a":{}}},{"properties":{"b":{}}}]}}}`, `{"o":{"a":1,"b":2}}`, ""},
		{"allOf as a property value, extra", `{"properties":{"o":{"allOf":[{"properties":{"a":{}}},{"properties":{"b":{}}}]}}}`, `{"o":{"a":1,"b":2,"c":3}}`, "/o/c additionalProperties"},
		{"allOf with additionalProperties true in a branch", `{"allOf":[{"properties":{"a":{}}},{"additionalProperties":true}]}`, `{"a":1,"z":2}`, "/z additionalProperties"},
		{"allOf with unevaluatedProperties {} in a branch", `{"allOf":[{"properties":{"a":{}}},{"unevaluatedProperties":{}}]}`, `{"a":1,"z":2}`, "/z additionalProperties"},

		// anyOf: a key declared only by a failing branch is not evaluated.
		{"anyOf branch a", anyOfModes, `{"mode":"a","x":1}`, ""},
		{"anyOf branch b", anyOfModes, `{"mode":"b","y":"s"}`, ""},
		{"anyOf smuggled key of the other branch", anyOfModes, `{"mode":"a","x":1,"y":{"evil":1}}`, "/y additionalProperties"},
		{"anyOf matches none", anyOfModes, `{"mode":"c"}`, " anyOf"},
		{"oneOf", `{"oneOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"string"}},"required":["b"]}]}`, `{"a":"x"}`, ""},
		{"oneOf both", `{"oneOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"string"}},"required":["b"]}]}`, `{"a":"x","b":"y"}`, " oneOf"},
		{"optional as anyOf with null", `{"properties":{"n":{"anyOf":[{"type":"integer"},{"type":"null"}]}}}`, `{"n":null}`, ""},
		{"optional as anyOf with null, string", `{"properties":{"n":{"anyOf":[{"type":"integer"},{"type":"null"}]}}}`, `{"n":"1"}`, "/n anyOf"},

		// if/then/else: what then declares is allowed only when if holds.
		{"then applies", ifThen, `{"kind":"file","path":"x"}`, ""},
		{"else applies", ifThen, `{"kind":"url","url":"x"}`, ""},
		{"then key under else", ifThen, `{"kind":"url","path":"x"}`, "/path additionalProperties"},
		{"else key under then", ifThen, `{"kind":"file","url":"x"}`, "/url additionalProperties"},

		// dependentSchemas: b is declared only when a is present.
		{"dependentSchemas present", `{"properties":{"a":{}},"dependentSchemas":{"a":{"properties":{"b":{}}}}}`, `{"a":1,"b":2}`, ""},
		{"dependentSchemas absent", `{"properties":{"a":{}},"dependentSchemas":{"a":{"properties":{"b":{}}}}}`, `{"b":2}`, "/b additionalProperties"},

		// not contributes nothing.
		{"key only under not", `{"properties":{"a":{}},"not":{"properties":{"b":{"type":"string"}},"required":["b"]}}`, `{"a":1,"b":1}`, "/b additionalProperties"},

		// $ref: siblings combine with the target (2020-12), into $defs and recursively.
		{"$ref and siblings", `{"$defs":{"base":{"properties":{"a":{}}}},"$ref":"#/$defs/base","properties":{"b":{}}}`, `{"a":1,"b":2}`, ""},
		{"$ref and siblings, extra", `{"$defs":{"base":{"properties":{"a":{}}}},"$ref":"#/$defs/base","properties":{"b":{}}}`, `{"a":1,"c":2}`, "/c additionalProperties"},
		{"$ref to $defs object", refDefs, `{"p":{"x":1}}`, ""},
		{"$ref to $defs object, extra", refDefs, `{"p":{"x":1,"y":2}}`, "/p/y additionalProperties"},
		{"$ref to $defs object, type", refDefs, `{"p":{"x":"1"}}`, "/p/x type"},
		{"$ref to anchor", `{"$defs":{"p":{"$anchor":"point","properties":{"x":{}}}},"properties":{"p":{"$ref":"#point"}}}`, `{"p":{"x":1,"y":2}}`, "/p/y additionalProperties"},
		{"$ref to definitions", `{"definitions":{"p":{"properties":{"x":{}}}},"properties":{"p":{"$ref":"#/definitions/p"}}}`, `{"p":{"y":2}}`, "/p/y additionalProperties"},
		{"$ref with escaped pointer", `{"$defs":{"a/b c":{"type":"string"}},"properties":{"p":{"$ref":"#/$defs/a~1b%20c"}}}`, `{"p":1}`, "/p type"},
		{"tree", tree, `{"name":"r","children":[{"name":"a","children":[{"name":"b","children":[]}]}]}`, ""},
		{"tree, extra key deep", tree, `{"name":"r","children":[{"name":"a","children":[{"name":"b","evil":1}]}]}`, "/children/0/children/0/evil additionalProperties"},
		{"tree, missing name deep", tree, `{"name":"r","children":[{"name":"a","children":[{}]}]}`, "/children/0/children/0/name required"},
		{"recursion to the root", `{"properties":{"n":{"type":"integer"},"next":{"$ref":"#"}}}`, `{"n":1,"next":{"n":2,"next":{"n":3,"x":0}}}`, "/next/next/x additionalProperties"},

		// Boolean schemas.
		{"false property", `{"properties":{"a":false,"b":{}}}`, `{"a":1}`, "/a false"},
		{"false property absent", `{"properties":{"a":false,"b":{}}}`, `{"b":1}`, ""},
		{"true property", `{"properties":{"a":true}}`, `{"a":{"x":1}}`, ""},

		// What a server declares open: closed when always-true, kept when a schema.
		{"additionalProperties true", `{"properties":{"a":{}},"additionalProperties":true}`, `{"a":1,"b":2}`, "/b additionalProperties"},
		{"additionalProperties {}", `{"properties":{"a":{}},"additionalProperties":{"description":"anything"}}`, `{"a":1,"b":2}`, "/b additionalProperties"},
		{"unevaluatedProperties true", `{"properties":{"a":{}},"unevaluatedProperties":true}`, `{"a":1,"b":2}`, "/b additionalProperties"},
		{"map of strings", `{"properties":{"env":{"type":"object","additionalProperties":{"type":"string"}}}}`, `{"env":{"A":"1","B":"2"}}`, ""},
		{"map of strings, wrong value", `{"properties":{"env":{"type":"object","additionalProperties":{"type":"string"}}}}`, `{"env":{"A":1}}`, "/env/A type"},
		{"map of objects, closed inside", `{"properties":{"m":{"additionalProperties":{"properties":{"x":{}}}}}}`, `{"m":{"k":{"x":1,"y":2}}}`, "/m/k/y additionalProperties"},
		{"patternProperties", `{"patternProperties":{"^x-":{"type":"string"}}}`, `{"x-a":"s"}`, ""},
		{"patternProperties, unmatched", `{"patternProperties":{"^x-":{"type":"string"}}}`, `{"y":"s"}`, "/y additionalProperties"},
		{"server's own additionalProperties false", `{"properties":{"a":{}},"additionalProperties":false}`, `{"b":1}`, "/b additionalProperties"},
		{"propertyNames", `{"additionalProperties":{"type":"integer"},"propertyNames":{"maxLength":3}}`, `{"abcd":1}`, "/abcd propertyNames"},

		// Two allOf branches declaring the same object property with different
		// members: each closes it, so a combination is denied (documented).
		{"nested overlap denied", `{"allOf":[{"properties":{"o":{"properties":{"x":{}}}}},{"properties":{"o":{"properties":{"y":{}}}}}]}`, `{"o":{"x":1,"y":2}}`, "/o/x additionalProperties"},
		{"nested overlap, one side", `{"allOf":[{"properties":{"o":{"properties":{"x":{}}}}},{"properties":{"o":{"properties":{"y":{}}}}}]}`, `{"o":{}}`, ""},

		// Arrays are not closed: an extra item is the schema's business.
		{"prefixItems", `{"properties":{"p":{"prefixItems":[{"type":"number"},{"type":"number"}],"items":false}}}`, `{"p":[1,2,3]}`, "/p/2 false"},
		{"prefixItems ok", `{"properties":{"p":{"prefixItems":[{"type":"number"},{"type":"number"}],"items":false}}}`, `{"p":[1,2]}`, ""},
		{"objects in prefixItems closed", `{"properties":{"p":{"prefixItems":[{"properties":{"a":{}}}]}}}`, `{"p":[{"b":1}]}`, "/p/0/b additionalProperties"},
		{"contains", `{"properties":{"p":{"type":"array","contains":{"type":"string"}}}}`, `{"p":[1]}`, "/p contains"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema, nil)
			_, _, err := s.Check([]byte(tt.args))
			if diff := cmp.Diff(tt.want, verdict(err)); diff != "" {
				t.Errorf("verdict (-want +got):\n%s\nerr: %v", diff, err)
			}
		})
	}
}

const anyOfModes = `{"anyOf":[
	{"properties":{"mode":{"const":"a"},"x":{"type":"integer"}},"required":["mode"]},
	{"properties":{"mode":{"const":"b"},"y":{"type":"string"}},"required":["mode"]}
]}`

const ifThen = `{
	"properties":{"kind":{"enum":["file","url"]}},
	"if":{"properties":{"kind":{"const":"file"}}},
	"then":{"properties":{"path":{"type":"string"}}},
	"else":{"properties":{"url":{"type":"string"}}}
}`

const refDefs = `{"$defs":{"p":{"type":"object","properties":{"x":{"type":"integer"}}}},"properties":{"p":{"$ref":"#/$defs/p"}}}`

const tree = `{
	"$defs":{"node":{"type":"object","properties":{
		"name":{"type":"string"},
		"children":{"type":"array","items":{"$ref":"#/$defs/node"}}
	},"required":["name"]}},
	"$ref":"#/$defs/node"
}`

func TestDrafts(t *testing.T) {
	const d4 = `"$schema":"http://json-schema.org/draft-04/schema#"`
	const d6 = `"$schema":"http://json-schema.org/draft-06/schema#"`
	const d7 = `"$schema":"http://json-schema.org/draft-07/schema#"`
	const d2019 = `"$schema":"https://json-schema.org/draft/2019-09/schema"`
	const d2020 = `"$schema":"https://json-schema.org/draft/2020-12/schema"`
	tests := []struct {
		name, schema, args, want string
	}{
		{"draft 7 closed", `{` + d7 + `,"properties":{"a":{"type":"string"}}}`, `{"a":"x","b":1}`, "/b additionalProperties"},
		{"draft 7 without #", `{"$schema":"http://json-schema.org/draft-07/schema","properties":{"a":{}}}`, `{"b":1}`, "/b additionalProperties"},
		{"draft 7 https", `{"$schema":"https://json-schema.org/draft-07/schema#","properties":{"a":{}}}`, `{"a":1}`, ""},
		{"draft 7 allOf combined", `{` + d7 + `,"allOf":[{"properties":{"a":{}}},{"properties":{"b":{}}}]}`, `{"a":1,"b":2}`, ""},
		{"draft 7 allOf extra", `{` + d7 + `,"allOf":[{"properties":{"a":{}}},{"properties":{"b":{}}}]}`, `{"a":1,"c":2}`, "/c additionalProperties"},
		{"draft 7 tuple", `{` + d7 + `,"properties":{"pt":{"type":"array","items":[{"type":"number"},{"type":"number"}],"additionalItems":false}}}`, `{"pt":[1,2]}`, ""},
		{"draft 7 tuple too long", `{` + d7 + `,"properties":{"pt":{"type":"array","items":[{"type":"number"},{"type":"number"}],"additionalItems":false}}}`, `{"pt":[1,2,3]}`, "/pt/2 false"},
		{"draft 7 tuple type", `{` + d7 + `,"properties":{"pt":{"type":"array","items":[{"type":"number"},{"type":"number"}]}}}`, `{"pt":["a",2]}`, "/pt/0 type"},
		{"draft 7 items schema", `{` + d7 + `,"properties":{"l":{"items":{"properties":{"a":{}}}}}}`, `{"l":[{"b":1}]}`, "/l/0/b additionalProperties"},
		{"draft 7 $ref siblings ignored", `{` + d7 + `,"definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s","type":"integer"}}}`, `{"a":"x"}`, ""},
		{"draft 7 $ref target applies", `{` + d7 + `,"definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s","type":"integer"}}}`, `{"a":1}`, "/a type"},
		{"draft 7 dependencies names", `{` + d7 + `,"properties":{"a":{},"b":{}},"dependencies":{"a":["b"]}}`, `{"a":1}`, " dependentRequired"},
		{"draft 7 dependencies names ok", `{` + d7 + `,"properties":{"a":{},"b":{}},"dependencies":{"a":["b"]}}`, `{"a":1,"b":1}`, ""},
		{"draft 7 dependencies schema declares", `{` + d7 + `,"properties":{"a":{}},"dependencies":{"a":{"properties":{"b":{}}}}}`, `{"a":1,"b":1}`, ""},
		{"draft 7 unknown later keyword dropped", `{` + d7 + `,"properties":{"a":{}},"unevaluatedProperties":{"type":"string"}}`, `{"a":1,"z":"s"}`, "/z additionalProperties"},
		{"draft 7 if/then", `{` + d7 + `,"properties":{"k":{}},"if":{"properties":{"k":{"const":1}}},"then":{"properties":{"x":{}}}}`, `{"k":1,"x":1}`, ""},
		{"draft 7 anchor id", `{` + d7 + `,"definitions":{"p":{"$id":"#pt","properties":{"x":{}}}},"properties":{"p":{"$ref":"#pt"}}}`, `{"p":{"y":1}}`, "/p/y additionalProperties"},
		{"draft 7 format asserted", `{` + d7 + `,"properties":{"u":{"type":"string","format":"uuid"}}}`, `{"u":"x"}`, "/u format"},
		{"draft 6 if ignored", `{` + d6 + `,"properties":{"k":{}},"if":{"properties":{"k":{"const":1}}},"then":false}`, `{"k":1}`, ""},
		{"draft 6 const", `{` + d6 + `,"properties":{"k":{"const":1}}}`, `{"k":2}`, "/k const"},
		{"draft 4 exclusiveMaximum boolean", `{` + d4 + `,"properties":{"n":{"type":"number","maximum":10,"exclusiveMaximum":true}}}`, `{"n":10}`, "/n exclusiveMaximum"},
		{"draft 4 exclusiveMaximum boolean, below", `{` + d4 + `,"properties":{"n":{"type":"number","maximum":10,"exclusiveMaximum":true}}}`, `{"n":9}`, ""},
		{"draft 4 exclusiveMaximum false", `{` + d4 + `,"properties":{"n":{"maximum":10,"exclusiveMaximum":false}}}`, `{"n":10}`, ""},
		{"draft 4 const ignored", `{` + d4 + `,"properties":{"k":{"const":1}}}`, `{"k":2}`, ""},
		{"draft 4 id anchor", `{` + d4 + `,"definitions":{"p":{"id":"#pt","properties":{"x":{}}}},"properties":{"p":{"$ref":"#pt"}}}`, `{"p":{"y":1}}`, "/p/y additionalProperties"},
		{"2019-09 closed", `{` + d2019 + `,"properties":{"a":{}}}`, `{"b":1}`, "/b additionalProperties"},
		{"2019-09 tuple items", `{` + d2019 + `,"properties":{"p":{"items":[{"type":"string"}],"additionalItems":false}}}`, `{"p":["a",1]}`, "/p additionalItems"},
		{"2020-12 explicit", `{` + d2020 + `,"properties":{"a":{}}}`, `{"b":1}`, "/b additionalProperties"},
		{"2020-12 http", `{"$schema":"http://json-schema.org/draft/2020-12/schema#","properties":{"a":{}}}`, `{"a":1}`, ""},
		{"2020-12 dependencies ignored", `{"properties":{"a":{},"b":{}},"dependencies":{"a":["b"]}}`, `{"a":1}`, ""},
		{"2020-12 nested dependencies ignored", `{"properties":{"o":{"properties":{"a":{},"b":{}},"dependencies":{"a":["b"]}}}}`, `{"o":{"a":1}}`, ""},
		{"2020-12 nested dependencies declare nothing", `{"properties":{"o":{"properties":{"a":{}},"dependencies":{"a":{"properties":{"x":{"type":"object"}}}}}}}`, `{"o":{"a":1,"x":{"evil":1}}}`, "/o/x additionalProperties"},
		{"2019-09 dependencies ignored", `{` + d2019 + `,"properties":{"o":{"properties":{"a":{}},"dependencies":{"a":{"properties":{"x":{}}}}}}}`, `{"o":{"a":1,"x":1}}`, "/o/x additionalProperties"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema, nil)
			_, _, err := s.Check([]byte(tt.args))
			if diff := cmp.Diff(tt.want, verdict(err)); diff != "" {
				t.Errorf("verdict (-want +got):\n%s\nerr: %v", diff, err)
			}
		})
	}
}

func TestCompileRefused(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"remote $ref", `{"properties":{"x":{"$ref":"https://evil.example/s.json"}}}`, "only references within the schema"},
		{"relative $ref", `{"properties":{"x":{"$ref":"other.json#/a"}}}`, "only references within the schema"},
		{"remote $ref behind root $id", `{"$id":"https://evil.example/root.json","properties":{"x":{"$ref":"other.json"}}}`, "only references within the schema"},
		{"file $ref", `{"properties":{"x":{"$ref":"file:///etc/passwd"}}}`, "only references within the schema"},
		{"metaschema $ref", `{"properties":{"x":{"$ref":"https://json-schema.org/draft/2020-12/schema"}}}`, "only references within the schema"},
		{"$ref to a missing pointer", `{"properties":{"x":{"$ref":"#/$defs/nope"}}}`, "does not point at a schema"},
		{"$ref to a missing anchor", `{"properties":{"x":{"$ref":"#nope"}}}`, "names no anchor"},
		{"$ref into an enum", `{"enum":[{"additionalProperties":true}],"properties":{"x":{"$ref":"#/enum/0"}}}`, "does not point at a schema"},
		{"$ref into an unknown keyword", `{"x-hidden":{"open":{"additionalProperties":true}},"properties":{"x":{"$ref":"#/x-hidden/open"}}}`, "does not point at a schema"},
		{"$ref to a removed opener", `{"properties":{"x":{}},"additionalProperties":true,"$defs":{"y":{"$ref":"#/additionalProperties"}}}`, "does not point at a schema"},
		{"$ref not a string", `{"properties":{"x":{"$ref":1}}}`, "only references within the schema"},
		{"unknown $schema", `{"$schema":"https://evil.example/meta","properties":{}}`, "not a draft aegis knows"},
		{"draft 3", `{"$schema":"http://json-schema.org/draft-03/schema#"}`, "not a draft aegis knows"},
		{"$schema not a string", `{"$schema":1}`, "not a string"},
		{"nested $id", `{"properties":{"x":{"$id":"https://evil.example/x","type":"string"}}}`, "embedded schema resources"},
		{"nested $schema", `{"properties":{"x":{"$schema":"https://json-schema.org/draft/2020-12/schema"}}}`, "embedded schema resources"},
		{"draft 7 nested base id", `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"x":{"$id":"https://evil.example/x"}}}`, "changes the base URI"},
		{"$dynamicRef", `{"$dynamicAnchor":"a","properties":{"x":{"$dynamicRef":"#a"}}}`, "$dynamicRef"},
		{"$recursiveRef", `{"$schema":"https://json-schema.org/draft/2019-09/schema","properties":{"x":{"$recursiveRef":"#"}}}`, "$recursiveRef"},
		{"invalid keyword value", `{"properties":{"x":{"type":"strin"}}}`, "metaschema"},
		{"lookahead pattern", `{"properties":{"x":{"type":"string","pattern":"^(?!\\.)"}}}`, "regex"},
		{"not JSON", `{"properties":`, "not a strict JSON object"},
		{"not an object", `[]`, "not a strict JSON object"},
		{"duplicate keys", `{"type":"object","type":"string"}`, "not a strict JSON object"},
		{"inexact number", `{"properties":{"x":{"maximum":1e400}}}`, "no exact IEEE 754"},
		{"draft 4 numeric exclusiveMaximum", `{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"x":{"exclusiveMaximum":5}}}`, "not a boolean"},
		{"in-place cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, "refers to itself in place"},
		{"self in-place cycle", `{"allOf":[{"$ref":"#"}]}`, "refers to itself in place"},
		{"exponential", exponential, "too complex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile([]byte(tt.schema), nil)
			if err == nil {
				t.Fatalf("Compile succeeded; want an error containing %q", tt.want)
			}
			if !errors.Is(err, ErrCompile) {
				t.Errorf("error %v does not wrap ErrCompile", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines", err)
			}
			// The nil schema a failed Compile returns denies every call.
			if _, _, err := s.Check([]byte(`{}`)); verdict(err) != " schema" {
				t.Errorf("nil schema: got %v, want a schema violation", err)
			}
		})
	}
}

// exponential doubles the work per level: both allOf branches reach the node again.
const exponential = `{
	"$defs":{"n":{"type":"object","allOf":[
		{"properties":{"c":{"$ref":"#/$defs/n"}}},
		{"properties":{"c":{"$ref":"#/$defs/n"}}}
	]}},
	"$ref":"#/$defs/n"
}`

func TestCompileAcceptsDeepButLinear(t *testing.T) {
	// A recursive tree costs linearly in the depth, and compiles.
	mustCompile(t, tree, nil)
	mustCompile(t, `{"properties":{"n":{"type":"integer"},"next":{"$ref":"#"}}}`, nil)
}

func TestViolationMessage(t *testing.T) {
	s := mustCompile(t, tool, nil)
	long := strings.Repeat("k", 5000)
	tests := []struct {
		name, args, want string
	}{
		{"type", `{"path":1}`, "arguments at /path: type: got number, want string"},
		{"enum lists the schema's values", `{"path":"a","mode":"x"}`, `arguments at /mode: enum: value is not one of the allowed values ["fast","slow"]`},
		{"extra key", `{"path":"a","x":1}`, "arguments at /x: additionalProperties: property is not in the tool's input schema"},
		{"missing", `{}`, "arguments at /path: required: required property is missing"},
		{"maximum", `{"path":"a","limit":5000}`, "arguments at /limit: maximum: value is above the maximum 1000"},
		{"long key capped", `{"path":"a","` + long + `":1}`, "arguments at /" + strings.Repeat("k", 60) + "…: additionalProperties: property is not in the tool's input schema"},
		{"control characters quoted", `{"path":"a","a\nb":1}`, `arguments at "/a\nb": additionalProperties: property is not in the tool's input schema`},
		{"json", `{"path":"a","path":"b"}`, "arguments at (root): json: args: invalid JSON at byte 12: duplicate object key, or one differing only in case (first at byte 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := s.Check([]byte(tt.args))
			if err == nil {
				t.Fatal("Check succeeded")
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			var v *Violation
			errors.As(err, &v)
			if len(v.Message) > MaxMessage {
				t.Errorf("message of %d bytes, over MaxMessage", len(v.Message))
			}
		})
	}
}

func TestViolationNeverEchoesValues(t *testing.T) {
	s := mustCompile(t, tool, nil)
	const secret = "sk-live-SECRETSECRET"
	for _, a := range []string{
		`{"path":"` + secret + `"}`,
		`{"path":"a","mode":"` + secret + `"}`,
		`{"path":"a","id":"` + secret + `"}`,
		`{"path":"a","note":"` + secret + `"}`,
		`{"path":"a","limit":"` + secret + `"}`,
		`{"path":"a","tags":[{"k":"` + secret + `"},{"k":"` + secret + `"}]}`,
	} {
		_, _, err := s.Check([]byte(a))
		if err == nil {
			t.Fatalf("%s: Check succeeded", a)
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: message echoes the value: %v", a, err)
		}
	}
}

func TestDecodeLimitUnwraps(t *testing.T) {
	s := mustCompile(t, tool, &Options{Limits: &args.Limits{MaxDepth: 3}})
	_, _, err := s.Check([]byte(`{"path":"a","data":[[[[1]]]]}`))
	if !errors.Is(err, args.ErrLimit) {
		t.Errorf("got %v, want an error wrapping args.ErrLimit", err)
	}
}

func TestDeterministicViolation(t *testing.T) {
	// Several violations in one call: the same one is reported every time, whatever
	// the validator's map order.
	s := mustCompile(t, tool, nil)
	a := []byte(`{"path":1,"limit":"x","mode":2,"zz":1,"aa":2,"tags":[{"q":1}]}`)
	_, _, first := s.Check(a)
	for range 50 {
		_, _, err := s.Check(a)
		if diff := cmp.Diff(verdict(first), verdict(err)); diff != "" {
			t.Fatalf("violation changed between runs (-first +now):\n%s", diff)
		}
	}
}
