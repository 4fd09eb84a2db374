package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/unicode/norm"
)

// pathPolicy builds a policy of allow and deny rules under directories
// whose lengths the chooser picks, so that the longest directory, and any
// other, can end anywhere in the eight-byte words the path walk reads, and
// past the 64 bytes of its mask; paths are built from those directories.
type pathPolicy struct {
	dirs []string
	yaml string
}

func (c chooser) pathPolicy() pathPolicy {
	var pp pathPolicy
	var b strings.Builder
	b.WriteString("version: 1\nrules:\n")
	for i := range 1 + c(5) {
		dir := ""
		if c(8) != 0 { // else the root
			for range 1 + c(4) {
				dir += "/" + strings.Repeat(c.of("a", "b", "x7", ".e", "-", "a-long-name-", "B", "\u00e9", "e\u0301", "\u00df", "\u212a"), 1+c(9))
			}
		}
		if dir == "" {
			dir = "/"
		}
		pp.dirs = append(pp.dirs, dir)
		effect := c.of("allow", "allow", "deny", "ask")
		fmt.Fprintf(&b, "  - {id: r%d, effect: %s, path_under: %q", i, effect, dir)
		if c(4) == 0 {
			b.WriteString(", role: [dev]")
		}
		b.WriteString("}\n")
	}
	pp.yaml = b.String()
	return pp
}

// path returns a path at, under, beside or above one of the directories,
// with the bytes that matter to the walk (slashes, dots, NULs) added.
func (c chooser) pathNear(dirs []string) string {
	p := dirs[c(len(dirs))]
	switch c(4) {
	case 0:
		p = p[:c(len(p)+1)]
	case 1:
		if len(p) > 1 {
			p = p[:len(p)-1] + "z"
		}
	}
	if c(3) == 0 { // another spelling: case, normalisation
		p = c.of(strings.ToUpper(p), norm.NFD.String(p), norm.NFC.String(p), strings.ReplaceAll(p, "ss", "\u00df"))
	}
	alphabet := []string{"/", "/", ".", ".", "a", "b", "7", "\x00", "-", "A", "\u0301", "\u200c", "\xff", "K"}
	for range c(12) {
		p += alphabet[c(len(alphabet))]
	}
	if c(6) == 0 {
		p += "/" + strings.Repeat("q", c(20))
	}
	return p
}

func checkPathIndex(t *testing.T, c chooser) {
	pp := c.pathPolicy()
	s, err := Parse("paths.yaml", []byte(pp.yaml), &Options{Home: testHome})
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, pp.yaml)
	}
	for range 8 {
		p := c.pathNear(pp.dirs)
		r := benchRequest()
		// The subtrees meet the deny and ask rules of the directories
		// under p, in the spelling the policy gives them.
		r.Caps = caps(fsRead(p), fsWrite(p), tree(fsRead(p)), tree(fsWrite(p)))
		r.FoldCase = c(2) == 0
		got, want := outcomeOf(s.Decide(r)), referenceDecide(s, r)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("path %+q (fold %v) under\n%s\nDecide differs from the reference (-want +got)\n%s", p, r.FoldCase, pp.yaml, diff)
		}
	}
}

// TestPathIndexShapes holds the path index to the reference on generated
// policies: directories of every length up to a few hundred bytes, the
// longest among them ending inside or at the edge of a word, and paths
// at, under, beside and above them in every spelling, plain and as whole
// subtrees.
func TestPathIndexShapes(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	c := randChooser(7)
	for range n {
		checkPathIndex(t, c)
	}
}

// FuzzPathIndex is TestPathIndexShapes driven by the fuzzer.
func FuzzPathIndex(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte{0, 1, 1, 1, 7, 0, 0, 3, 2, 0, 0, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPathIndex(t, bytesChooser(data))
	})
}

// TestPathIndexWordEdge holds the cases a walk that skips the word where
// a directory ends gets wrong: "/abcdefg" is eight bytes and
// "/abcdefghijklmno", the longest, sixteen, so each ends at the first
// byte of a word.
func TestPathIndexWordEdge(t *testing.T) {
	s, err := Parse("edge.yaml", []byte(`version: 1
rules:
  - {id: short, effect: allow, path_under: /abcdefg}
  - {id: long, effect: ask, path_under: /abcdefghijklmno}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       string // the deciding rule, "" for none, "!" for invalid
	}{
		{"dir itself", "/abcdefg", "short"},
		{"under", "/abcdefg/x", "short"},
		{"under, long", "/abcdefg/xyzxyzxyzxyzxyz/q", "short"},
		{"beside", "/abcdefgh", ""},
		{"longest itself", "/abcdefghijklmno", "long"},
		{"under the longest", "/abcdefghijklmno/x", "long"},
		{"beside the longest", "/abcdefghijklmnop", ""},
		{"dot under", "/abcdefg/./x", "!"},
		{"dot-dot under", "/abcdefg/x/..", "!"},
		{"empty under", "/abcdefghijklmno//x", "!"},
		{"NUL under", "/abcdefghijklmno/x\x00", "!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Request{Server: "fs", Tool: "read_file", Bound: true, Caps: caps(fsRead(tc.path))}
			if got := outcomeOf(s.Decide(r)).Caps[0]; got != tc.want {
				t.Errorf("Decide(%q) is decided by %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}
