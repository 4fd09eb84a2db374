package dlp

import (
	"regexp"
	"strings"
)

// A naive reference for the token kinds: one regular expression per format, with the
// word boundaries as explicit groups (RE2 has no look-behind). It finds a subset of what
// Scan finds (it misses tokens that share a boundary byte, and split ones), which is
// what the fuzz target checks, and it is the baseline of BenchmarkScanRegexp.
var reference = []struct {
	kind  Kind
	re    *regexp.Regexp
	check func(string) bool
}{
	{AWSAccessKey, regexp.MustCompile(`(?:^|[^A-Za-z0-9])((?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})(?:[^A-Za-z0-9]|$)`), func(s string) bool { return !placeholder(s[4:]) }},
	{GitHubToken, regexp.MustCompile(`(?:^|[^A-Za-z0-9_])(gh[pousr]_[A-Za-z0-9]{36})(?:[^A-Za-z0-9_]|$)`), func(s string) bool { return refChecksum(s[4:]) }},
	{NPMToken, regexp.MustCompile(`(?:^|[^A-Za-z0-9_])(npm_[A-Za-z0-9]{36})(?:[^A-Za-z0-9_]|$)`), func(s string) bool { return refChecksum(s[4:]) }},
	{GitHubToken, regexp.MustCompile(`(?:^|[^A-Za-z0-9_])(github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})(?:[^A-Za-z0-9_]|$)`), nil},
	{GoogleAPIKey, regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])(AIza[A-Za-z0-9_-]{35})(?:[^A-Za-z0-9_-]|$)`), func(s string) bool { return !placeholder(s[4:]) }},
	{TwilioKey, regexp.MustCompile(`(?:^|[^A-Za-z0-9])(SK[0-9a-f]{32})(?:[^A-Za-z0-9]|$)`), func(s string) bool { return !placeholder(s[2:]) }},
	{SendGridKey, regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])(SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)`), func(s string) bool { return !placeholder(s[3:]) }},
	{StripeKey, regexp.MustCompile(`(?:^|[^A-Za-z0-9_])([sr]k_live_[A-Za-z0-9]{20,248})(?:[^A-Za-z0-9_]|$)`), func(s string) bool { return !placeholder(s[8:]) }},
	{PrivateKey, regexp.MustCompile(`-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED )?PRIVATE KEY-----\n[A-Za-z0-9+/=\n]{64,}\n-----END (?:RSA |EC |DSA |OPENSSH |ENCRYPTED )?PRIVATE KEY-----`), nil},
}

// refChecksum is GitHub's checksum written the plain way: decode the last six base62
// digits and compare them with the CRC-32 of the thirty before.
func refChecksum(body string) bool {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var n uint64
	for _, c := range body[30:] {
		n = n*62 + uint64(strings.IndexRune(digits, c))
	}
	return withChecksum("", body[:30]) == body && n < 1<<32
}

// referenceScan returns the findings of the reference expressions.
func referenceScan(s string) []Finding {
	var out []Finding
	for _, r := range reference {
		for _, m := range r.re.FindAllStringSubmatchIndex(s, -1) {
			a, b := m[0], m[1]
			if len(m) > 2 {
				a, b = m[2], m[3]
			}
			if r.check == nil || r.check(s[a:b]) {
				out = append(out, Finding{Kind: r.kind, Start: a, End: b})
			}
		}
	}
	return out
}

// referenceAny is all the reference expressions in one, as a regexp-based scanner would
// run them: the baseline for BenchmarkScan.
var referenceAny = func() *regexp.Regexp {
	var parts []string
	for _, r := range reference {
		parts = append(parts, r.re.String())
	}
	return regexp.MustCompile(strings.Join(parts, "|"))
}()
