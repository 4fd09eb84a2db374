package policy

import (
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// BenchmarkCondition times one evaluation of the condition of
// examples/filesystem/policy.yaml on an fs.read capability.
func BenchmarkCondition(b *testing.B) {
	cond, err := compileCondition(`cap.path.endsWith("/.env") || cap.path.contains("/.env.")`)
	if err != nil {
		b.Fatal(err)
	}
	req := &Request{Server: "fs", Tool: "read_text_file", Principal: "alice", Roles: []string{"dev"}}
	c := capability.Capability{Kind: capability.FSRead, Path: "/home/alice/projects/aegis/internal/pkg7/file-12345.go"}
	b.ReportAllocs()
	for b.Loop() {
		v := newCELVars(req)
		v.setCap(&c)
		if ok, err := cond.eval(v); ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
