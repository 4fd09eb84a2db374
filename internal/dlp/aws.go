package dlp

// awsWindow is how far from an AWS access key id a secret access key is looked for.
const awsWindow = 256

// secretKeysNearAccessKeys reports, within awsWindow bytes of each AWS access key id
// found from dst[from:] on, the 40-character base64 words that read as AWS secret access
// keys: upper- and lower-case letters and a digit, '+' or '/'. A git SHA-1 (lower-case
// hex) is never one. Windows are read once even where they overlap.
func (sc *scanner) secretKeysNearAccessKeys(from int) {
	s := sc.s
	pos := 0
	for f, n := from, len(sc.dst); f < n; f++ {
		if sc.dst[f].Kind != AWSAccessKey {
			continue
		}
		k := max(pos, sc.dst[f].Start-awsWindow)
		b := min(len(s), sc.dst[f].End+awsWindow)
		for k < b {
			if !is(s[k], cB64) {
				k++
				continue
			}
			e := run(s, k, cB64)
			if e-k == 40 && startsRun(s, k, cB64|cEquals) && endsRun(s, e, cEquals) && awsSecret(s[k:e]) {
				sc.add(AWSSecretKey, k, e)
			}
			k = e
		}
		pos = max(pos, k)
	}
}

func awsSecret(v string) bool {
	var seen uint16
	for k := 0; k < len(v); k++ {
		seen |= ctab[v[k]]
	}
	return seen&cUpper != 0 && seen&cLower != 0 && seen&(cDigit|cPlus|cSlash) != 0 && !placeholder(v)
}
