package gateway

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// subtreeEngine is an engine for the official filesystem server with home
// /home/a under testdata/subtree.yaml.
func subtreeEngine(t *testing.T) *Engine {
	t.Helper()
	data, err := os.ReadFile("testdata/subtree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse("testdata/subtree.yaml", data, &policy.Options{Home: "/home/a"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(p, []*Server{{
		Name:     "fs",
		Bindings: binding.Builtins()["filesystem"].Tools,
		Options:  binding.Options{Path: capability.PathOptions{Home: "/home/a"}, RequireNFC: true},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestSubtree: an operation on a directory acts on everything under it
// (DESIGN.md R34). Moving, listing as a tree or searching a parent of a
// denied folder is refused by the rule of that folder; a parent of a folder
// writes are asked about asks; a condition that cannot be known for every
// path under the directory fails closed unless it says it does not apply
// to a subtree; a shadow rule under it changes only what would be decided.
// A plain listing shows the names of the directory's own entries and stays
// allowed.
func TestSubtree(t *testing.T) {
	e := subtreeEngine(t)
	tests := []struct {
		name, tool, args string
		want, would      policy.Effect
		rule             string // the rule the reason names
	}{
		{"move the parent of .ssh", "move_file", `{"source":"/home/a","destination":"/home/a/old"}`, policy.Deny, policy.Deny, "no-ssh"},
		{"move the parent of .ssh by ~", "move_file", `{"source":"~","destination":"~/old"}`, policy.Deny, policy.Deny, "no-ssh"},
		{"move the parent of .ssh, trailing slash", "move_file", `{"source":"/home/a/","destination":"/home/a/old"}`, policy.Deny, policy.Deny, "no-ssh"},
		{"move the parent of .ssh by ..", "move_file", `{"source":"/home/a/projects/..","destination":"/home/a/old"}`, policy.Deny, policy.Deny, "no-ssh"},
		{"move a folder into place as .ssh's parent", "move_file", `{"source":"/home/a/projects/x","destination":"/home/a"}`, policy.Deny, policy.Deny, "no-ssh"},
		{"tree of the parent of .ssh", "directory_tree", `{"path":"/home/a"}`, policy.Deny, policy.Deny, "no-ssh"},
		{"tree of the parent of .ssh, excluding it", "directory_tree", `{"path":"/home/a","excludePatterns":[".ssh"]}`, policy.Deny, policy.Deny, "no-ssh"},
		{"search the parent of .ssh", "search_files", `{"path":"~","pattern":"id_"}`, policy.Deny, policy.Deny, "no-ssh"},
		{"move the parent of a folder writes are asked for", "move_file", `{"source":"/home/a/projects","destination":"/home/a/p2"}`, policy.Ask, policy.Deny, "ask-shared"},
		{"tree of the parent of a folder asked for writes", "directory_tree", `{"path":"/home/a/projects"}`, policy.Allow, policy.Deny, ""},
		{"tree of a folder a condition may deny under", "directory_tree", `{"path":"/home/a/site"}`, policy.Deny, policy.Deny, "no-site-env"},
		{"search a folder's parent a condition may deny under", "search_files", `{"path":"/home/a","pattern":"x"}`, policy.Deny, policy.Deny, ""},
		{"tree of a folder whose condition leaves out subtrees", "directory_tree", `{"path":"/home/a/notes"}`, policy.Allow, policy.Allow, ""},

		// What stays as it was.
		{"list the parent of .ssh", "list_directory", `{"path":"/home/a"}`, policy.Allow, policy.Allow, ""},
		{"list the parent of .ssh with sizes", "list_directory_with_sizes", `{"path":"/home/a"}`, policy.Allow, policy.Allow, ""},
		{"info on .ssh's parent", "get_file_info", `{"path":"/home/a"}`, policy.Allow, policy.Allow, ""},
		{"tree of a sibling of .ssh", "directory_tree", `{"path":"/home/a/notes"}`, policy.Allow, policy.Allow, ""},
		{"move a file beside .ssh", "move_file", `{"source":"/home/a/notes/n.txt","destination":"/home/a/notes/m.txt"}`, policy.Allow, policy.Allow, ""},
		{"move into a name that only starts like .ssh", "move_file", `{"source":"/home/a/notes/n","destination":"/home/a/.sshx"}`, policy.Allow, policy.Allow, ""},
		{"read a file a condition does not deny", "read_text_file", `{"path":"/home/a/site/index.html"}`, policy.Allow, policy.Allow, ""},
		{"read a file a condition denies", "read_text_file", `{"path":"/home/a/site/.env"}`, policy.Deny, policy.Deny, "no-site-env"},
		{"read a file the subtree-free condition denies", "read_text_file", `{"path":"/home/a/notes/.env"}`, policy.Deny, policy.Deny, "no-notes-env"},
		{"tree of .ssh itself", "directory_tree", `{"path":"/home/a/.ssh"}`, policy.Deny, policy.Deny, "no-ssh"},
		{"create a parent of .ssh", "create_directory", `{"path":"/home/a"}`, policy.Allow, policy.Allow, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := e.Check(context.Background(), &Call{Server: "fs", Tool: tt.tool, Arguments: []byte(tt.args)})
			if v.Effect != tt.want {
				t.Fatalf("effect %s (%s), want %s", v.Effect, v.Reason(), tt.want)
			}
			if got := v.Decision.Would(); got != tt.would {
				t.Errorf("would %s (%s), want %s", got, v.Decision.ShadowReason(), tt.would)
			}
			if tt.rule != "" && !strings.Contains(v.Reason(), `rule "`+tt.rule+`"`) {
				t.Errorf("reason %q does not name rule %q", v.Reason(), tt.rule)
			}
			if (v.Arguments == nil) != (tt.want == policy.Deny) {
				t.Errorf("arguments %q for effect %s: forwarded iff not denied", v.Arguments, v.Effect)
			}
		})
	}
}

// TestSubtreeRecorded: the chain records a subtree capability as one, so
// that recheck, which decides from the chain alone, refuses it again
// rather than deciding it as a plain read of the directory.
func TestSubtreeRecorded(t *testing.T) {
	e := subtreeEngine(t)
	log := &memLog{}
	rec := &recorder{Engine: e, Log: log}
	v, _, err := rec.call(context.Background(), &Call{Server: "fs", Tool: "directory_tree", Arguments: []byte(`{"path":"/home/a"}`)}, new(callMem))
	if err != nil {
		t.Fatal(err)
	}
	if v.Effect != policy.Deny {
		t.Fatalf("effect %s (%s), want deny", v.Effect, v.Reason())
	}
	ent := log.entries[0]
	if len(ent.Caps) != 1 || !ent.Caps[0].Subtree || ent.Caps[0].Path != "/home/a" {
		t.Fatalf("recorded capabilities %+v, want one subtree fs.read of /home/a", ent.Caps)
	}
	again, ok := e.Recheck(ent)
	if !ok || again.Effect != policy.Deny || !strings.Contains(again.Reason(), `rule "no-ssh"`) {
		t.Errorf("recheck: %s (%s), ok %v; want the same denial by no-ssh", again.Effect, again.Reason(), ok)
	}
}

// TestSubtreeSpellings: a tree, a search or a move of a directory meets
// the rules of the folders under it by every spelling the server's file
// system reads as theirs (DESIGN.md R34): the NFC a call is canonicalised
// to meets a folder the policy names in NFD, and on a case-insensitive
// volume a directory named in another case meets a deny under it by its
// fold key, an ask in ASCII case.
func TestSubtreeSpellings(t *testing.T) {
	data, err := os.ReadFile("testdata/subtree-spelling.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse("testdata/subtree-spelling.yaml", data, &policy.Options{Home: "/home/a"})
	if err != nil {
		t.Fatal(err)
	}
	engine := func(fold bool) *Engine {
		e, err := New(p, []*Server{{
			Name:            "fs",
			Bindings:        binding.Builtins()["filesystem"].Tools,
			Options:         binding.Options{Path: capability.PathOptions{Home: "/home/a"}},
			CaseInsensitive: fold,
		}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	tests := []struct {
		name, tool, args string
		fold             bool
		want             policy.Effect
		rule             string // the rule the reason names
	}{
		{"tree of the NFC parent of an NFD deny", "directory_tree", `{"path":"/home/a/caf\u00e9"}`, false, policy.Deny, "no-cafe-secret"},
		{"tree of the NFD parent of an NFD deny", "directory_tree", `{"path":"/home/a/cafe\u0301"}`, false, policy.Deny, "no-cafe-secret"},
		{"case-sensitive: tree of the home", "directory_tree", `{"path":"~"}`, false, policy.Deny, "no-ssh"},
		{"case-sensitive: /HOME/a is another folder", "directory_tree", `{"path":"/HOME/a"}`, false, policy.Deny, ""},
		{"fold: tree of /HOME/a", "directory_tree", `{"path":"/HOME/a"}`, true, policy.Deny, "no-ssh"},
		{"fold: search of /Home/A", "search_files", `{"path":"/Home/A","pattern":"id_"}`, true, policy.Deny, "no-ssh"},
		{"fold: move of /HOME/A", "move_file", `{"source":"/HOME/A","destination":"/home/a2"}`, true, policy.Deny, "no-ssh"},
		{"fold: tree of STRASSE over Straße", "directory_tree", `{"path":"/home/a/STRASSE"}`, true, policy.Deny, "no-strasse"},
		{"fold: tree of CAFÉ over café in NFD", "directory_tree", `{"path":"/HOME/A/CAF\u00c9"}`, true, policy.Deny, "no-cafe-secret"},
		{"fold: move of PROJECTS over an ask", "move_file", `{"source":"/home/a/PROJECTS","destination":"/home/a/p2"}`, true, policy.Ask, "ask-shared"},
		{"fold: tree of a sibling", "directory_tree", `{"path":"/HOME/A/projects"}`, true, policy.Allow, ""},
		{"fold: a plain listing of /HOME/A", "list_directory", `{"path":"/HOME/A"}`, true, policy.Allow, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine(tt.fold)
			v := e.Check(context.Background(), &Call{Server: "fs", Tool: tt.tool, Arguments: []byte(tt.args)})
			if v.Effect != tt.want {
				t.Fatalf("effect %s (%s), want %s", v.Effect, v.Reason(), tt.want)
			}
			if tt.rule != "" && !strings.Contains(v.Reason(), `rule "`+tt.rule+`"`) {
				t.Errorf("reason %q does not name rule %q", v.Reason(), tt.rule)
			}
		})
	}
}
