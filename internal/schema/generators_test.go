package schema

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The shapes that common schema generators emit.
func TestGeneratorShapes(t *testing.T) {
	// zod-to-json-schema with a name: the root is a $ref into definitions.
	const zod = `{"$schema":"http://json-schema.org/draft-07/schema#","$ref":"#/definitions/Args",
		"definitions":{"Args":{"type":"object","properties":{"q":{"type":"string"},"opts":{"type":"object","properties":{"n":{"type":"number"}}}},"required":["q"]}}}`
	// pydantic v2: $defs, Optional as anyOf with null, a title everywhere, dict[str, Any].
	const pydantic = `{"$defs":{"Inner":{"properties":{"a":{"title":"A","type":"integer"}},"required":["a"],"title":"Inner","type":"object"}},
		"properties":{"inner":{"$ref":"#/$defs/Inner"},"opt":{"anyOf":[{"$ref":"#/$defs/Inner"},{"type":"null"}],"default":null},
		"extra":{"additionalProperties":true,"title":"Extra","type":"object"}},
		"required":["inner"],"title":"toolArguments","type":"object"}`
	tests := []struct {
		name, schema, args, want string
	}{
		{"zod root $ref", zod, `{"q":"x","opts":{"n":1}}`, ""},
		{"zod root $ref, extra at root", zod, `{"q":"x","evil":1}`, "/evil additionalProperties"},
		{"zod root $ref, extra nested", zod, `{"q":"x","opts":{"n":1,"evil":1}}`, "/opts/evil additionalProperties"},
		{"pydantic", pydantic, `{"inner":{"a":1},"opt":null}`, ""},
		{"pydantic optional object", pydantic, `{"inner":{"a":1},"opt":{"a":2}}`, ""},
		{"pydantic optional object, extra", pydantic, `{"inner":{"a":1},"opt":{"a":2,"x":3}}`, "/opt/x additionalProperties"},
		{"pydantic $ref object, extra", pydantic, `{"inner":{"a":1,"x":3}}`, "/inner/x additionalProperties"},
		{"pydantic dict[str, Any] is closed", pydantic, `{"inner":{"a":1},"extra":{"k":1}}`, "/extra/k additionalProperties"},
		{"pydantic wrong type in optional", pydantic, `{"inner":{"a":1},"opt":{"a":"2"}}`, "/opt anyOf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := mustCompile(t, tt.schema, nil).Check([]byte(tt.args))
			if diff := cmp.Diff(tt.want, verdict(err)); diff != "" {
				t.Errorf("verdict (-want +got):\n%s\nerr: %v", diff, err)
			}
		})
	}
	// The operator can leave the dict open.
	s := mustCompile(t, pydantic, &Options{Open: []string{"/extra"}})
	if _, _, err := s.Check([]byte(`{"inner":{"a":1},"extra":{"k":{"deep":1}}}`)); err != nil {
		t.Errorf("open dict: %v", err)
	}
}

func TestDeepRecursion(t *testing.T) {
	s := mustCompile(t, tree, nil)
	// 31 levels of nodes is 62 levels of nesting, under the decoder's MaxDepth of 64.
	var b strings.Builder
	const depth = 31
	for range depth {
		b.WriteString(`{"name":"n","children":[`)
	}
	b.WriteString(`{"name":"leaf","evil":1}`)
	for range depth {
		b.WriteString(`]}`)
	}
	_, _, err := s.Check([]byte(b.String()))
	want := strings.Repeat("/children/0", depth) + "/evil additionalProperties"
	if diff := cmp.Diff(want, verdict(err)); diff != "" {
		t.Errorf("verdict (-want +got):\n%s", diff)
	}
}

func TestHugeCounts(t *testing.T) {
	// The validator reads counts as int64 and would wrap 1e30; aegis caps them.
	s := mustCompile(t, `{"properties":{"a":{"maxLength":1e30},"b":{"minLength":1e30},"c":{"maxItems":1e19}}}`, nil)
	tests := []struct{ args, want string }{
		{`{"a":"xyz"}`, ""},
		{`{"b":"xyz"}`, "/b minLength"},
		{`{"c":[1,2,3]}`, ""},
	}
	for _, tt := range tests {
		if _, _, err := s.Check([]byte(tt.args)); verdict(err) != tt.want {
			t.Errorf("%s: got %v, want %q", tt.args, err, tt.want)
		}
	}
}
