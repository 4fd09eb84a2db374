package dlp

import "hash/crc32"

// This file holds the matchers of tokens that announce themselves with a prefix. Each
// runs at an anchor byte of its prefix, checks that the prefix starts a word, and reads
// a bounded number of bytes after it.

// atA matches AWS access key ids and Google API keys at an 'A'.
func (sc *scanner) atA(i int) int {
	s := sc.s
	if len(s)-i < 20 || !startsRun(s, i, cAlnum) {
		return i + 1
	}
	switch s[i+1 : i+4] {
	case "KIA", "SIA", "BIA", "CCA":
		end := i + 20
		if runMax(s, i+4, 16, cBase32) == end && endsRun(s, end, cAlnum) && !placeholder(s[i+4:end]) {
			sc.add(AWSAccessKey, i, end)
			return end
		}
	case "Iza":
		end := i + 39
		if runMax(s, i+4, 35, cB64URL) == end && endsRun(s, end, cB64URL) && !placeholder(s[i+4:end]) {
			sc.add(GoogleAPIKey, i, end)
			return end
		}
	}
	return i + 1
}

// atS matches Twilio API key SIDs (SK and 32 lower-case hex digits) at an 'S'.
func (sc *scanner) atS(i int) int {
	s := sc.s
	end := i + 34
	if has(s, i, "SK") && startsRun(s, i, cAlnum) && runMax(s, i+2, 32, cHexLower) == end &&
		endsRun(s, end, cAlnum) && !placeholder(s[i+2:end]) {
		sc.add(TwilioKey, i, end)
		return end
	}
	return i + 1
}

// atUnderscore matches GitHub, npm and Stripe tokens at the '_' of their prefix.
func (sc *scanner) atUnderscore(i int) int {
	s := sc.s
	if i >= 3 && startsRun(s, i-3, cWord) {
		var k Kind
		switch s[i-3 : i] {
		case "ghp", "gho", "ghu", "ghs", "ghr":
			k = GitHubToken
		case "npm":
			k = NPMToken
		}
		if k != "" {
			if end := i + 37; runMax(s, i+1, 36, cAlnum) == end && endsRun(s, end, cWord) && checksum62(s[i+1:end]) {
				sc.add(k, i-3, end)
				return end
			}
		}
	}
	if i >= 6 && s[i-6:i] == "github" && has(s, i, "_pat_") && startsRun(s, i-6, cWord) {
		// github_pat_ + 22 alphanumerics + '_' + 59 alphanumerics.
		a := i + 5
		if runMax(s, a, 22, cAlnum) == a+22 && has(s, a+22, "_") {
			end := a + 23 + 59
			if runMax(s, a+23, 59, cAlnum) == end && endsRun(s, end, cWord) {
				sc.add(GitHubToken, i-6, end)
				return end
			}
		}
	}
	if i >= 2 && (s[i-2:i] == "sk" || s[i-2:i] == "rk") && has(s, i+1, "live_") && startsRun(s, i-2, cWord) {
		a := i + 6
		end := runMax(s, a, 248, cAlnum)
		if end-a >= 20 && endsRun(s, end, cWord) && !placeholder(s[a:end]) {
			sc.add(StripeKey, i-2, end)
			return end
		}
	}
	return i + 1
}

// atDash matches private key blocks at "-----BEGIN", and GitLab, Slack, OpenAI,
// Anthropic, PyPI and Google client-secret tokens at the '-' of their prefix.
func (sc *scanner) atDash(i int) int {
	s := sc.s
	if has(s, i, "-----") {
		return sc.privateKey(i)
	}
	const tok = cB64URL
	switch {
	case i >= 2 && s[i-2:i] == "sk" && startsRun(s, i-2, tok):
		a := i + 1
		if has(s, a, "ant-") {
			end := runMax(s, a+4, 400, tok)
			if end-(a+4) >= 32 && endsRun(s, end, tok) && !placeholder(s[a+4:end]) {
				sc.add(AnthropicKey, i-2, end)
				return end
			}
			return i + 1
		}
		end := runMax(s, a, 400, tok)
		if !endsRun(s, end, tok) || placeholder(s[a:end]) {
			return i + 1
		}
		body := s[a:end]
		switch {
		case has(body, 0, "proj-") || has(body, 0, "svcacct-") || has(body, 0, "admin-"):
			if len(body) < 40 {
				return i + 1
			}
		case len(body) < 32 || run(body, 0, cAlnum) != len(body) || !mixed(body):
			return i + 1
		}
		sc.add(OpenAIKey, i-2, end)
		return end
	case i >= 5 && (s[i-5:i] == "glpat" || s[i-5:i] == "glptt") && startsRun(s, i-5, tok),
		i >= 4 && (s[i-4:i] == "gldt" || s[i-4:i] == "glrt") && startsRun(s, i-4, tok):
		start := i - 5
		if s[i-4] == 'g' {
			start = i - 4
		}
		// Routable tokens carry '.'-separated parts; a sentence's full stop is not one.
		end := runMax(s, i+1, 256, tok|cKey)
		for end > i+1 && s[end-1] == '.' {
			end--
		}
		if end-(i+1) >= 20 && !placeholder(s[i+1:end]) {
			sc.add(GitLabToken, start, end)
			return end
		}
	case i >= 4 && (has(s, i-4, "xox") && isSlackType(s[i-1]) || s[i-4:i] == "xapp") && startsRun(s, i-4, tok):
		end := runMax(s, i+1, 256, cAlnum|cDash)
		for end > i+1 && s[end-1] == '-' {
			end--
		}
		body := s[i+1 : end]
		if len(body) >= 20 && hasDigit(body) && !placeholder(body) {
			sc.add(SlackToken, i-4, end)
			return end
		}
	case i >= 4 && s[i-4:i] == "pypi" && startsRun(s, i-4, tok):
		if has(s, i+1, "AgEIcHlwaS5vcmc") || has(s, i+1, "AgENdGVzdC5weXBpLm9yZw") {
			end := runMax(s, i+1, 1024, tok)
			if end-(i+1) >= 60 && endsRun(s, end, tok) {
				sc.add(PyPIToken, i-4, end)
				return end
			}
		}
	case i >= 6 && s[i-6:i] == "GOCSPX" && startsRun(s, i-6, tok):
		end := runMax(s, i+1, 64, tok)
		if end-(i+1) >= 24 && endsRun(s, end, tok) && !placeholder(s[i+1:end]) {
			sc.add(GoogleOAuth, i-6, end)
			return end
		}
	}
	return i + 1
}

