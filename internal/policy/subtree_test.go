package policy

import (
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/google/go-cmp/cmp"
)

func tree(c capability.Capability) capability.Capability {
	c.Subtree = true
	return c
}

// TestSubtree decides capabilities that act on a directory and everything
// under it (DESIGN.md R34): such a capability on X is what its kind on
// every path under X would be, so a deny or ask rule for a folder under X
// refuses or asks about it, as far as that rule's call matchers and
// conditions reach; a condition that reads the capability cannot be
// known for every path under X and fails closed.
func TestSubtree(t *testing.T) {
	s := fixture(t, "subtree.yaml")
	const A, D, K = Allow, Deny, Ask
	r := func(cs ...capability.Capability) *Request { return req("fs", "t", cs...) }
	tests := []struct {
		name string
		req  *Request
		want outcome
	}{
		{"a tree of the parent of a denied folder", r(tree(fsRead("/home/a"))), outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"no-ssh"}}},
		{"a move of the parent of a denied folder", r(tree(fsWrite("/home/a"))), outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"no-ssh"}}},
		{"the root holds every folder", r(tree(fsRead("/"))), outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"no-ssh"}}},
		{"a grandparent", r(tree(fsRead("/etc"))), outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"no-ssh"}}},
		{"the denied folder itself", r(tree(fsRead("/home/a/.ssh"))), outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"no-ssh"}}},
		{"inside the denied folder", r(tree(fsRead("/home/a/.ssh/keys"))), outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"no-ssh"}}},
		{"a sibling of the denied folder", r(tree(fsRead("/home/a/q"))), outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"home"}}},
		{"a name that only starts like it", r(tree(fsRead("/home/a/.sshx"))), outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"home"}}},
		{"the plain read of the parent", r(fsRead("/home/a")), outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"home"}}},
		{"an ask under a moved folder", r(tree(fsWrite("/home/a/p"))), outcome{Effect: K, Would: K, Action: "fs", Caps: []string{"ask-shared"}}},
		{"an ask rule of another kind", r(tree(fsRead("/home/a/p/shared"))), outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"home"}}},
		{"a shadow deny under a tree", r(tree(fsRead("/home/a/p"))), outcome{Effect: A, Would: D, Action: "fs", Caps: []string{"home"}, Shadowed: []string{"drafts"}}},
		{"a deny for a role the call lacks", r(tree(fsRead("/home/a/ops"))), outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"home"}}},
		{"a deny for the call's role", with(r(tree(fsRead("/home/a/ops"))), func(q *Request) { q.Roles = []string{"guest"} }),
			outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"ops-only"}}},
		{"a deny for the call's role, under a parent", with(r(tree(fsWrite("/home/a"))), func(q *Request) { q.Roles = []string{"guest"} }),
			outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"no-ssh"}}},
		{"a deny for the call's role, beside", with(r(tree(fsWrite("/home/a/z"))), func(q *Request) { q.Roles = []string{"guest"} }),
			outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"home"}}},
		{"a deny for another tool", r(tree(fsWrite("/home/a/other"))), outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"home"}}},
		{"a deny for the call's tool", req("fs", "other", tree(fsRead("/home/a/other"))), outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"other-tool"}}},
		{"a condition on the call, false", r(tree(fsRead("/home/a/sec"))), outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"home"}}},
		{"a condition on the call, true", with(r(tree(fsRead("/home/a/sec"))), func(q *Request) { q.Taint = true }),
			outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"tainted-secrets"}}},
		{"a condition on the path below", r(tree(fsRead("/home/a/site"))), outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"env-files"}}},
		{"a condition on the path, inside its folder", r(tree(fsRead("/home/a/site/css"))), outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"env-files"}}},
		{"a condition on the path, a plain read", r(fsRead("/home/a/site/index.html")), outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"home"}}},
		{"a condition that leaves out subtrees", r(tree(fsRead("/home/a/notes"))), outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"home"}}},
		{"a condition that leaves out subtrees, a plain read", r(fsRead("/home/a/notes/.env")), outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"env-not-trees"}}},
		{"a rule with no path and a condition on it", req("fs", "git_tool", tree(fsWrite("/home/a/q"))), outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"dot-git"}}},
		{"the same, a plain write", req("fs", "git_tool", fsWrite("/home/a/q")), outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"home"}}},
		{"an allow whose condition reads the path", r(tree(fsRead("/docs"))), outcome{Effect: D, Would: D, Action: "fs", Caps: []string{""}}},
		{"the same, a plain read", r(fsRead("/docs/a.md")), outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"docs-if"}}},
		{"an allow whose condition holds whatever the path", r(tree(fsRead("/pub"))), outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"pub-if-kind"}}},
		{"an allowed tree with nothing denied below", r(tree(fsRead("/srv/x"))), outcome{Effect: A, Would: A, Action: "fs", Caps: []string{"srv"}}},
		{"a tree beside a plain capability", r(fsRead("/home/a/.ssh/id_rsa"), tree(fsWrite("/home/a/p"))),
			outcome{Effect: D, Would: D, Action: "fs", Caps: []string{"no-ssh", "ask-shared"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outcomeOf(s.Decide(tt.req))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
			if ref := referenceDecide(s, tt.req); !cmp.Equal(ref, got) {
				t.Errorf("the reference decides otherwise (-ref +Decide):\n%s", cmp.Diff(ref, got))
			}
		})
	}
}

