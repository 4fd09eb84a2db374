package policy

import (
	"path"
	"regexp"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern string
		slash   bool
		in      string
		want    bool
	}{
		{"read_*", false, "read_file", true},
		{"read_*", false, "read_", true},
		{"read_*", false, "rea", false},
		{"*_file", false, "write_file", true},
		{"a*b*c", false, "abc", true},
		{"a*b*c", false, "axxbyyc", true},
		{"a*b*c", false, "axxbyy", false},
		{"a?c", false, "abc", true},
		{"a?c", false, "aéc", true},
		{"a?c", false, "ac", false},
		{`a\*`, false, "a*", true},
		{`a\*`, false, "ab", false},
		{"*", false, "a/b", true},
		{"*", true, "a/b", false},
		{"/usr/bin/*", true, "/usr/bin/git", true},
		{"/usr/bin/*", true, "/usr/bin/x/git", false},
		{"/usr/*/git", true, "/usr/bin/git", true},
		{"/usr/?/git", true, "/usr//git", false},
		{"/usr/b?n/*", true, "/usr/bin/git", true},
		{"x", false, "x", true},
		{"x", false, "xx", false},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern, tt.slash)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", tt.pattern, err)
		}
		if got := g.match(tt.in); got != tt.want {
			t.Errorf("glob %q (slash %v) match %q = %v, want %v", tt.pattern, tt.slash, tt.in, got, tt.want)
		}
	}
}

// globRegexp is the reference: the pattern as a regular expression.
func globRegexp(p string, slash bool) *regexp.Regexp {
	any, one := `(?s:.)*`, `(?s:.)`
	if slash {
		any, one = `[^/]*`, `[^/]`
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*':
			b.WriteString(any)
		case '?':
			b.WriteString(one)
		case '\\':
			i++
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func FuzzGlob(f *testing.F) {
	f.Add("read_*", "read_file", false)
	f.Add("/usr/*/g?t", "/usr/bin/git", true)
	f.Add("a*b*c*", "aXbYcZ", false)
	f.Add(`\*x*`, "*xy", true)
	f.Fuzz(func(t *testing.T, pattern, s string, slash bool) {
		g, err := compileGlob(pattern, slash)
		if err != nil {
			return
		}
		if !isASCII(pattern) || !isASCII(s) {
			// The reference works on bytes; `?` matches a rune.
			g.match(s)
			return
		}
		if got, want := g.match(s), globRegexp(pattern, slash).MatchString(s); got != want {
			t.Fatalf("glob %q (slash %v) match %q = %v, reference %v", pattern, slash, s, got, want)
		}
		if slash && !strings.ContainsAny(pattern, `\`) {
			if want, err := path.Match(pattern, s); err == nil && want != g.match(s) {
				t.Fatalf("glob %q match %q = %v, path.Match %v", pattern, s, !want, want)
			}
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
