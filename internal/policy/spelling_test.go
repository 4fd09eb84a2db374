package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecideSpellings checks that every spelling of a path the server's
// file system treats as the same meets the same rules (DESIGN.md R34):
// deny rules under the broadest equivalence, rules that grant under the
// narrowest, so that neither a deny misses nor an allow reaches a file it
// does not name.
func TestDecideSpellings(t *testing.T) {
	s := fixture(t, "spelling.yaml")
	const A, D = Allow, Deny
	tests := []struct {
		name string
		path string
		fold bool // the server's volume ignores case
		want Effect
		rule string
	}{
		// Normalisation twins are one path, on every volume.
		{name: "NFD call, NFC deny", path: "/home/a/cafe\u0301/menu", want: D, rule: "deny-nfc"},
		{name: "NFC call, NFC deny", path: "/home/a/caf\u00e9/menu", want: D, rule: "deny-nfc"},
		{name: "NFC call, NFD deny", path: "/home/a/cr\u00e8me", want: D, rule: "deny-nfd"},
		{name: "NFD call, NFD deny", path: "/home/a/cre\u0300me/x", want: D, rule: "deny-nfd"},
		{name: "partly composed call", path: "/home/a/cafe\u0301", want: D, rule: "deny-nfc"},
		{name: "Kelvin sign deny, K call", path: "/home/a/Keys/k1", want: D, rule: "deny-kelvin"},
		{name: "Kelvin sign deny, Kelvin call", path: "/home/a/\u212aeys", want: D, rule: "deny-kelvin"},
		{name: "NFC call, NFD allow", path: "/nar/r\u00e9sum\u00e9/cv.pdf", want: A, rule: "nar-nfd"},
		{name: "a sibling of a twin", path: "/home/a/cafe\u0301s", want: A, rule: "home"},

		// Compatibility forms are other files: they are not folded.
		{name: "fi ligature is not fi", path: "/nar/\ufb01le", want: D},
		{name: "fullwidth solidus is no separator", path: "/nar/a\uff0fb", want: D},
		{name: "fullwidth letters are other names", path: "/nar/\uff53un", want: D},
		{name: "fi ligature under an allow", path: "/home/a/\ufb01le", want: A, rule: "home"},

		// A case-sensitive volume: case variants are other files.
		{name: "case-sensitive: .SSH is another file", path: "/home/a/.SSH/id_rsa", want: A, rule: "home"},
		{name: "case-sensitive: allow is exact", path: "/nar/projects", want: D},

		// A case-insensitive volume: a deny meets every case variant.
		{name: "fold: .SSH", path: "/home/a/.SSH/id_rsa", fold: true, want: D, rule: "deny-ssh"},
		{name: "fold: .Ssh", path: "/home/a/.Ssh", fold: true, want: D, rule: "deny-ssh"},
		{name: "fold: long s", path: "/home/a/.\u017fsh/id_rsa", fold: true, want: D, rule: "deny-ssh"},
		{name: "fold: ignorable joiner (HFS+)", path: "/home/a/.s\u200csh/id_rsa", fold: true, want: D, rule: "deny-ssh"},
		{name: "fold: sharp s is ss", path: "/home/a/STRASSE/x", fold: true, want: D, rule: "deny-strasse"},
		{name: "fold: capital sharp s", path: "/home/a/stra\u1e9ee", fold: true, want: D, rule: "deny-strasse"},
		{name: "fold: dotless i", path: "/home/a/pr\u0131vate", fold: true, want: D, rule: "deny-private"},
		{name: "fold: dotted capital I", path: "/home/a/Pr\u0130vate", fold: true, want: D, rule: "deny-private"},
		{name: "fold: Kelvin sign call", path: "/home/a/\u212aEYS", fold: true, want: D, rule: "deny-kelvin"},
		{name: "fold: NFD and case", path: "/home/a/CAFE\u0301/x", fold: true, want: D, rule: "deny-nfc"},
		{name: "fold: non-ASCII lower", path: "/home/a/\u00e9t\u00e9", fold: true, want: D, rule: "deny-upper"},
		{name: "fold: non-ASCII NFD lower", path: "/home/a/e\u0301te\u0301", fold: true, want: D, rule: "deny-upper"},
		{name: "fold: a sibling stays allowed", path: "/home/a/.sshx", fold: true, want: A, rule: "home"},

		// A case-insensitive volume: an allow meets ASCII case only.
		{name: "fold: allow ASCII case", path: "/nar/projects/x", fold: true, want: A, rule: "nar-projects"},
		{name: "fold: allow ASCII upper", path: "/nar/PROJECTS", fold: true, want: A, rule: "nar-projects"},
		{name: "fold: allow NFC twin and case", path: "/nar/R\u00c9SUM\u00c9", fold: true, want: D},
		{name: "fold: allow does not take ss for sharp s", path: "/nar/strasse", fold: true, want: D},
		{name: "fold: allow does not take long s", path: "/nar/\u017fun", fold: true, want: D},
		{name: "fold: allow does not drop joiners", path: "/nar/su\u200cn", fold: true, want: D},
		{name: "fold: allow does not take the ligature", path: "/nar/\ufb01le", fold: true, want: D},
		{name: "fold: Kelvin sign is K", path: "/nar/\u212aILO", fold: true, want: A, rule: "nar-kilo"},
		{name: "fold: allow under the sharp s itself", path: "/nar/STRA\u00dfE", fold: true, want: A, rule: "nar-strasse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := req("fs", "read_file", fsRead(tt.path))
			r.FoldCase = tt.fold
			d := s.Decide(r)
			got := outcome{Effect: d.Effect(), Caps: []string{ruleID(d.Cap(0).Rule)}}
			want := outcome{Effect: tt.want, Caps: []string{tt.rule}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Decide(%+q, fold %v) (-want +got):\n%s", tt.path, tt.fold, diff)
			}
			// The reference matcher (explain's, which scans every rule)
			// agrees with the index.
			if ref := referenceWinner(s.Explain(r).Caps[0]); ref != tt.rule {
				t.Errorf("Explain(%+q, fold %v): the strictest matching rule is %q, want %q", tt.path, tt.fold, ref, tt.rule)
			}
		})
	}
}

// referenceWinner returns the ID of the rule that decides among ms: the
// strictest effect, then the first in the file.
func referenceWinner(ms []Match) string {
	var win *Rule
	for _, m := range ms {
		if m.Rule.Mode == Shadow {
			continue
		}
		if win == nil || m.Rule.Effect.rank() > win.Effect.rank() {
			win = m.Rule
		}
	}
	return ruleID(win)
}
