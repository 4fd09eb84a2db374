package gateway

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/record"
)

// selfWorld is a home directory on disk with aegis's files in it, as a
// filesystem server running as that user would see it.
type selfWorld struct {
	home    string // the home directory, links resolved
	state   string // $AEGIS_HOME: ~/.local/state/aegis
	config  string // ~/work/aegis.yaml, outside the state directory
	policy  string // ~/work/policy.yaml
	binds   string // ~/work/extra.yaml
	keyPath string // the chain's signing key
	viaLink string // the home reached through a symbolic link
}

func newSelfWorld(t *testing.T) *selfWorld {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &selfWorld{home: filepath.Join(root, "home", "u")}
	w.state = filepath.Join(w.home, ".local", "state", "aegis")
	w.config = filepath.Join(w.home, "work", "aegis.yaml")
	w.policy = filepath.Join(w.home, "work", "policy.yaml")
	w.binds = filepath.Join(w.home, "work", "extra.yaml")
	w.keyPath = filepath.Join(w.state, "chain", "fs", "chain.key")
	w.viaLink = filepath.Join(root, "homelink")
	for _, d := range []string{filepath.Dir(w.keyPath), filepath.Join(w.state, "pins"), filepath.Join(w.home, "projects"), filepath.Join(w.home, "work")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{w.keyPath, w.config, w.policy, w.binds, filepath.Join(w.home, "projects", "a")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		filepath.Join(w.home, "projects", "st"):  w.state,   // a link to the state directory
		filepath.Join(w.home, "projects", "key"): w.keyPath, // a link to the key itself
		filepath.Join(w.home, "projects", "cfg"): w.config,
		w.viaLink:                                filepath.Join(root, "home"), // the whole home through a link
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// selfEngine is an engine whose policy allows every fs.read and fs.write
// anywhere, for a local filesystem server with home home, protecting w's
// files.
func selfEngine(t *testing.T, w *selfWorld, mode, home string) *Engine {
	t.Helper()
	src := "version: 1\n"
	if mode != "" {
		src += "mode: " + mode + "\n"
	}
	src += `rules:
  - {id: fs-tools, effect: allow, server: fs, tool: "*"}
  - {id: everything, effect: allow, capability: [fs.read, fs.write], path_under: /}
`
	p, err := policy.Parse("p.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(p, []*Server{{
		Name:     "fs",
		Bindings: binding.Builtins()["filesystem"].Tools,
		Options:  binding.Options{Path: capability.PathOptions{Home: home, Readlink: os.Readlink}},
	}}, &Options{Protected: []string{w.config, w.policy, w.binds, w.state}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestSelfAdversarial: whatever the policy allows (here every fs.read and
// fs.write under /, enforced or in shadow mode), a call that reads or
// writes aegis's own files, by any spelling of their paths, is refused
// under aegis:self; one that writes a directory holding them is too.
func TestSelfAdversarial(t *testing.T) {
	w := newSelfWorld(t)
	rel := func(p string) string { return strings.TrimPrefix(p, w.home) } // "/.local/state/aegis/…"
	tests := []struct {
		name, tool, args string
		deny             bool
		under            string // the protected path the reason names
	}{
		{"read chain.key", "read_text_file", `{"path":"` + w.keyPath + `"}`, true, w.state},
		{"read chain.key by ~", "read_file", `{"path":"~` + rel(w.keyPath) + `"}`, true, w.state},
		{"read chain.key by ..", "read_text_file", `{"path":"` + w.home + `/projects/../.local/state/./aegis//chain/fs/chain.key"}`, true, w.state},
		{"read chain.key among others", "read_multiple_files", `{"paths":["` + w.home + `/projects/a","` + w.keyPath + `"]}`, true, w.state},
		{"read chain.key through a link to the state", "read_text_file", `{"path":"` + w.home + `/projects/st/chain/fs/chain.key"}`, true, w.state},
		{"read chain.key through a link to it", "read_text_file", `{"path":"` + w.home + `/projects/key"}`, true, w.state},
		{"read chain.key through a linked home", "read_text_file", `{"path":"` + w.viaLink + `/u` + rel(w.keyPath) + `"}`, true, w.state},
		{"list the state directory, trailing slash", "list_directory", `{"path":"` + w.state + `/"}`, true, w.state},
		{"list the chain", "directory_tree", `{"path":"` + w.state + `/chain///"}`, true, w.state},
		{"write aegis.yaml", "write_file", `{"path":"` + w.config + `","content":"x"}`, true, w.config},
		{"write aegis.yaml through a link", "write_file", `{"path":"` + w.home + `/projects/cfg","content":"x"}`, true, w.config},
		{"edit the policy", "edit_file", `{"path":"` + w.policy + `","edits":[]}`, true, w.policy},
		{"read the policy", "read_text_file", `{"path":"` + w.policy + `"}`, true, w.policy},
		{"read a bindings file", "read_text_file", `{"path":"` + w.binds + `"}`, true, w.binds},
		{"empty the pins", "write_file", `{"path":"~` + rel(w.state) + `/pins/fs.json","content":"{}"}`, true, w.state},
		{"create a lane", "create_directory", `{"path":"` + w.state + `/chain/fs@2"}`, true, w.state},
		{"move the state directory's parent away", "move_file", `{"source":"` + filepath.Dir(w.state) + `","destination":"` + w.home + `/projects/old"}`, true, w.state},
		{"move the state directory's parent, trailing slash", "move_file", `{"source":"` + filepath.Dir(w.state) + `/","destination":"` + w.home + `/projects/old"}`, true, w.state},
		{"move home away", "move_file", `{"source":"~","destination":"` + w.home + `x"}`, true, w.state},
		{"move the config's directory", "move_file", `{"source":"` + w.home + `/work/","destination":"` + w.home + `/projects/w"}`, true, w.config},
		{"move a file over the pins", "move_file", `{"source":"` + w.home + `/projects/a","destination":"` + w.state + `/pins/fs.json"}`, true, w.state},
		{"move a file over aegis.yaml by ..", "move_file", `{"source":"` + w.home + `/projects/a","destination":"` + w.home + `/projects/../work/aegis.yaml"}`, true, w.config},
		{"write the root", "create_directory", `{"path":"/"}`, true, "/"},

		// What stays allowed.
		{"read a project file", "read_text_file", `{"path":"` + w.home + `/projects/a"}`, false, ""},
		{"write next to aegis.yaml", "write_file", `{"path":"` + w.home + `/work/notes.txt","content":"x"}`, false, ""},
		{"write a name that only starts like the state", "write_file", `{"path":"` + w.state + `-old/x","content":"x"}`, false, ""},
		{"write aegis.yaml.bak", "write_file", `{"path":"` + w.config + `.bak","content":"x"}`, false, ""},
		// A tree or a search of a parent lists what is inside (R34).
		{"tree of home", "directory_tree", `{"path":"~"}`, true, w.state},
		{"tree of the state directory's parent", "directory_tree", `{"path":"` + filepath.Dir(w.state) + `"}`, true, w.state},
		{"tree of the root", "directory_tree", `{"path":"/"}`, true, w.state},
		{"search home for the key", "search_files", `{"path":"` + w.home + `","pattern":"**/chain.key"}`, true, w.state},
		{"search home through a linked home", "search_files", `{"path":"` + w.viaLink + `/u","pattern":"*"}`, true, w.state},
		{"tree of the config's directory", "directory_tree", `{"path":"` + w.home + `/work"}`, true, w.config},
		{"tree of the projects", "directory_tree", `{"path":"` + w.home + `/projects"}`, false, ""},
		// A listing shows names, not contents (see selfCheck).
		{"list the state directory's parent", "list_directory", `{"path":"` + filepath.Dir(w.state) + `"}`, false, ""},
		{"list home", "list_directory", `{"path":"~"}`, false, ""},
	}
	for _, mode := range []string{"enforce", "shadow"} {
		e := selfEngine(t, w, mode, w.home)
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				v := e.Check(context.Background(), &Call{Server: "fs", Tool: tt.tool, Arguments: []byte(tt.args)})
				if !tt.deny {
					if v.Effect != policy.Allow {
						t.Fatalf("effect %s (%s), want allow", v.Effect, v.Reason())
					}
					return
				}
				if v.Effect != policy.Deny || v.Arguments != nil {
					t.Fatalf("effect %s, arguments %q (%s): want deny, nothing forwarded", v.Effect, v.Arguments, v.Reason())
				}
				if got := RuleOf(&v); got != RuleSelf {
					t.Fatalf("rule %q (%s), want %s", got, v.Reason(), RuleSelf)
				}
				if !strings.Contains(v.Reason(), tt.under) {
					t.Errorf("reason %q does not name %s", v.Reason(), tt.under)
				}
				if len(v.Caps) == 0 {
					t.Error("a refused call keeps its capabilities for the record")
				}
			})
		}
	}
}

// TestSelfThroughLinkedHome: the server's home is spelled through a
// symbolic link; the protected paths are in resolved form, and the
// capabilities of a local server are too, so "~/…" still meets them.
func TestSelfThroughLinkedHome(t *testing.T) {
	w := newSelfWorld(t)
	e := selfEngine(t, w, "", filepath.Join(w.viaLink, "u"))
	for _, a := range []string{
		`{"path":"~/.local/state/aegis/chain/fs/chain.key"}`,
		`{"path":"` + w.viaLink + `/u/work/aegis.yaml"}`,
	} {
		v := e.Check(context.Background(), &Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(a)})
		if RuleOf(&v) != RuleSelf {
			t.Errorf("%s: effect %s (%s), want refused by %s", a, v.Effect, v.Reason(), RuleSelf)
		}
	}
}

// TestSelfRecordedAndKept: the refusal is recorded under aegis:self with
// the call's capabilities, and recheck keeps it whatever the new policy
// says, since no policy decided it.
func TestSelfRecordedAndKept(t *testing.T) {
	w := newSelfWorld(t)
	e := selfEngine(t, w, "shadow", w.home)
	log := &memLog{}
	rec := &recorder{Engine: e, Log: log}
	v, _, err := rec.call(context.Background(), &Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(`{"path":"` + w.keyPath + `"}`)}, new(callMem))
	if err != nil {
		t.Fatal(err)
	}
	if v.Effect != policy.Deny {
		t.Fatalf("effect %s, want deny", v.Effect)
	}
	ent := log.entries[0]
	if diff := cmp.Diff([]string{RuleSelf}, ent.Rules); diff != "" {
		t.Errorf("recorded rules (-want +got):\n%s", diff)
	}
	if ent.Decision != "deny" || len(ent.Caps) != 1 {
		t.Errorf("recorded %s with caps %v, want deny with the fs.read", ent.Decision, ent.Caps)
	}
	if _, ok := e.Recheck(ent); ok {
		t.Error("recheck decided again a call aegis refused as its own")
	}
}

