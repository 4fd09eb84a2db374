package dlp

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name string
		in   string
		fs   []Finding
		want string
	}{
		{name: "none", in: "abc", want: "abc"},
		{name: "one", in: "a secret b", fs: []Finding{{Card, 2, 8}}, want: "a [REDACTED:card] b"},
		{name: "whole string", in: "secret", fs: []Finding{{JWT, 0, 6}}, want: "[REDACTED:jwt]"},
		{name: "two", in: "x AA y BB z", fs: []Finding{{Card, 2, 4}, {JWT, 7, 9}}, want: "x [REDACTED:card] y [REDACTED:jwt] z"},
		{name: "unsorted", in: "x AA y BB z", fs: []Finding{{JWT, 7, 9}, {Card, 2, 4}}, want: "x [REDACTED:card] y [REDACTED:jwt] z"},
		{name: "touching spans stay apart", in: "AABB", fs: []Finding{{Card, 0, 2}, {JWT, 2, 4}}, want: "[REDACTED:card][REDACTED:jwt]"},
		{name: "overlap merges, first kind names it", in: "0123456789", fs: []Finding{{URLPassword, 2, 6}, {GitHubToken, 4, 8}}, want: "01[REDACTED:url.password]89"},
		{name: "nested", in: "0123456789", fs: []Finding{{GitHubToken, 4, 6}, {URLPassword, 2, 8}}, want: "01[REDACTED:url.password]89"},
		{name: "same span", in: "0123456789", fs: []Finding{{GCPServiceAccount, 2, 8}, {PrivateKey, 2, 8}}, want: "01[REDACTED:gcp.service_account]89"},
		{name: "chain of overlaps", in: "0123456789", fs: []Finding{{Card, 1, 3}, {Card, 2, 5}, {Card, 4, 7}}, want: "0[REDACTED:card]789"},
		{name: "out of range clipped", in: "abc", fs: []Finding{{Card, -5, 2}, {JWT, 2, 99}}, want: "[REDACTED:card][REDACTED:jwt]"},
		{name: "inverted span ignored", in: "abc", fs: []Finding{{Card, 2, 1}}, want: "abc"},
		{name: "empty span ignored", in: "abc", fs: []Finding{{Card, 1, 1}}, want: "abc"},
		{name: "widened to whole runes", in: "aé€b", fs: []Finding{{Card, 2, 4}}, want: "a[REDACTED:card]b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]Finding(nil), tc.fs...)
			if got := Redact(tc.in, tc.fs); got != tc.want {
				t.Errorf("Redact(%q, %v) = %q, want %q", tc.in, tc.fs, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.fs[i] {
					t.Fatalf("Redact modified its findings: %v, was %v", tc.fs, in)
				}
			}
		})
	}
}

// TestRedactIdempotent checks that a redacted text holds nothing more to redact: the
// markers themselves are placeholders to every matcher.
func TestRedactIdempotent(t *testing.T) {
	for _, s := range loadPositives(t) {
		r := Redact(s.text, Scan(s.text, nil))
		if again := Scan(r, nil); len(again) != 0 {
			t.Errorf("positives.txt:%d: Scan(Redact(x)) = %v in %q", s.line, again, r)
		}
		if utf8.ValidString(s.text) && !utf8.ValidString(r) {
			t.Errorf("positives.txt:%d: Redact broke UTF-8: %q", s.line, r)
		}
		for _, w := range s.want {
			if secret := s.text[w.Start:w.End]; strings.Contains(r, secret) {
				t.Errorf("positives.txt:%d: redacted text still holds %s", s.line, w.Kind)
			}
		}
	}
}