// TestSubtreeExplained: the reason of a subtree refused by a rule for a
// folder under it names the rule and that folder, and explain marks it;
// a condition that cannot be known for the whole subtree says why.
func TestSubtreeExplained(t *testing.T) {
	s := fixture(t, "subtree.yaml")
	q := req("fs", "t", tree(fsRead("/home/a")))
	d := s.Decide(q)
	if got, want := d.Reason(), `rule "no-ssh" (subtree.yaml:9) denies fs.read /home/a and everything under it (it holds /home/a/.ssh)`; got != want {
		t.Errorf("reason\n got %s\nwant %s", got, want)
	}
	x := s.Explain(q).String()
	for _, want := range []string{
		"  fs.read /home/a and everything under it: deny\n",
		`   * deny "no-ssh" subtree.yaml:9 (for /home/a/.ssh, under it)`,
		`     deny "env-files" subtree.yaml:14 (for /home/a/site, under it) (condition failed: it depends on cap.path`,
		`     deny "drafts" subtree.yaml:17 (shadow) (for /home/a/p/drafts, under it)`,
		`     allow "home" subtree.yaml:7` + "\n",
	} {
		if !strings.Contains(x, want) {
			t.Errorf("explanation lacks %q:\n%s", want, x)
		}
	}
	// A rule that holds the path itself needs no note.
	if got := s.Decide(req("fs", "t", tree(fsRead("/home/a/.ssh/k")))).Reason(); strings.Contains(got, "it holds") {
		t.Errorf("reason %q notes a folder under the path", got)
	}
	if strings.Contains(s.Explain(req("fs", "t", fsRead("/home/a"))).String(), "under it") {
		t.Error("a plain read is explained as a subtree")
	}
}

