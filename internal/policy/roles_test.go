package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecideRoles holds the role checks to the reference: rules of one
// role (compared by words, set once per call) and of several, roles of
// every length around the words' 4, 8 and 16 bytes, near misses that
// share words or length with a rule's role, and calls with more roles
// than the evaluator holds.
func TestDecideRoles(t *testing.T) {
	names := []string{"a", "ab", "abc", "abcd", "abcdefg", "abcdefgh", "abcdefghi", "abcdefghijklmno", "abcdefghijklmnop",
		"abcdefghijklmnopq", "abcdefghXjklmnopqrstuvwx", "abcdefghYjklmnopqrstuvwx", "abcdefghabcdefgh", "dev", "ops"}
	nearMisses := []string{"b", "ac", "abd", "abce", "abcdefh", "abcdefgX", "Xbcdefgh", "abcdefghijklmnoq", "abcdefghZjklmnopqrstuvwx", "abcdefgh abcdefgh", ""}
	var b strings.Builder
	b.WriteString("version: 1\nrules:\n")
	for i, n := range names {
		fmt.Fprintf(&b, "  - {id: one-%d, effect: %s, role: [%q], path_under: /p/%d}\n", i, []string{"allow", "ask", "deny"}[i%3], n, i)
		fmt.Fprintf(&b, "  - {id: two-%d, effect: allow, role: [%q, %q], path_under: /q/%d}\n", i, n, names[(i+1)%len(names)], i)
		fmt.Fprintf(&b, "  - {id: act-%d, effect: allow, role: [%q], tool: t%d}\n", i, n, i)
	}
	s, err := Parse("roles.yaml", []byte(b.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]string(nil), names...), nearMisses...)
	c := randChooser(11)
	for range 3000 {
		r := &Request{Server: "s", Tool: fmt.Sprintf("t%d", c(len(names)+1)), Bound: true}
		for range c(8) {
			r.Roles = append(r.Roles, all[c(len(all))])
		}
		for range 1 + c(3) {
			dir := []string{"/p/", "/q/"}[c(2)]
			r.Caps = append(r.Caps, fsRead(fmt.Sprintf("%s%d", dir, c(len(names)+1))))
		}
		got, want := outcomeOf(s.Decide(r)), referenceDecide(s, r)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("roles %q, caps %v: Decide differs from the reference (-want +got)\n%s", r.Roles, r.Caps, diff)
		}
	}
}
