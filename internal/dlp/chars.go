package dlp

// Character classes, as bits of ctab.
const (
	cDigit = 1 << iota
	cUpper
	cLower
	cUnderscore
	cDash
	cPlus
	cSlash
	cEquals
	cHexLower
	cBase32
	cSpace
	cKey // a byte of a configuration key: letters, digits, '_', '-', '.'

	cAlnum  = cDigit | cUpper | cLower
	cWord   = cAlnum | cUnderscore
	cB64URL = cAlnum | cUnderscore | cDash
	cB64    = cAlnum | cPlus | cSlash
)

var ctab = func() (t [256]uint16) {
	for c := '0'; c <= '9'; c++ {
		t[c] |= cDigit | cHexLower
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] |= cUpper | cBase32
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] |= cLower
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] |= cHexLower
	}
	for c := '2'; c <= '7'; c++ {
		t[c] |= cBase32
	}
	t['_'] |= cUnderscore
	t['-'] |= cDash
	t['+'] |= cPlus
	t['/'] |= cSlash
	t['='] |= cEquals
	for _, c := range []byte{' ', '\t', '\n', '\r', '\v', '\f'} {
		t[c] |= cSpace
	}
	for c := range 256 {
		if t[c]&(cAlnum|cUnderscore|cDash) != 0 || c == '.' {
			t[c] |= cKey
		}
	}
	return t
}()

func is(c byte, class uint16) bool { return ctab[c]&class != 0 }

// run returns the end of the run of bytes in class starting at i.
func run(s string, i int, class uint16) int {
	for i < len(s) && ctab[s[i]]&class != 0 {
		i++
	}
	return i
}

// runMax is run stopping after at most max bytes.
func runMax(s string, i, max int, class uint16) int {
	end := min(len(s), i+max)
	for i < end && ctab[s[i]]&class != 0 {
		i++
	}
	return i
}

// startsRun reports whether a run of class begins at i: s[i-1] is not in class.
func startsRun(s string, i int, class uint16) bool {
	return i == 0 || ctab[s[i-1]]&class == 0
}

// endsRun reports whether a run of class ends at i: s[i] is not in class.
func endsRun(s string, i int, class uint16) bool {
	return i >= len(s) || ctab[s[i]]&class == 0
}

// has reports whether s[i:] starts with p.
func has(s string, i int, p string) bool {
	return i >= 0 && i <= len(s) && len(s)-i >= len(p) && s[i:i+len(p)] == p
}

// hasFold is has with ASCII case folded; p must be lower case.
func hasFold(s string, i int, p string) bool {
	if i < 0 || len(s)-i < len(p) {
		return false
	}
	for k := 0; k < len(p); k++ {
		if lower(s[i+k]) != p[k] {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func containsFold(s, p string) bool {
	for i := 0; i+len(p) <= len(s); i++ {
		if hasFold(s, i, p) {
			return true
		}
	}
	return false
}

// mixed reports whether s holds an upper-case letter, a lower-case letter and a digit.
func mixed(s string) bool {
	var seen uint16
	for i := 0; i < len(s); i++ {
		seen |= ctab[s[i]]
	}
	return seen&cUpper != 0 && seen&cLower != 0 && seen&cDigit != 0
}

// Delimiter sets for values, and a memo of the next delimiter so that values searched
// from many anchors in one region are searched once.
const (
	setSemi  = iota // ADO.NET, ODBC and JDBC pairs: ';', a quote or a line end
	setQuery        // URL query values: '&', '#', space, quotes, angle brackets
	setSpace        // bare words: space, quotes, ';', ',', line ends
	setLine         // line ends
	setDQ           // the end of a "string"
	setSQ           // the end of a 'string'
	setBQ           // the end of a `string`
	setBrace        // the end of an ODBC {value}
	nSets
)

var delims = func() (t [nSets][256]bool) {
	for _, c := range []byte(";\r\n\"'`") {
		t[setSemi][c] = true
	}
	for _, c := range []byte("&#\"'`<> \t\r\n\\") {
		t[setQuery][c] = true
	}
	for _, c := range []byte(" \t\r\n\"'`;,<>\\") {
		t[setSpace][c] = true
	}
	for _, c := range []byte("\r\n") {
		t[setLine][c] = true
		t[setDQ][c] = true
		t[setSQ][c] = true
		t[setBrace][c] = true
	}
	t[setDQ]['"'] = true
	t[setSQ]['\''] = true
	t[setBQ]['`'] = true
	t[setBrace]['}'] = true
	return t
}()

type delimMemo struct{ from, at int }

// next returns the index of the first byte at or after i in delimiter set set, or
// len(s). Anchors come in increasing order, so each set is searched once overall.
func (sc *scanner) next(i, set int) int {
	m := &sc.memo[set]
	if sc.memos&(1<<set) != 0 && m.at > 0 && m.from <= i && i <= m.at {
		return m.at
	}
	t := &delims[set]
	s := sc.s
	j := i
	for j < len(s) && !t[s[j]] {
		j++
	}
	*m = delimMemo{from: i, at: j}
	sc.memos |= 1 << set
	return j
}

// invisibleAt returns the length of the invisible formatting character at s[i], or 0.
func invisibleAt(s string, i int) int {
	if i+1 < len(s) && s[i] == 0xC2 && s[i+1] == 0xAD { // U+00AD soft hyphen
		return 2
	}
	if i+2 >= len(s) {
		return 0
	}
	b1, b2 := s[i+1], s[i+2]
	switch s[i] {
	case 0xE1: // U+180E Mongolian vowel separator
		if b1 == 0xA0 && b2 == 0x8E {
			return 3
		}
	case 0xE2:
		// U+200B..U+200F zero-width space, joiners, marks; U+202A..U+202E embeddings;
		// U+2060..U+2064 word joiner, invisible operators; U+2066..U+2069 isolates.
		if b1 == 0x80 && (0x8B <= b2 && b2 <= 0x8F || 0xAA <= b2 && b2 <= 0xAE) ||
			b1 == 0x81 && (0xA0 <= b2 && b2 <= 0xA4 || 0xA6 <= b2 && b2 <= 0xA9) {
			return 3
		}
	case 0xEF: // U+FEFF zero-width no-break space
		if b1 == 0xBB && b2 == 0xBF {
			return 3
		}
	}
	return 0
}

// scanVisible scans s with its invisible characters removed and appends the findings
// with their spans mapped back onto s. Only strings holding such characters pay for it.
func scanVisible(s string, dst []Finding) []Finding {
	vis := make([]byte, 0, len(s))
	offs := make([]int32, 0, len(s))
	for i := 0; i < len(s); {
		if n := invisibleAt(s, i); n > 0 {
			i += n
			continue
		}
		vis = append(vis, s[i])
		offs = append(offs, int32(i))
		i++
	}
	sc := scanner{s: string(vis)}
	sc.run()
	for _, f := range sc.dst {
		if f.End <= f.Start {
			continue
		}
		start, end := int(offs[f.Start]), int(offs[f.End-1])+1
		// Extend the end over the rest of a multi-byte rune.
		for end < len(s) && end-int(offs[f.End-1]) < 4 && s[end]&0xC0 == 0x80 {
			end++
		}
		dst = append(dst, Finding{Kind: f.Kind, Start: start, End: end})
	}
	return dst
}
