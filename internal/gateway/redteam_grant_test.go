package gateway

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/approval"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// commandsSession is a session of mcp-server-commands whose every
// command asks, waiting in a store at path; each question is sent on
// asked.
func commandsSession(t *testing.T, path string) (*Session, chan *approval.Request) {
	t.Helper()
	p, err := policy.Parse("p.yaml", []byte(`version: 1
rules:
  - {id: cmd-tools, effect: allow, server: cmd, tool: "*"}
  - {id: work, effect: allow, capability: [fs.read, fs.write], path_under: /home/a}
  - {id: ask-exec, effect: ask, capability: exec}
`), &policy.Options{Home: "/home/a"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(p, []*Server{{
		Name:     "cmd",
		Bindings: binding.Builtins()["commands"].Tools,
		Options:  binding.Options{Path: capability.PathOptions{Home: "/home/a"}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := approval.Open(path, &approval.Options{Poll: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	asked := make(chan *approval.Request, 8)
	s, err := e.NewSession(&SessionConfig{
		Server: "cmd", ID: "sess", Principal: "alice", Origin: capability.Interactive, Log: &syncLog{},
		Approvals: &Approvals{Store: st, Timeout: 200 * time.Millisecond, Asked: func(r *approval.Request) func() { asked <- r; return nil }},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, asked
}

// TestGrantCoversOnlyItsCapabilities: a person's approval for the rest
// of the session covers later calls whose capabilities are among those
// the person read, and no others. Capabilities compared by their text
// for a person are not that: the words of a command joined by spaces
// read the same for argv ["find", ".", "-name", "x -delete"] (a search
// for an odd name) and ["find", ".", "-name", "x", "-delete"] (which
// deletes).
func TestGrantCoversOnlyItsCapabilities(t *testing.T) {
	testGrantCovers(t, []grantCase{
		{"argv words joined", `{"command":"find . -name 'x -delete'","workdir":"/home/a/src"}`, `{"command":"find . -name x -delete","workdir":"/home/a/src"}`},
		{"argv words joined, paths", `{"command":"rm '/home/a/old files'","workdir":"/home/a/src"}`, `{"command":"rm /home/a/old files","workdir":"/home/a/src"}`},
	})
}

// TestGrantWorkdirDropped: a command approved for the session in one
// working directory is not approved where the server happens to run: the
// later call without workdir derives only the exec, a subset of the
// grant's capabilities, and its relative paths land elsewhere. FAILS on
// the current code: a subset of capabilities is not the same action when
// a missing argument derives nothing.
func TestGrantWorkdirDropped(t *testing.T) {
	testGrantCovers(t, []grantCase{
		{"workdir dropped", `{"command":"rm -rf build","workdir":"/home/a/src/scratch"}`, `{"command":"rm -rf build"}`},
	})
}

type grantCase struct {
	name             string
	approved, second string
}

// testGrantCovers approves each case's first call for the session, then
// checks that its second call is asked again.
func testGrantCovers(t *testing.T, cases []grantCase) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "approvals.db")
			s, asked := commandsSession(t, path)
			st := s.cfg.Approvals.Store
			answered := make(chan struct{})
			go func() {
				defer close(answered)
				r := <-asked
				if _, err := st.Answer(context.Background(), r.ID, approval.Answer{Approve: true, Scope: approval.ScopeSession, By: "bob", Channel: approval.ChannelCLI}); err != nil {
					t.Error(err)
				}
			}()
			o, err := s.Call(context.Background(), "run_command", []byte(tt.approved))
			if err != nil || !o.Forward {
				t.Fatalf("the approved call: %+v %v", o, err)
			}
			// Answer reads the approval back after writing it, so the call
			// may end first; the store closes when the test ends.
			<-answered
			// Nobody answers the second question: it MUST be asked, and
			// refused when nobody answers.
			o, err = s.Call(context.Background(), "run_command", []byte(tt.second))
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-asked:
			default:
				t.Errorf("%s ran under the session's approval of %s, without a person being asked (forward %v)", tt.second, tt.approved, o.Forward)
			}
		})
	}
}
