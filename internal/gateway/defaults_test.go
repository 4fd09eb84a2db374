package gateway

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/policy"
)

// TestSchemaDefaults: an argument the model leaves out is the default the
// pinned schema declares for it, which the server fills in (issue 15,
// "every default"): the capability is derived from it as if it had been
// written, and the default is forwarded, so that what aegis decided on is
// what the server gets.
func TestSchemaDefaults(t *testing.T) {
	e := newEngine(t, "")
	schemaOf := func(props string) []byte {
		return []byte(`{"type":"object","properties":{` + props + `}}`)
	}
	for _, tc := range []struct {
		name, tool, schema, args string
		want                     policy.Effect
		reason                   string // substring of the reason
		forwarded                string // the arguments forwarded, when allowed
	}{
		{"a default path in ~/.ssh", "read_text_file", `"path":{"type":"string","default":"/home/u/.ssh/id_rsa"}`, `{}`, policy.Deny, `no-ssh`, ``},
		{"a default path spelled with ~ and ..", "read_text_file", `"path":{"type":"string","default":"~/projects/../.ssh/id_rsa"}`, `{}`, policy.Deny, `no-ssh`, ``},
		{"a default through $ref", "read_text_file", `"path":{"$ref":"#/$defs/p"}},"$defs":{"p":{"type":"string","default":"/home/u/.ssh/id_rsa"}`, `{}`, policy.Deny, `no-ssh`, ``},
		{"a written path wins over the default", "read_text_file", `"path":{"type":"string","default":"/home/u/.ssh/id_rsa"}`, `{"path":"/home/u/projects/a"}`, policy.Allow, ``, `{"path":"/home/u/projects/a"}`},
		{"an allowed default is forwarded", "read_text_file", `"path":{"type":"string","default":"/home/u/projects/a"},"head":{"type":"number"}`, `{"head":3}`, policy.Allow, ``, `{"head":3,"path":"/home/u/projects/a"}`},
		{"a default list of paths", "read_multiple_files", `"paths":{"type":"array","items":{"type":"string"},"default":["/home/u/projects/a","/home/u/.ssh/id_rsa"]}`, `{}`, policy.Deny, `no-ssh`, ``},
		{"an empty list written is not defaulted", "read_multiple_files", `"paths":{"type":"array","items":{"type":"string"},"default":["/home/u/.ssh/id_rsa"]}`, `{"paths":[]}`, policy.Allow, ``, `{"paths":[]}`},
		{"two defaults the server may choose between", "read_text_file", `"path":{"anyOf":[{"type":"string","default":"/home/u/projects/a"},{"type":"string","default":"/home/u/.ssh/id_rsa"}]}`, `{}`, policy.Deny, `two defaults`, ``},
		{"no default, no capability", "read_text_file", `"path":{"type":"string"}`, `{}`, policy.Allow, ``, `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sch := schemaOf(tc.schema)
			v := e.Check(context.Background(), &Call{Server: "fs", Tool: tc.tool, Arguments: []byte(tc.args), Schema: sch, SchemaKey: sha256.Sum256(sch)})
			if v.Effect != tc.want {
				t.Fatalf("effect %s (%s), want %s", v.Effect, v.Reason(), tc.want)
			}
			if !strings.Contains(v.Reason(), tc.reason) {
				t.Errorf("reason %q, want it to contain %q", v.Reason(), tc.reason)
			}
			if tc.want == policy.Allow && string(v.Arguments) != tc.forwarded {
				t.Errorf("forwarded %s, want %s", v.Arguments, tc.forwarded)
			}
		})
	}
}