// TestSelfExplain: explain gives the same refusal, naming the path, and
// still lists the rules that matched.
func TestSelfExplain(t *testing.T) {
	w := newSelfWorld(t)
	e := selfEngine(t, w, "", w.home)
	v, x := e.explain(context.Background(), &Call{Server: "fs", Tool: "write_file", Arguments: []byte(`{"path":"` + w.config + `","content":"x"}`)})
	if RuleOf(&v) != RuleSelf || !strings.Contains(v.Reason(), w.config) {
		t.Fatalf("explain: %s (%s), want refused by %s naming %s", v.Effect, v.Reason(), RuleSelf, w.config)
	}
	if x == nil || !strings.Contains(x.String(), "everything") {
		t.Errorf("explanation %v does not list the rule that matched", x)
	}
}

// TestProtectedPaths: the protected paths must be canonical; they are
// sorted, and one under another is dropped.
func TestProtectedPaths(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\nrules: []\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "rel/x", "/a/../b", "/a/", "/a//b"} {
		if _, err := New(p, nil, &Options{Protected: []string{bad}}); err == nil {
			t.Errorf("protected %q: no error", bad)
		}
	}
	e, err := New(p, nil, &Options{Protected: []string{"/s/aegis/aegis.yaml", "/c/policy.yaml", "/s/aegis", "/s/aegis b", "/c/policy.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/c/policy.yaml", "/s/aegis", "/s/aegis b"}, e.Protected()); diff != "" {
		t.Errorf("protected (-want +got):\n%s", diff)
	}
}

