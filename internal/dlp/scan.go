package dlp

import (
	"cmp"
	"math/bits"
	"slices"
)

// Finding is one secret or piece of personal data in a scanned string: its kind and its
// byte span s[Start:End]. It never holds the text itself, so a Finding may be logged and
// recorded.
type Finding struct {
	Kind       Kind
	Start, End int
}

// Scan appends to dst the findings in s, sorted by Start (then by End, longest first),
// and returns the extended slice. It allocates nothing when it finds nothing, and runs
// in time linear in len(s).
//
// Spans start and end on rune boundaries, also in invalid UTF-8. Findings may overlap
// (a service-account key is both a [GCPServiceAccount] and a [PrivateKey]); the
// strictest [Action] of those found applies. A finding of a generic kind ([URLPassword],
// [ConnPassword], [HTTPAuth], [ConfigSecret]: known by its key or place, not its format)
// is dropped when its span holds a finding of a format kind: API_TOKEN=ghp_… is
// reported as a [GitHubToken] alone.
//
// Scan also reads s with invisible formatting characters (zero-width spaces and joiners,
// word joiners, soft hyphens, byte-order marks, bidirectional controls) removed, so that
// a token split by them is found; its span then covers the invisible characters too.
func Scan(s string, dst []Finding) []Finding {
	if len(s) < minFinding {
		return dst // too short to hold anything a matcher finds
	}
	first := anchorFrom(s, 0)
	if first == len(s) {
		// No byte a matcher starts at, so run would call none and add nothing, and
		// no invisible character either (their first bytes are anchors): most keys
		// and short values of arguments are done here, without the scanner.
		return dst
	}
	var sc scanner
	return sc.scan(s, first, dst)
}

// minFinding is the length of the shortest string in which the scanner finds
// anything: ";pwd=x", "?pwd=x", "&pwd=x" and "pwd=x;", a connection string's password
// of one byte after the shortest key that names one (classify reads no shorter name).
// Every other matcher needs more: a configuration entry a key of three bytes, a
// separator and a value of four; a URL's password "a://:b@c"; an Authorization
// credential eight bytes; a card number thirteen digits; the tokens, JWTs and key
// blocks more still. A string with invisible characters is scanned without them, which
// only shortens it. FuzzScanPrefilter holds Scan's shortcut to the full pass, and
// TestMinFinding holds the bound tight.
const minFinding = 6

// minNumberFinding is the length of the shortest JSON number in which the scanner finds
// anything. The number grammar's bytes are digits, '-', '+', '.', 'e' and 'E', of which
// digits, '-' and '.' are anchors: no token prefix, key name or "-----" line can be
// spelt with them (a number has at most two '-', and no "eyJ" starts a JWT header), so
// only a card number can be found, and it has thirteen digits or more.
const minNumberFinding = 13

// numberMayHold reports whether the text of a JSON number may hold a finding: it is
// long enough for a card number, or it is not made of a number's bytes alone (a number
// from a source that did not check it), in which case the scanner decides.
func numberMayHold(raw string) bool {
	if len(raw) >= minNumberFinding {
		return true
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			return true
		}
	}
	return false
}

// scan is Scan with sc, whatever it held, for s whose first anchor is at first.
func (sc *scanner) scan(s string, first int, dst []Finding) []Finding {
	base := len(dst)
	sc.s, sc.dst, sc.invisible, sc.memos = s, dst, false, 0
	sc.runFrom(first)
	dst = sc.dst
	if sc.invisible {
		dst = scanVisible(s, dst)
	}
	if len(dst)-base < 2 {
		return dst // tidy has nothing to sort or drop
	}
	return tidy(dst, base)
}

// scanner holds the state of one pass over a string. Every matcher it calls reads a
// bounded window or advances past what it read, which keeps the pass linear.
type scanner struct {
	s         string
	dst       []Finding
	invisible bool             // s holds an invisible formatting character
	memo      [nSets]delimMemo // next delimiter of each set
	strMemo   [nSets]delimMemo // end of a quoted string, by its set
	// memos has bit k set when memo[k] holds an answer for s, and bit nSets+k
	// when strMemo[k] does: a scanner is reused without clearing the arrays.
	memos uint16
}

// Both memos' bits fit in scanner.memos (the constant overflows otherwise).
const _ = uint16(1<<(2*nSets) - 1)

func (sc *scanner) add(k Kind, start, end int) {
	sc.dst = append(sc.dst, Finding{Kind: k, Start: start, End: end})
}

// run is the prefilter: one table-driven pass that stops only at the bytes a secret can
// be anchored on, and hands each to the matchers for that byte.
func (sc *scanner) run() { sc.runFrom(anchorFrom(sc.s, 0)) }

// anchorFrom returns the index of the first anchor byte of s at or after i, or len(s)
// (i itself when i >= len(s)).
func anchorFrom(s string, i int) int {
	// Eight bytes at a time: the candidates of a word are found by arithmetic, and
	// only those are looked up. Most text is letters, spaces and slashes, which are
	// never candidates.
	for ; i+8 <= len(s); i += 8 {
		if m := anchorCandidates(load64(s, i)); m != 0 {
			if k, ok := firstAnchor(s, i, m); ok {
				return k
			}
		}
	}
	if i >= len(s) {
		return i
	}
	if len(s) >= 8 {
		// The last word, read where it ends with s, without the bytes before i.
		off := len(s) - 8
		m := anchorCandidates(load64(s, off)) &^ (1<<(8*(i-off)) - 1)
		if k, ok := firstAnchor(s, off, m); ok {
			return k
		}
		return len(s)
	}
	for i < len(s) && anchor[s[i]] == 0 {
		i++
	}
	return i
}

