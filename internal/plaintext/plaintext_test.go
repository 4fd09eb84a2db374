package plaintext

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"read_file", "read_file"},
		{"a path/with spaces", "a path/with spaces"},
		{`rule "no-secrets" denies`, `rule "no-secrets" denies`},
		{"naïve 日本", "naïve 日本"},
		{"", ""},
		{"\x1b[2K\r     9 allow demo/echo", `"\x1b[2K\r     9 allow demo/echo"`},
		{"line\nnext", `"line\nnext"`},
		{"tab\there", `"tab\there"`},
		{"del\x7f", `"del\x7f"`},
		{"c1 \u009b csi", `"c1 \u009b csi"`},
		{"bidi \u202e override", `"bidi \u202e override"`},
		{"bad \xff byte", `"bad \xff byte"`},
		{"nbsp\u00a0", `"nbsp\u00a0"`},
	} {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// FuzzQuote: what Quote returns is plain, and is s itself or quotes it
// faithfully.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31m", "a\nb", "\xff", "\u202e", `"q"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Quote(s)
		if !utf8.ValidString(got) || strings.ContainsFunc(got, func(r rune) bool { return !strconv.IsPrint(r) }) {
			t.Fatalf("Quote(%q) = %q, not plain", s, got)
		}
		if got == s {
			return
		}
		if back, err := strconv.Unquote(got); err != nil || back != s {
			t.Fatalf("Quote(%q) = %s, which unquotes to %q (%v)", s, got, back, err)
		}
	})
}