// BenchmarkCheckProtected is BenchmarkCheck with the paths aegis run
// protects: a configuration, a policy, a bindings file and the state
// directory, each as spelled and as resolved.
func BenchmarkCheckProtected(b *testing.B) {
	e, c := typicalCall(b)
	var err error
	e.protected, e.protectedKeys, err = protectedPaths([]string{
		"/home/u/.config/aegis/aegis.yaml", "/home/u/.config/aegis/policy.yaml", "/home/u/.config/aegis/extra.yaml",
		"/home/u/.local/state/aegis", "/data/home/u/.config/aegis/aegis.yaml", "/data/home/u/.config/aegis/policy.yaml",
		"/data/home/u/.config/aegis/extra.yaml", "/data/home/u/.local/state/aegis",
	})
	if err != nil {
		b.Fatal(err)
	}
	benchCheckWith(b, e, c)
}

// TestSelfSpellings: every spelling of aegis's own paths that the server's
// file system reads as one is refused: normalisation twins on every
// volume, case variants on a case-insensitive one (DESIGN.md R34).
func TestSelfSpellings(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\nrules: []\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The state directory is named in NFD, as a macOS volume may hold it.
	e, err := New(p, nil, &Options{Protected: []string{"/home/u/.config/aegis/aegis.yaml", "/home/u/e\u0301tat/aegis"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		kind    capability.Kind
		path    string
		subtree bool // a tree, a search, a move of everything under path
		fold    bool
		deny    bool
	}{
		{"NFC twin of the state", capability.FSRead, "/home/u/\u00e9tat/aegis/chain.key", false, false, true},
		{"NFD state", capability.FSRead, "/home/u/e\u0301tat/aegis", false, false, true},
		{"case-sensitive: another file", capability.FSRead, "/home/u/.config/aegis/AEGIS.yaml", false, false, false},
		{"fold: config in upper case", capability.FSRead, "/HOME/U/.CONFIG/Aegis/aegis.yaml", false, true, true},
		{"fold: state in upper case, NFC", capability.FSWrite, "/home/u/\u00c9TAT/AEGIS/pins/fs.json", false, true, true},
		{"fold: state in upper case, NFD", capability.FSRead, "/home/u/E\u0301TAT/aegis", false, true, true},
		{"fold: long s in the config", capability.FSRead, "/home/u/.config/aegi\u017f/aegis.yaml", false, true, true},
		{"fold: writing a parent in upper case", capability.FSWrite, "/HOME/U/.Config", false, true, true},
		{"fold: reading a parent lists it", capability.FSRead, "/HOME/U/.Config", false, true, false},
		{"fold: a sibling", capability.FSWrite, "/home/u/.config/aegis/aegis.yaml.bak", false, true, false},
		{"fold: a path with no key", capability.FSRead, "/home/u/\u200c", false, true, true},
		// A subtree read or write of a directory that holds aegis's
		// files, by every spelling of the directory.
		{"subtree: NFC parent of the NFD state", capability.FSRead, "/home/u/\u00e9tat", true, false, true},
		{"subtree: NFD parent of the NFD state", capability.FSRead, "/home/u/e\u0301tat", true, false, true},
		{"subtree: the home holds both", capability.FSRead, "/home/u", true, false, true},
		{"subtree: a sibling of the NFD state", capability.FSRead, "/home/u/\u00e9tats", true, false, false},
		{"subtree: case-sensitive, another folder", capability.FSRead, "/HOME/U", true, false, false},
		{"subtree, fold: /HOME/U holds the config", capability.FSRead, "/HOME/U", true, true, true},
		{"subtree, fold: .CONFIG holds the config", capability.FSRead, "/home/u/.CONFIG", true, true, true},
		{"subtree, fold: the state's parent in upper case and NFD", capability.FSRead, "/home/u/E\u0301TAT", true, true, true},
		{"subtree, fold: the state's parent in upper case and NFC", capability.FSWrite, "/HOME/u/\u00c9TAT", true, true, true},
		{"subtree, fold: a joiner HFS+ ignores", capability.FSRead, "/home/u/.con\u200cfig", true, true, true},
		{"subtree, fold: long s", capability.FSRead, "/home/u/.config/aegi\u017f", true, true, true},
		{"subtree, fold: a sibling", capability.FSRead, "/HOME/U/.configs", true, true, false},
		{"subtree, fold: the projects", capability.FSRead, "/HOME/U/Projects", true, true, false},
		{"fold: a plain read of the parent lists it", capability.FSRead, "/HOME/U/E\u0301TAT", false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := e.selfCheck([]capability.Capability{{Kind: tt.kind, Path: tt.path, Subtree: tt.subtree}}, tt.fold)
			if (err != nil) != tt.deny {
				t.Errorf("selfCheck(%s %+q, subtree %v, fold %v) = %v, want deny %v", tt.kind, tt.path, tt.subtree, tt.fold, err, tt.deny)
			}
		})
	}
}

// TestRecheckAppliesSelf: an entry allowed when it was recorded (before
// the file was protected, or by an aegis protecting other paths) that
// reads aegis's signing key is refused by a recheck, under aegis:self,
// whatever the new policy allows.
func TestRecheckAppliesSelf(t *testing.T) {
	w := newSelfWorld(t)
	e := selfEngine(t, w, "", w.home)
	ent := &record.Entry{Seq: 1, Server: "fs", Tool: "read_text_file", Bound: true, Tier: "data-read",
		Origin: "interactive", Decision: "allow", Mode: "enforce",
		Caps: []record.Cap{{Kind: "fs.read", Path: w.keyPath}}}
	v, ok := e.Recheck(ent)
	if !ok || v.Effect != policy.Deny || !slices.Contains(v.Rules(), RuleSelf) {
		t.Errorf("recheck: ok %v, %s by %v; want a deny by %s", ok, v.Effect, v.Rules(), RuleSelf)
	}
	ent.Caps[0].Path = filepath.Join(w.home, "projects", "a")
	if v, _ := e.Recheck(ent); v.Effect != policy.Allow {
		t.Errorf("recheck of another file: %s by %v, want allow", v.Effect, v.Rules())
	}
}

// TestSelfExec: a simple command that runs aegis, or names one of its
// paths, is refused; other commands, and a listing of a parent, are not.
func TestSelfExec(t *testing.T) {
	w := newSelfWorld(t)
	e := selfEngine(t, w, "enforce", w.home)
	exec := func(argv ...string) capability.Capability {
		return capability.Capability{Kind: capability.Exec, Program: argv[0], Argv: argv}
	}
	for _, tt := range []struct {
		name string
		cap  capability.Capability
		deny bool
	}{
		{"aegis approvals approve", exec("aegis", "approvals", "approve", "3f2a"), true},
		{"aegis by path", exec("/usr/local/bin/aegis", "pins", "accept", "x"), true},
		{"sqlite3 on the approvals", exec("sqlite3", w.state+"/approvals.db", "update approvals set state='approved'"), true},
		{"cp over the policy", exec("cp", "/tmp/p.yaml", w.policy), true},
		{"cat the key by ..", exec("cat", w.home+"/projects/../.local/state/aegis/chain/fs/chain.key"), true},
		{"git status", exec("git", "status"), false},
		{"ls home", exec("ls", w.home), false},
		{"a name that starts like the state", exec("cat", w.state+"-old/x"), false},
		{"arbitrary shell is not read", capability.Capability{Kind: capability.Exec, Shell: true, Command: "aegis approvals approve 3f2a"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := e.selfCheck([]capability.Capability{tt.cap}, false)
			if (err != nil) != tt.deny {
				t.Errorf("selfCheck = %v, want refused %v", err, tt.deny)
			}
		})
	}
}