// load64 returns s[i:i+8] as a little-endian word.
func load64(s string, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// anchorCandidates flags by its high bit each byte of x that may be an anchor: every
// ASCII byte from '%' to '.' and from '0' to '_' (which holds all the ASCII anchors),
// and every byte from 0x80 (which holds the lead bytes of invisible characters). Each
// byte is flagged exactly: for an ASCII byte b, with t its low seven bits,
// (0x7F+n)-t has its high bit set just when b < n, and t+(0x7F-m) just when b > m, and
// neither term borrows from or carries into the next byte, since t <= 0x7F and n <=
// 0x80. A non-ASCII byte is flagged by its own high bit, whatever its terms say.
func anchorCandidates(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	t := x &^ hi
	punct := (lo*(0x7F+'/') - t) & (t + lo*(0x7F-'$'))    // '%' to '.'
	digitsUp := (lo*(0x7F+'`') - t) & (t + lo*(0x7F-'/')) // '0' to '_'
	return (punct | digitsUp | x) & hi
}

// firstAnchor returns the first anchor among the bytes of s from base that m flags, in
// the order of the bytes.
func firstAnchor(s string, base int, m uint64) (int, bool) {
	for ; m != 0; m &= m - 1 {
		if k := base + bits.TrailingZeros64(m)>>3; anchor[s[k]] != 0 {
			return k, true
		}
	}
	return 0, false
}

// runFrom is run from i, the first anchor of s (or len(s)).
func (sc *scanner) runFrom(i int) {
	s := sc.s
	found := len(sc.dst)
	for i < len(s) {
		switch anchor[s[i]] {
		case aDigit:
			i = sc.atDigit(i)
		case aUpperA:
			i = sc.atA(i)
		case aUpperS:
			i = sc.atS(i)
		case aUnderscore:
			i = sc.atUnderscore(i)
		case aDash:
			i = sc.atDash(i)
		case aDot:
			i = sc.atDot(i)
		case aColon:
			i = sc.atColon(i)
		case aEquals:
			sc.atAssign(i)
			i++
		case aPercent:
			sc.atPercent(i)
			i++
		case aHigh:
			if invisibleAt(s, i) > 0 {
				sc.invisible = true
			}
			i++
		default:
			i++ // not reached: runFrom is called and resumes at anchors only
		}
		i = anchorFrom(s, i)
	}
	if len(sc.dst) > found && hasKind(sc.dst[found:], AWSAccessKey) {
		sc.secretKeysNearAccessKeys(found)
	}
}

// The anchor classes of bytes.
const (
	aDigit = iota + 1
	aUpperA
	aUpperS
	aUnderscore
	aDash
	aDot
	aColon
	aEquals
	aPercent
	aHigh
)

var anchor = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] = aDigit
	}
	t['A'] = aUpperA
	t['S'] = aUpperS
	t['_'] = aUnderscore
	t['-'] = aDash
	t['.'] = aDot
	t[':'] = aColon
	t['='] = aEquals
	t['%'] = aPercent
	for _, c := range []byte{0xC2, 0xE1, 0xE2, 0xEF} {
		t[c] = aHigh
	}
	return t
}()

func hasKind(fs []Finding, k Kind) bool {
	for _, f := range fs {
		if f.Kind == k {
			return true
		}
	}
	return false
}

// tidy sorts dst[base:] and drops exact duplicates and the generic findings that a
// format finding makes redundant. It allocates nothing.
func tidy(dst []Finding, base int) []Finding {
	fs := dst[base:]
	if len(fs) < 2 {
		return dst
	}
	slices.SortFunc(fs, compareFindings)
	out := fs[:0]
	for i, f := range fs {
		if i > 0 && f == fs[i-1] {
			continue
		}
		if f.Kind.generic() && holdsFormat(fs, i) {
			continue
		}
		out = append(out, f)
	}
	return dst[:base+len(out)]
}

// compareFindings orders by Start, then longest first, then format kinds before
// generic ones, then by kind name.
func compareFindings(a, b Finding) int {
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	if c := cmp.Compare(b.End, a.End); c != 0 {
		return c
	}
	if ag, bg := a.Kind.generic(), b.Kind.generic(); ag != bg {
		if ag {
			return 1
		}
		return -1
	}
	return cmp.Compare(a.Kind, b.Kind)
}

// holdsFormat reports whether a format finding lies within the span of fs[i], in sorted
// fs: then the format kind says what the secret is (the value of API_TOKEN=ghp_… is a
// GitHub token), and the generic finding adds nothing. A format finding with the same
// span sorts just before fs[i]; the others start inside it, after it. The look ahead is
// bounded, which keeps tidy linear; past the bound, the generic finding is kept.
func holdsFormat(fs []Finding, i int) bool {
	g := fs[i]
	for j := i - 1; j >= 0 && fs[j].Start == g.Start && fs[j].End == g.End; j-- {
		if !fs[j].Kind.generic() {
			return true
		}
	}
	for j := i + 1; j < len(fs) && j <= i+64 && fs[j].Start < g.End; j++ {
		if !fs[j].Kind.generic() && fs[j].End <= g.End {
			return true
		}
	}
	return false
}