func isSlackType(c byte) bool {
	switch c {
	case 'a', 'b', 'o', 'p', 'r', 's':
		return true
	}
	return false
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if is(s[i], cDigit) {
			return true
		}
	}
	return false
}

// atDot matches SendGrid keys, Google OAuth access tokens and Slack webhooks at the '.'
// of their prefix, and JWTs at the '.' after their header.
func (sc *scanner) atDot(i int) int {
	s := sc.s
	const tok = cB64URL
	switch {
	case i >= 2 && s[i-2:i] == "SG" && startsRun(s, i-2, tok):
		a := i + 1
		if runMax(s, a, 22, tok) == a+22 && has(s, a+22, ".") {
			end := a + 23 + 43
			if runMax(s, a+23, 43, tok) == end && endsRun(s, end, tok) && !placeholder(s[a:end]) {
				sc.add(SendGridKey, i-2, end)
				return end
			}
		}
	case i >= 4 && s[i-4:i] == "ya29" && startsRun(s, i-4, tok):
		end := runMax(s, i+1, 2048, tok|cKey)
		for end > i+1 && s[end-1] == '.' {
			end--
		}
		if end-(i+1) >= 20 && !placeholder(s[i+1:end]) {
			sc.add(GoogleOAuth, i-4, end)
			return end
		}
	case i >= 5 && s[i-5:i] == "hooks" && has(s, i, ".slack.com/"):
		return sc.slackWebhook(i)
	}
	return sc.jwt(i)
}

// slackWebhook matches the secret path of hooks.slack.com/services/T…/B…/… at the '.'
// after "hooks".
func (sc *scanner) slackWebhook(i int) int {
	s := sc.s
	a := i + len(".slack.com/")
	switch {
	case has(s, a, "services/"), has(s, a, "workflows/"):
	default:
		return i + 1
	}
	end := runMax(s, a, 256, cB64URL|cSlash)
	if end-a >= 30 && !placeholder(s[a:end]) {
		sc.add(SlackWebhook, a, end)
		return end
	}
	return i + 1
}

// checksum62 reports whether a 36-character GitHub or npm token body ends with the
// CRC-32 (IEEE) of its first 30 characters in 6 base62 digits (0-9A-Za-z).
func checksum62(body string) bool {
	if len(body) != 36 {
		return false
	}
	crc := ^uint32(0)
	for k := 0; k < 30; k++ {
		crc = crc32.IEEETable[byte(crc)^body[k]] ^ crc>>8
	}
	crc = ^crc
	var sum uint64
	for k := 30; k < 36; k++ {
		d, ok := base62(body[k])
		if !ok {
			return false
		}
		sum = sum*62 + uint64(d)
	}
	return sum == uint64(crc)
}

func base62(c byte) (uint8, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'Z':
		return c - 'A' + 10, true
	case 'a' <= c && c <= 'z':
		return c - 'a' + 36, true
	}
	return 0, false
}

// placeholder reports whether a token body or value is an obvious stand-in rather than
// a secret: a run of six identical characters, or a word such as example, xxxx, your,
// placeholder, redacted, dummy, sample or fake, in lower case, upper case or title case.
// Random tokens contain these with negligible probability (about 1 in 10,000 for the
// longest bodies; matching any mix of cases would make it ten times likelier).
func placeholder(s string) bool {
	s = s[:min(len(s), 512)] // bounded, so that overlapping candidates stay linear
	same := 1
	for k := 1; k < len(s); k++ {
		if s[k] == s[k-1] {
			if same++; same >= 6 {
				return true
			}
		} else {
			same = 1
		}
	}
	for k := 0; k < len(s); k++ {
		for _, w := range placeholderWords {
			if len(s)-k >= len(w) && lower(s[k]) == w[0] && matchCased(s[k:k+len(w)], w) {
				return true
			}
		}
	}
	return false
}

// matchCased reports whether t is w (lower case) in lower, upper or title case.
func matchCased(t, w string) bool {
	if t == w {
		return true
	}
	upper, title := true, true
	for k := 0; k < len(w); k++ {
		u := w[k]
		if 'a' <= u && u <= 'z' {
			u -= 'a' - 'A'
		}
		if t[k] != u {
			upper = false
			if k == 0 || t[k] != w[k] {
				title = false
			}
		} else if k > 0 && u != w[k] {
			title = false
		}
	}
	return upper || title
}

var placeholderWords = []string{"example", "xxxx", "your", "placeholder", "redacted", "dummy", "sample", "fake", "****", "...."}
