package policy

import (
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// handwritten is the bench_10.yaml policy written as Go: the yardstick the
// design's budgets are measured against (DESIGN.md "Performance budgets").
func handwritten(r *Request) Effect {
	action := Deny
	switch {
	case strings.HasPrefix(r.Tool, "delete_"):
	case r.Server == "fs" && (strings.HasPrefix(r.Tool, "read_") || r.Tool == "list_directory"):
		action = Allow
	case r.Server == "fs" && r.Tool == "write_file" && hasRole(r.Roles, "dev"):
		action = Allow
	case r.Server == "fetch" && r.Tool == "fetch":
		action = Allow
	}
	if action == Deny {
		return Deny
	}
	for i := range r.Caps {
		c := &r.Caps[i]
		ok := false
		switch c.Kind {
		case capability.FSRead, capability.FSWrite:
			if capability.PathUnder(c.Path, "/home/a/.ssh") {
				return Deny
			}
			ok = capability.PathUnder(c.Path, "/srv/projects/team-537")
		case capability.NetConnect:
			if c.Classes&capability.Metadata != 0 {
				return Deny
			}
			ok = (c.Host == "api.github.com" || strings.HasSuffix(c.Host, ".githubusercontent.com")) && c.Port == 443 && c.Scheme == "https"
		case capability.Exec:
			if c.Program == "curl" || strings.HasSuffix(c.Program, "/curl") {
				return Deny
			}
			ok = c.Program == "git" || c.Program == "/usr/bin/git"
		}
		if !ok {
			return Deny
		}
	}
	return Allow
}

func hasRole(roles []string, want string) bool {
	for _, r := range roles {
		if r == want {
			return true
		}
	}
	return false
}

// BenchmarkHandwritten10 is the yardstick for BenchmarkDecide10: compare
// the two within one run.
func BenchmarkHandwritten10(b *testing.B) {
	r := benchRequest()
	if handwritten(r) != Allow {
		b.Fatal("handwritten policy denies the benchmark call")
	}
	b.ReportAllocs()
	for b.Loop() {
		handwritten(r)
	}
}
