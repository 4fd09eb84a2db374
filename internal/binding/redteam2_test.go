package binding

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// TestRedteamURLOrPath: a git remote the server hands to git must derive
// what git will do with it: an option (-u/--upload-pack runs a command),
// a UNC path, or a transport that runs programs is refused, not read as
// a harmless relative path under the base.
func TestRedteamURLOrPath(t *testing.T) {
	o := &Options{Path: capability.PathOptions{Home: "/home/a", Bases: []string{"/work"}}}
	remote := &Binding{Tool: "t", Args: []Arg{curatedArg("/u", capability.NetConnect, FormURLOrPath)}}
	for _, arg := range []string{
		"--upload-pack=touch${IFS}pwned",
		"-uevil",
		"-oProxyCommand=calc",
		`\\evil.com\share`,
		"data://evil.com/repo.git",
		"file://evil.com/repo.git",
		"ext::sh -c touch% /tmp/pwned",
		"fd::17",
	} {
		t.Run(arg, func(t *testing.T) {
			b, _ := json.Marshal(map[string]string{"u": arg})
			caps, err := derive(t, remote, string(b), o)
			if err == nil {
				t.Errorf("%q derived %s, want an error", arg, fmt.Sprint(caps))
			}
		})
	}
}
