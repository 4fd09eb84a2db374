package dlp

import "strings"

// privateKey matches a private key block at the "-----" at i: a "-----BEGIN <label>-----"
// line whose label holds "PRIVATE KEY" (ASCII case folded: a lower-cased header hides
// nothing), its key material, and the "-----END …-----" line that directly follows the
// material. Without an end line (a truncated block), the span ends with the material.
// Fewer than 40 base64 characters of material is a placeholder such as
// "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----".
func (sc *scanner) privateKey(i int) int {
	s := sc.s
	// The run of dashes: "------BEGIN" starts its header at the last five.
	d := run(s, i, cDash)
	if d-i < 5 || !hasFold(s, d, "begin ") {
		return d
	}
	label := d + len("begin ")
	lend := strings.Index(s[label:min(len(s), label+64)], "-----")
	if lend < 0 || !containsFold(s[label:label+lend], "private key") {
		return d
	}
	body := run(s, label+lend, cDash)
	end := pemMaterial(s, body)
	if countB64(s[body:end]) < 40 {
		return body
	}
	if e := run(s, end, cDash); e-end >= 5 && hasFold(s, e, "end") {
		if close := strings.Index(s[e:min(len(s), e+72)], "-----"); close >= 0 {
			end = run(s, e+close, cDash)
		}
	}
	start := d - 5
	sc.add(PrivateKey, start, end)
	if serviceAccountKey(s, start) {
		sc.add(GCPServiceAccount, start, end)
	}
	return end
}

// pemMaterial returns the end of the key material starting at i: base64, whitespace,
// the backslash escapes of a JSON string, and the "Name: value" headers of encrypted
// and armored blocks. It stops at "--" (the next BEGIN or END line) and at "..".
func pemMaterial(s string, i int) int {
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case is(c, cB64|cEquals|cSpace), c == '\\', c == ':', c == ',':
		case (c == '-' || c == '.') && at(s, i+1) != c:
		default:
			return i
		}
	}
	return i
}

func countB64(s string) int {
	n := 0
	for k := 0; k < len(s); k++ {
		if is(s[k], cB64) {
			n++
		}
	}
	return n
}

// serviceAccountKey reports whether the block at start is the value of a
// "private_key" JSON member, raw or inside an escaped JSON string.
func serviceAccountKey(s string, start int) bool {
	j := start
	back := func(c byte) bool {
		if j > 0 && s[j-1] == c {
			j--
			return true
		}
		return false
	}
	spaces := func() {
		for n := 0; n < 8 && j > 0 && is(s[j-1], cSpace); n++ {
			j--
		}
	}
	if !back('"') {
		return false
	}
	back('\\')
	spaces()
	if !back(':') {
		return false
	}
	spaces()
	if !back('"') {
		return false
	}
	back('\\')
	return j >= len("private_key") && s[j-len("private_key"):j] == "private_key"
}
