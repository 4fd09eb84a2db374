package capability

import (
	"path"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestCanonPathNFC: the canonical path is in NFC, after links are resolved
// by the bytes the file system holds.
func TestCanonPathNFC(t *testing.T) {
	fsys := newLinkFS(map[string]string{
		"/l/cafe\u0301":    "/srv/secret",        // a link named in NFD
		"/l/to-nfd":        "/srv/cre\u0300me",   // a link to an NFD name
		"/l/bad-target":    "/srv/\xff",          // a target that is no text
		"/l/\u212aelvin":   "/srv/kelvin-target", // a link named with the Kelvin sign
		"/srv/cre\u0300me": "",                   // not a link: see dirs
	}, "/l/", "/srv/secret/", "/srv/kelvin-target/", "/home/a/")
	delete(fsys.links, "/srv/cre\u0300me")
	fsys.dirs["/srv/cre\u0300me"] = true
	local := &PathOptions{Home: "/home/a", Readlink: fsys.Readlink}
	tests := []struct {
		name    string
		raw     string
		o       *PathOptions
		want    string
		wantErr string
	}{
		{name: "NFD lexically", raw: "/home/a/cafe\u0301/x", want: "/home/a/caf\u00e9/x"},
		{name: "NFC lexically", raw: "/home/a/caf\u00e9/x", want: "/home/a/caf\u00e9/x"},
		{name: "out of order marks", raw: "/a/q\u0307\u0323", want: "/a/q\u0323\u0307"},
		{name: "Kelvin sign is K", raw: "/a/\u212a", want: "/a/K"},
		{name: "home in NFD", raw: "~/cafe\u0301", o: &PathOptions{Home: "/home/cre\u0300me"}, want: "/home/cr\u00e8me/caf\u00e9"},
		{name: "ligature kept", raw: "/a/\ufb01le", want: "/a/\ufb01le"},
		{name: "fullwidth solidus kept", raw: "/a\uff0fb", want: "/a\uff0fb"},
		{name: "link found by its NFD bytes", raw: "/l/cafe\u0301/id", o: local, want: "/srv/secret/id"},
		{name: "NFC spelling of an NFD link is another name", raw: "/l/caf\u00e9/id", o: local, want: "/l/caf\u00e9/id"},
		{name: "link to an NFD name", raw: "/l/to-nfd/x", o: local, want: "/srv/cr\u00e8me/x"},
		{name: "link named with the Kelvin sign", raw: "/l/\u212aelvin", o: local, want: "/srv/kelvin-target"},
		{name: "link to a name that is no text", raw: "/l/bad-target", o: local, wantErr: "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			if o == nil {
				o = &PathOptions{}
			}
			got, err := CanonPath(tt.raw, o)
			checkPathResult(t, tt.raw, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestFoldPath(t *testing.T) {
	tests := []struct {
		a, b string
		same bool // one path to a deny on a case-insensitive volume
	}{
		{"/home/a/.ssh", "/HOME/A/.SSH", true},
		{"/home/a/.ssh", "/home/a/.\u017fsh", true},  // long s
		{"/home/a/.ssh", "/home/a/.s\u200csh", true}, // zero-width non-joiner (HFS+)
		{"/home/a/.ssh", "/home/a/\ufeff.ssh", true}, // BOM (HFS+)
		{"/x/stra\u00dfe", "/x/STRASSE", true},       // sharp s
		{"/x/stra\u00dfe", "/x/stra\u1e9ee", true},   // capital sharp s
		{"/x/k", "/x/\u212a", true},                  // Kelvin sign
		{"/x/\u00e5", "/x/\u212b", true},             // Angstrom sign
		{"/x/private", "/x/pr\u0131vate", true},      // dotless i
		{"/x/private", "/x/PR\u0130VATE", true},      // dotted capital I
		{"/x/caf\u00e9", "/x/CAFE\u0301", true},      // NFD and case
		{"/x/\u03c3", "/x/\u03c2", true},             // final sigma
		{"/x/file", "/x/\ufb01le", true},             // full folding takes the ligature too: a deny errs towards more
		{"/x/a/b", "/x/a\uff0fb", false},             // fullwidth solidus
		{"/x/sun", "/x/\uff53un", false},             // fullwidth s
		{"/x/a", "/x/b", false},
		{"/x/\u00e9", "/x/e", false},
	}
	for _, tt := range tests {
		ka, oka := FoldPath(tt.a)
		kb, okb := FoldPath(tt.b)
		if !oka || !okb {
			t.Errorf("FoldPath(%+q) or FoldPath(%+q) failed", tt.a, tt.b)
			continue
		}
		if (ka == kb) != tt.same {
			t.Errorf("FoldPath(%+q) = %+q, FoldPath(%+q) = %+q; want same = %v", tt.a, ka, tt.b, kb, tt.same)
		}
	}
	for _, p := range []string{"/a/\u200c", "/a/.\u200c", "/a/.\u200d.", "/\xff"} {
		if k, ok := FoldPath(p); ok {
			t.Errorf("FoldPath(%+q) = %+q, want no key", p, k)
		}
	}
}

func TestPathUnderFold(t *testing.T) {
	tests := []struct {
		path, dir string
		want      bool
	}{
		{"/Home/A/.SSH/id", "/home/a/.ssh", true},
		{"/home/a/.sshx", "/home/a/.ssh", false},
		{"/home/a", "/home/a/.ssh", false},
		{"/x/\u00c9", "/x/\u00e9", false}, // only ASCII letters fold
		{"/x/K", "/", true},
		{"x", "/", false},
	}
	for _, tt := range tests {
		if got := PathUnderFold(tt.path, tt.dir); got != tt.want {
			t.Errorf("PathUnderFold(%+q, %+q) = %v, want %v", tt.path, tt.dir, got, tt.want)
		}
	}
}

// TestSpellingKeepsSeparators checks, for every code point, that neither
// NFC nor the fold key makes or removes a "/" or a "." or a NUL: the keys
// of a canonical path are canonical and split where it does.
func TestSpellingKeepsSeparators(t *testing.T) {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s := string(r)
		n, _ := NormPath("/" + s)
		k, ok := FoldPath("/" + s)
		for _, out := range []string{n[1:], k} {
			if ok && strings.ContainsAny(out[1:], "/.\x00") && out != n[1:] || strings.ContainsAny(n[1:], "/.\x00") {
				t.Fatalf("U+%04X: NFC %+q, key %+q", r, n, k)
			}
		}
	}
}

// FuzzSpelling checks NormPath and FoldPath against their references
// (package norm, and keys compared to each other) and their invariants:
// idempotent, canonical in, canonical out, and a grant's match
// (PathUnderFold on NFC forms) implies a deny's (PathUnder on keys).
func FuzzSpelling(f *testing.F) {
	for _, s := range []string{"/home/a/.ssh", "/HOME/A/.SSH/x", "/x/cafe\u0301", "/x/stra\u00dfe", "/x/\u212a",
		"/x/pr\u0130vate", "/a/\u200c", "/x/\ufb01le", "/a\uff0fb", "/", "/\xff", "/x/\u03a3\u0345"} {
		f.Add(s, "/home")
	}
	f.Fuzz(func(t *testing.T, p, dir string) {
		if p == "" || p[0] != '/' || path.Clean(p) != p || dir == "" || dir[0] != '/' || path.Clean(dir) != dir {
			return
		}
		n, ok := NormPath(p)
		if ok != utf8.ValidString(p) {
			t.Fatalf("NormPath(%+q) ok = %v", p, ok)
		}
		if !ok {
			return
		}
		if n != norm.NFC.String(p) || path.Clean(n) != n {
			t.Fatalf("NormPath(%+q) = %+q", p, n)
		}
		if n2, _ := NormPath(n); n2 != n {
			t.Fatalf("NormPath not idempotent on %+q", p)
		}
		k, ok := FoldPath(p)
		if !ok {
			return
		}
		if path.Clean(k) != k || k[0] != '/' {
			t.Fatalf("FoldPath(%+q) = %+q, not canonical", p, k)
		}
		if kn, _ := FoldPath(n); kn != k {
			t.Fatalf("FoldPath(%+q) = %+q, of its NFC %+q", p, kn, k)
		}
		if ka, _ := FoldPath(lowerASCII(p)); ka != k {
			t.Fatalf("FoldPath differs on ASCII case: %+q vs %+q", k, ka)
		}
		dn, ok := NormPath(dir)
		if !ok {
			return
		}
		dk, ok := FoldPath(dir)
		if !ok {
			return
		}
		if PathUnderFold(n, dn) && !PathUnder(k, dk) {
			t.Fatalf("a grant meets %+q under %+q, a deny does not (keys %+q, %+q)", p, dir, k, dk)
		}
		if IsASCII(p) && PathUnderFold(p, dk) != PathUnder(k, dk) {
			t.Fatalf("an ASCII path %+q meets the key %+q differently", p, dk)
		}
	})
}
