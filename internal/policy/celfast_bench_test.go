package policy

import (
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// BenchmarkCondition times one evaluation of a condition on an fs.read
// capability, as Decide makes it for a call of one capability (the
// variables included), by the fast evaluation and by cel-go alone.
func BenchmarkCondition(b *testing.B) {
	req := &Request{Server: "fs", Tool: "read_text_file", Principal: "alice", Roles: []string{"ops", "dev"}}
	c := capability.Capability{Kind: capability.FSRead, Path: "/home/alice/projects/aegis/internal/pkg7/file-12345.go"}
	for _, cond := range []struct{ name, expr string }{
		// examples/filesystem/policy.yaml
		{"env", `cap.path.endsWith("/.env") || cap.path.contains("/.env.")`},
		{"roles", `call.roles.exists(r, r == "dev") && !cap.path.startsWith("/etc/")`},
	} {
		cc, err := compileCondition(cond.expr)
		if err != nil || cc.fast == nil {
			b.Fatal(err, cc.fast == nil)
		}
		for _, eval := range []struct {
			name string
			f    func(*celVars) (bool, error)
		}{{"fast", cc.eval}, {"cel-go", cc.evalCEL}} {
			b.Run(cond.name+"/"+eval.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					v := newCELVars(req)
					v.setCap(&c)
					if _, err := eval.f(v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
