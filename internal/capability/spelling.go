package capability

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// A path is the set of names the server's file system treats as the same
// (DESIGN.md R34). Two equivalences are modelled here, and nothing wider:
//
//   - Unicode canonical equivalence, on every volume: an NFC and an NFD
//     spelling of "café" are one path. macOS volumes compare names this
//     way, and the reference filesystem MCP server swaps a missing
//     component for a sibling with the same NFC form. [CanonPath] returns
//     NFC, and [NormPath] puts any path in it.
//   - Case, on a case-insensitive volume (macOS and Windows by default,
//     FAT, SMB shares, ext4 casefold directories). Volumes fold case in
//     different ways, so [FoldPath] folds broadly, for rules that deny:
//     full Unicode case folding (ß is ss, the Kelvin sign is k), dotless
//     and dotted I are i, and the characters HFS+ ignores in names are
//     dropped. Rules that grant match only ASCII case ([PathUnderFold] on
//     NFC forms), the one folding every such volume does: a grant never
//     reaches a name a volume may hold as another file.
//
// Compatibility forms (NFKC: the ﬁ ligature, fullwidth ／ or ａ) are other
// names to every file system, and are never folded: ／ is no separator.

// NormPath returns p in Unicode NFC, and false if p is not valid UTF-8 (no
// normal form exists for it). An ASCII or already normal p is returned as
// it is, without allocating. NFC changes no "/" and no ".", so a canonical
// path stays canonical, and the NFC of a path is that of its components.
func NormPath(p string) (string, bool) {
	if IsASCII(p) {
		return p, true
	}
	if !utf8.ValidString(p) {
		return "", false
	}
	// QuickSpanString allocates nothing, where IsNormalString does; a
	// span that stops short is only a maybe, which String settles.
	if norm.NFC.QuickSpanString(p) == len(p) {
		return p, true
	}
	return norm.NFC.String(p), true
}

// FoldPath returns the key a path is matched by on a case-insensitive
// volume by rules that deny: every spelling such a volume may treat as p
// has p's key (and some it may not: a deny errs towards more). Two
// canonical paths are under one another on such a volume if their keys
// are, component-wise ([PathUnder]); ASCII-only keys are the path with
// ASCII letters in lower case, so [PathUnderFold] compares an ASCII path
// with a key without folding it first.
//
// The key is NFC of: NFD, dotless ı and dotted İ made i, the code points
// HFS+ ignores in names dropped (joiners, direction marks, BOM), full
// Unicode case folding. It reports false if p is not valid UTF-8 or not
// clean (absolute, without empty, "." or ".." names), or if a name would
// fold to "", "." or ".." (a name of ignorables only): no key says what
// such a name is.
func FoldPath(p string) (string, bool) {
	if IsASCII(p) {
		return lowerASCII(p), true
	}
	if !utf8.ValidString(p) || !foldedClean(p) {
		return "", false
	}
	s := norm.NFD.String(p)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == 'ı' || r == 'İ':
			b.WriteByte('i')
		case hfsIgnorable(r):
		default:
			b.WriteRune(r)
		}
	}
	s = cases.Fold().String(b.String())
	// İ decomposes to I and a combining dot above: the dot goes with it.
	s = strings.ReplaceAll(s, "i\u0307", "i")
	key := lowerASCII(norm.NFC.String(s))
	if !foldedClean(key) {
		return "", false
	}
	return key, true
}

// hfsIgnorable reports whether HFS+ ignores r when it compares names (Apple
// TN1150; git's is_hfs_dotgit skips the same): zero-width joiners and
// non-joiners, directional marks and embeddings, the deprecated format
// characters and the byte-order mark.
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}

// foldedClean reports whether a path that is not "/" is clean: absolute,
// with no empty, "." or ".." name and no trailing slash.
func foldedClean(k string) bool {
	if k == "" || k[0] != '/' || k[len(k)-1] == '/' {
		return false
	}
	for _, name := range strings.Split(k[1:], "/") {
		switch name {
		case "", ".", "..":
			return false
		}
	}
	return true
}

// foldByte is c with an ASCII letter in lower case.
func foldByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// PathUnderFold is [PathUnder] with ASCII letters compared without regard
// to case, and every other byte exactly: how rules that grant meet a path
// on a case-insensitive volume, and how an ASCII path meets a [FoldPath]
// key. Both MUST be canonical, in NFC or keys.
func PathUnderFold(path, dir string) bool {
	if path == "" || dir == "" || path[0] != '/' || dir[0] != '/' {
		return false
	}
	path, dir = trimSlashes(path), trimSlashes(dir)
	if dir == "" { // the root
		return true
	}
	if len(path) < len(dir) || len(path) > len(dir) && path[len(dir)] != '/' {
		return false
	}
	for i := 0; i < len(dir); i++ {
		if a, b := path[i], dir[i]; a != b && foldByte(a) != foldByte(b) {
			return false
		}
	}
	return true
}
