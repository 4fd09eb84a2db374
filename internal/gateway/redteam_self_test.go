package gateway

import (
	"path/filepath"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// TestSelfExecReach: a simple command that reaches aegis's own files
// without spelling a path under them is refused as one that does. The
// fs.read/fs.write checks (selfCheck) already refuse a write of a parent
// of a protected path, a path through a link, and a relative one; an exec
// whose argument does the same MUST NOT slip through: `mv ~/.local/state
// /tmp/s` moves the approvals database (and chain.key) out of aegis's
// reach, and `sqlite3 ~/projects/st/approvals.db ...` (a link to the
// state) answers aegis's questions.
func TestSelfExecReach(t *testing.T) {
	w := newSelfWorld(t)
	e := selfEngine(t, w, "enforce", w.home)
	exec := func(argv ...string) capability.Capability {
		return capability.Capability{Kind: capability.Exec, Program: argv[0], Argv: argv}
	}
	parent := filepath.Dir(w.state) // ~/.local/state
	for _, tt := range []struct {
		name string
		cap  capability.Capability
	}{
		{"mv a parent of the state away", exec("mv", parent, "/tmp/s")},
		{"rm -rf a parent of the state", exec("rm", "-rf", filepath.Dir(parent))},
		{"tar a parent of the state (reads chain.key)", exec("tar", "cf", "/tmp/x.tar", parent)},
		{"cp -r a parent of the state (reads chain.key)", exec("cp", "-r", parent, "/tmp/x")},
		{"--opt=PATH", exec("cp", "/tmp/evil.db", "--target-directory="+w.state)},
		{"-tPATH", exec("cp", "-t"+w.state, "/tmp/approvals.db")},
		{"sqlite3 through a link to the state", exec("sqlite3", filepath.Join(w.home, "projects", "st", "approvals.db"), "update approvals set state='approved'")},
		{"cat the key through a link to it", exec("cat", filepath.Join(w.home, "projects", "key"))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := e.selfCheck([]capability.Capability{tt.cap}, false); err == nil {
				t.Errorf("selfCheck(exec %q) = nil; want refused under %s: it reaches %s", tt.cap.Argv, RuleSelf, w.state)
			}
		})
	}
}