// TestSubtreeSpellings: a capability on a whole subtree meets the deny and
// ask rules of the folders under it by every spelling of its path and
// theirs (DESIGN.md R34), as its kind on those folders would: NFC and NFD
// twins are one path on every volume; on a case-insensitive volume a deny
// under it is found by fold keys (capability.FoldPath), and an ask, which
// grants, only in ASCII case, as main matches grants.
func TestSubtreeSpellings(t *testing.T) {
	s := fixture(t, "subtree-spelling.yaml")
	const A, D, K = Allow, Deny, Ask
	tests := []struct {
		name string
		cap  capability.Capability
		fold bool // the server's volume ignores case
		want Effect
		rule string
	}{
		// Normalisation twins, on every volume.
		{name: "NFC tree over an NFD deny", cap: tree(fsRead("/home/a/caf\u00e9")), want: D, rule: "deny-nfd"},
		{name: "NFD tree over an NFD deny", cap: tree(fsRead("/home/a/cafe\u0301")), want: D, rule: "deny-nfd"},
		{name: "NFD move over an NFC deny", cap: tree(fsWrite("/home/a/cre\u0300me")), want: D, rule: "deny-nfc"},
		{name: "NFC move over an NFC deny", cap: tree(fsWrite("/home/a/cr\u00e8me")), want: D, rule: "deny-nfc"},
		{name: "NFD tree inside the denied folder", cap: tree(fsRead("/home/a/cafe\u0301/secret/x")), want: D, rule: "deny-nfd"},
		{name: "Kelvin sign tree over a Kelvin deny", cap: tree(fsRead("/home/a/\u212aeep")), want: D, rule: "deny-kelvin"},
		{name: "K tree over a Kelvin deny", cap: tree(fsRead("/home/a/Keep")), want: D, rule: "deny-kelvin"},
		{name: "NFD sibling of a twin", cap: tree(fsRead("/home/a/cafe\u0301s")), want: A, rule: "home"},
		{name: "NFD tree, the plain read", cap: fsRead("/home/a/cafe\u0301"), want: A, rule: "home"},
		{name: "NFD move over an ask", cap: tree(fsWrite("/nar/re\u0301sume\u0301")), want: K, rule: "ask-resume"},
		{name: "NFD tree, an ask of another kind", cap: tree(fsRead("/nar/re\u0301sume\u0301")), want: A, rule: "nar"},

		// A case-sensitive volume: case variants are other files.
		{name: "case-sensitive: the home holds .SSH", cap: tree(fsRead("/home/a")), want: D, rule: "deny-ssh"},
		{name: "case-sensitive: /HOME/a is another folder", cap: tree(fsRead("/HOME/a")), want: D, rule: ""},
		{name: "case-sensitive: CAFE is another folder", cap: tree(fsRead("/home/a/CAFE\u0301")), want: A, rule: "home"},

		// A case-insensitive volume: a deny under the tree by its fold key.
		{name: "fold: /HOME/a holds .SSH", cap: tree(fsRead("/HOME/a")), fold: true, want: D, rule: "deny-ssh"},
		{name: "fold: a move of /Home/A", cap: tree(fsWrite("/Home/A")), fold: true, want: D, rule: "deny-ssh"},
		{name: "fold: /HOME holds .SSH", cap: tree(fsWrite("/HOME")), fold: true, want: D, rule: "deny-ssh"},
		{name: "fold: the root holds .SSH", cap: tree(fsRead("/")), fold: true, want: D, rule: "deny-ssh"},
		{name: "fold: a joiner HFS+ ignores in the parent", cap: tree(fsRead("/ho\u200cme/a")), fold: true, want: D, rule: "deny-ssh"},
		{name: "fold: NFD and case over an NFD deny", cap: tree(fsRead("/home/a/CAFE\u0301")), fold: true, want: D, rule: "deny-nfd"},
		{name: "fold: NFC and case over an NFC deny", cap: tree(fsWrite("/HOME/A/CR\u00c8ME")), fold: true, want: D, rule: "deny-nfc"},
		{name: "fold: ss over a sharp s", cap: tree(fsRead("/home/a/STRASSE")), fold: true, want: D, rule: "deny-strasse"},
		{name: "fold: capital sharp s", cap: tree(fsWrite("/home/a/stra\u1e9ee")), fold: true, want: D, rule: "deny-strasse"},
		{name: "fold: KEEP over a Kelvin deny", cap: tree(fsRead("/home/a/KEEP")), fold: true, want: D, rule: "deny-kelvin"},
		{name: "fold: the denied folder in upper case", cap: tree(fsRead("/HOME/A/.ssh")), fold: true, want: D, rule: "deny-ssh"},
		{name: "fold: a sibling stays allowed", cap: tree(fsRead("/home/a/.sshx")), fold: true, want: A, rule: "home"},
		{name: "fold: the plain read of /home/a", cap: fsRead("/home/a"), fold: true, want: A, rule: "home"},

		// A case-insensitive volume: an ask under the tree in ASCII case.
		{name: "fold: /NAR holds an ask", cap: tree(fsWrite("/NAR")), fold: true, want: K, rule: "ask-resume"},
		{name: "fold: /nar/shared holds an ask", cap: tree(fsWrite("/nar/shared")), fold: true, want: K, rule: "ask-shared"},
		{name: "fold: NFD and ASCII case over an ask", cap: tree(fsWrite("/NAR/re\u0301sume\u0301")), fold: true, want: K, rule: "ask-resume"},
		// A grant is matched in ASCII case only: the volume may hold
		// RÉSUMÉ as another folder, as a plain write there would be
		// allowed too.
		{name: "fold: an ask is not met in non-ASCII case", cap: tree(fsWrite("/nar/R\u00c9SUM\u00c9")), fold: true, want: A, rule: "nar"},
		{name: "fold: an allow in ASCII case", cap: tree(fsRead("/NAR/Shared")), fold: true, want: A, rule: "nar"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := req("fs", "t", tt.cap)
			r.FoldCase = tt.fold
			got := outcomeOf(s.Decide(r))
			want := outcome{Effect: tt.want, Would: tt.want, Action: "tools", Caps: []string{tt.rule}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Decide(%s %+q, fold %v) (-want +got):\n%s", tt.cap.Kind, tt.cap.Path, tt.fold, diff)
			}
			if ref := referenceDecide(s, r); !cmp.Equal(ref, got) {
				t.Errorf("the reference decides otherwise (-ref +Decide):\n%s", cmp.Diff(ref, got))
			}
			// Explain scans every rule with rule.matches: it agrees.
			if ref := referenceWinner(s.Explain(r).Caps[0]); ref != tt.rule {
				t.Errorf("Explain: the strictest matching rule is %q, want %q", ref, tt.rule)
			}
		})
	}
}

// TestSubtreeSpellingsExplained: the reason of a subtree refused by a rule
// for a folder under it names that folder whatever the spelling of the
// subtree's path.
func TestSubtreeSpellingsExplained(t *testing.T) {
	s := fixture(t, "subtree-spelling.yaml")
	tests := []struct {
		name string
		cap  capability.Capability
		fold bool
		want string
	}{
		{"NFD", tree(fsRead("/home/a/cafe\u0301")), false, "(it holds /home/a/caf\u00e9/secret)"},
		{"fold, ASCII", tree(fsRead("/HOME/a")), true, "(it holds /home/a/.SSH)"},
		{"fold, sharp s", tree(fsRead("/home/a/STRASSE")), true, "(it holds /home/a/Stra\u00dfe/keys)"},
		{"fold, an ask", tree(fsWrite("/NAR")), true, "(it holds /nar/r\u00e9sum\u00e9/drafts)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := req("fs", "t", tt.cap)
			r.FoldCase = tt.fold
			if got := s.Decide(r).Reason(); !strings.Contains(got, tt.want) {
				t.Errorf("reason %q lacks %q", got, tt.want)
			}
			if got := s.Explain(r).String(); !strings.Contains(got, "under it)") {
				t.Errorf("explanation does not mark the folder under the path:\n%s", got)
			}
		})
	}
}
