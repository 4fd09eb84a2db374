package policy

import (
	"math/bits"
	"slices"
	"strings"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// pathIndex holds the rules of one fs kind by their path_under directories.
// A path is under a directory iff the directory is the path up to the end
// of one of its components, so Decide finds the rules for a path by
// looking up each of its leading runs of components in one table, as it
// splits the path and checks that it is canonical.
type pathIndex struct {
	root   []cand   // rules under "/"
	dirs   strTable // every other directory → its index in rules, by dirHash
	rules  [][]cand
	ends   [16]uint64 // bit endBit of each directory
	maxLen int        // the longest directory
	// fold says the directories are fold keys (capability.FoldPath): a
	// path's ASCII letters are looked up in lower case.
	fold bool
	// below holds the deny and ask rules by their directories but "/",
	// sorted by directory, for capabilities on a whole subtree (under):
	// the directories strictly under a path p are the run of those that
	// start with p and a slash.
	below []belowDir
}

// belowDir is a directory of the index and its deny and ask rules.
type belowDir struct {
	dir string
	cs  []cand
}

// endBit summarises a directory of j bytes whose last byte is c, so that
// most prefixes of a path that are no directory cost no hashing.
func endBit(j int, c byte) uint { return uint(j*131+int(c)) & 1023 }

// maybe reports whether p[:j] may be a directory of the index.
func (x *pathIndex) maybe(p string, j int) bool {
	c := p[j-1]
	if x.fold && 'A' <= c && c <= 'Z' {
		c += 'a' - 'A'
	}
	b := endBit(j, c)
	return x.ends[b/64]&(1<<(b%64)) != 0
}

// done is what the index checked of the candidates it finds: in an index
// of fold keys, a grant's path is left to check (its candidates say so),
// and a deny's candidates need no check of the path whatever done says.
func (x *pathIndex) done() done {
	if x.fold {
		return 0
	}
	return donePath
}

// foldWord is w with the ASCII upper-case letters of its bytes in lower
// case: each byte that is one, and only those, gains 0x20.
func foldWord(w uint64) uint64 {
	h := w & bytes7f
	ge := h + (0x80-'A')*bytes01 // the high bit of bytes from 'A'
	gt := h + (0x80-'Z'-1)*bytes01
	return w | (ge&^gt&^w&bytes80)>>2
}

// equalFold reports whether a, a fold key, equals b in ASCII case.
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	i := 0
	for ; i+8 <= len(a); i += 8 {
		if load64(a[i:]) != foldWord(load64(b[i:])) {
			return false
		}
	}
	for ; i < len(a); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if a[i] != c {
			return false
		}
	}
	return true
}

// dirWordsAt returns the words of the directory p[:j] (strTable): its
// last and first eight bytes, read as numbers with the bytes of p past j
// masked off when j < 8.
func dirWordsAt(p string, j int) (a, b uint64) {
	if j >= 8 {
		return load64(p[j-8:]), load64(p)
	}
	return shortDirWords(p, j)
}

func shortDirWords(p string, j int) (a, b uint64) {
	if len(p) >= 8 {
		a = load64(p) & (1<<(8*j) - 1)
	} else {
		for k := j - 1; k >= 0; k-- {
			a = a<<8 | uint64(p[k])
		}
	}
	return a, a
}

// dirHash hashes a directory of j bytes from its last eight: in a policy,
// directories of one length mostly differ at their ends
// ("/srv/projects/team-537").
func dirHash(a uint64, j int) uint64 { return mix(a^0xa0761d6478bd642f, uint64(j)^0xe7037ed1a0b428db) }

// add lists r, a rule for capabilities of kind k, under dir, as found by
// the matchers d.
func (x *pathIndex) add(dir string, r *rule, k capability.Kind, d done) {
	if dir == "/" {
		x.root = appendOnce(x.root, r, k, d)
		return
	}
	wa, wb := dirWordsAt(dir, len(dir))
	i := x.dirs.putWords(dir, wa, wb, dirHash(wa, len(dir)))
	if i == len(x.rules) {
		x.rules = append(x.rules, nil)
	}
	x.rules[i] = appendOnce(x.rules[i], r, k, d)
	b := endBit(len(dir), dir[len(dir)-1])
	x.ends[b/64] |= 1 << (b % 64)
	x.maxLen = max(x.maxLen, len(dir))
	if r.effect != Allow {
		x.below = append(x.below, belowDir{dir: dir, cs: []cand{candOf(r, k, d)}})
	}
}

// finish sorts below and merges the entries of one directory, keeping
// its rules in the order they were added.
func (x *pathIndex) finish() {
	slices.SortStableFunc(x.below, func(a, b belowDir) int { return strings.Compare(a.dir, b.dir) })
	out := x.below[:0]
	for _, b := range x.below {
		if n := len(out); n > 0 && out[n-1].dir == b.dir {
			if last := &out[n-1]; last.cs[len(last.cs)-1].r != b.cs[0].r {
				last.cs = append(last.cs, b.cs[0])
			}
			continue
		}
		out = append(out, b)
	}
	x.below = slices.Clip(out)
}

// under considers the deny and ask rules of the directories strictly under
// the path e.path, which walk MUST have found canonical and put in the
// forms the index holds (its key: NFC, or in an index of fold keys the
// path's key or an ASCII path in any case): a capability on the path's
// whole subtree meets them (capability.Capability.Subtree). It is a
// binary search and a scan of the directories it finds, and is reached
// only by such capabilities. In an index of fold keys a grant found here
// is left to check in ASCII case (rule.reachesBelow), as in walk.
func (x *pathIndex) under(e *evaluator) {
	p := e.path.key
	bs := x.below
	if p != "/" {
		// The first directory not before p + "/", compared without
		// building it.
		lo, hi := 0, len(bs)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if x.beforeDirOf(bs[m].dir, p) {
				lo = m + 1
			} else {
				hi = m
			}
		}
		bs = bs[lo:]
	}
	for i := range bs {
		d := bs[i].dir
		if p != "/" && !(len(d) > len(p) && d[len(p)] == '/' && x.samePrefix(d, p)) {
			return
		}
		e.considerAll(bs[i].cs, x.done())
	}
}

// samePrefix reports whether d starts with p, in ASCII case in an index of
// fold keys.
func (x *pathIndex) samePrefix(d, p string) bool {
	if x.fold {
		return equalFold(d[:len(p)], p)
	}
	return d[:len(p)] == p
}

// beforeDirOf reports whether d, a directory of the index, sorts before
// p + "/"; in an index of fold keys, with p's ASCII letters in lower
// case, as the keys have theirs.
func (x *pathIndex) beforeDirOf(d, p string) bool {
	n := min(len(d), len(p))
	if x.fold {
		for i := range n {
			if a, b := d[i], foldByte(p[i]); a != b {
				return a < b
			}
		}
	} else if c := strings.Compare(d[:n], p[:n]); c != 0 {
		return c < 0
	}
	if len(d) <= len(p) {
		return true // d is p or a prefix of it
	}
	return d[len(p)] < '/'
}

// foldByte is c with an ASCII letter in lower case.
func foldByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// SWAR constants: a byte of ones, the low seven bits of each byte, the
// high bit of each, and each byte a slash, a dot or an 'a'.
const (
	bytes01 = 0x0101010101010101
	bytes7f = 0x7f7f7f7f7f7f7f7f
	bytes80 = 0x8080808080808080
	slashes = '/' * bytes01
	dots    = '.' * bytes01
	letters = 'a' * bytes01
)

// zeroBytes sets the high bit of each zero byte of w, and only those.
func zeroBytes(w uint64) uint64 { return ^((w&bytes7f + bytes7f) | w | bytes7f) }

// slashesOf sets the high bit of each slash of w, and of each dot that
// follows a byte it sets: w ^ slashes has a zero byte at a slash and a
// one at a dot, which the borrow of the subtraction makes look zero after
// a zero. So the bits are exact in a word where no bit follows another.
func slashesOf(w uint64) uint64 {
	x := w ^ slashes
	return (x - bytes01) &^ x & bytes80
}

// packBits gathers the high bit of each byte of m into the low byte.
func packBits(m uint64) uint64 { return (m >> 7) * 0x0102040810204080 >> 56 }

// wordAt returns the eight bytes of p from i, which MUST be less than
// len(p), as a little-endian number; past the end of p, the bytes are
// letters.
func wordAt(p string, i int) uint64 {
	n := len(p)
	rem := n - i
	if rem >= 8 {
		return load64(p[i:])
	}
	var w uint64
	if n >= 8 {
		w = load64(p[n-8:]) >> (8 * (8 - rem))
	} else {
		for k := n - 1; k >= i; k-- {
			w = w<<8 | uint64(p[k])
		}
	}
	return w | letters&^(1<<(8*rem)-1)
}

// scanPath reads p eight bytes at a time and returns the slashes of its
// first 64 bytes as bits (bit j for p[j]), whether the bits are exact
// and p has no NUL and no slash or dot after a slash: no component that
// may be empty, "." or "..", and whether p is ASCII. It calls nothing (but for a path of fewer
// than eight bytes), so that its loop keeps its values in registers.
func scanPath(p string) (found uint64, plain, ascii bool) {
	var odd, hi uint64
	// Words seven bytes apart overlap by a byte, so that every pair of
	// bytes is in one word. The word at i notes its slashes at bit i:
	// at = 1 << i, which the shifts drop past bit 63.
	q, at := p, uint64(1)
	for ; len(q) >= 8; q, at = q[7:], at<<7 {
		w := load64(q)
		s := slashesOf(w)
		odd |= (w-bytes01)&^w | s&(s<<8)
		hi |= w
		found |= packBits(s) * at
	}
	if len(q) > 1 || len(p) < 8 {
		// The last eight bytes, which overlap the words read: a bit
		// found twice is one bit.
		var w uint64
		i := 0
		if len(p) >= 8 {
			w, i = load64(p[len(p)-8:]), len(p)-8
		} else {
			w = wordAt(p, 0)
		}
		s := slashesOf(w)
		odd |= (w-bytes01)&^w | s&(s<<8)
		hi |= w
		if i < 64 {
			found |= packBits(s) << i
		}
	}
	return found, odd&bytes80 == 0, hi&bytes80 == 0
}

// walk considers the rules of the directories e.cap.Path is under, and
// reports whether the path is canonical: absolute, without NUL, and
// without empty, "." or ".." components (what capability.CanonPath
// returns). The tally of a path it refuses means nothing.
//
// A path is under a directory iff the directory is the path up to a
// slash or its end. walk finds the slashes (scanPath), then looks up the
// path up to each slash, up to the longest directory of the index
// (through a filter, then the table), and the whole path. A path with a
// NUL, or a slash or a dot after a slash, goes to walkExact instead.
func (x *pathIndex) walk(e *evaluator) bool {
	p := e.path.key
	n := len(p)
	if n == 0 || p[0] != '/' {
		return false
	}
	if n == 1 {
		if len(x.root) > 0 {
			e.considerAll(x.root, x.done())
		}
		return true
	}
	found, plain, ascii := scanPath(p)
	if !ascii && !e.path.formed {
		// Other spellings of the path may be other bytes: walk its
		// forms (formsOf) instead. An ASCII path is its own.
		var ok bool
		if e.path, ok = formsOf(p, false); !ok {
			return false
		}
		return x.walk(e)
	}
	if len(x.root) > 0 {
		e.considerAll(x.root, x.done())
	}
	if !plain || p[n-1] == '/' {
		return x.walkExact(e, p)
	}
	maxLen := x.maxLen
	if n <= maxLen && x.maybe(p, n) {
		x.visit(e, p, n)
	}
	if maxLen < 63 {
		found &= 2<<maxLen - 1
	}
	for found &= found - 1; found != 0; found &= found - 1 { // the leading slash ends no directory
		if j := bits.TrailingZeros64(found); x.maybe(p, j) {
			x.visit(e, p, j)
		}
	}
	if maxLen >= 64 && n > 64 {
		x.visitFrom(e, p, 64)
	}
	return true
}

// visitFrom looks up the directories that end at a slash from p[i] on, i
// a multiple of eight: walk's lookups past its mask. p MUST be canonical,
// so that slashesOf is exact.
func (x *pathIndex) visitFrom(e *evaluator, p string, i int) {
	for ; i < len(p) && i <= x.maxLen; i += 8 {
		for s := slashesOf(wordAt(p, i)); s != 0; s &= s - 1 {
			if j := i + bits.TrailingZeros64(s)>>3; j <= x.maxLen && x.maybe(p, j) {
				x.visit(e, p, j)
			}
		}
	}
}

// walkExact is walk for a path with a NUL, a trailing slash or a
// component that starts with a slash or a dot (a dot file, say, or a path
// walk refuses). It finds the slashes and dots of each word exactly, and
// checks each component that starts with either.
func (x *pathIndex) walkExact(e *evaluator, p string) bool {
	n := len(p)
	var carry uint64      // the high bit of byte 0 if the byte before the word is a slash
	ends := ^uint64(0x80) // the leading slash ends no directory
	for i := 0; i < n; i += 8 {
		w := wordAt(p, i)
		if zeroBytes(w) != 0 {
			return false // a NUL
		}
		slash := zeroBytes(w ^ slashes)
		after := slash<<8 | carry // the bytes that follow a slash
		carry = slash >> 56
		for odd := (slash | zeroBytes(w^dots)) & after; odd != 0; odd &= odd - 1 {
			k := i + bits.TrailingZeros64(odd)>>3
			// p[k] is a slash or a dot after a slash: the component is
			// empty, ".", ".." or a name that starts with a dot.
			if p[k] == '/' || k+1 == n || p[k+1] == '/' || p[k+1] == '.' && (k+2 == n || p[k+2] == '/') {
				return false
			}
		}
		if i > x.maxLen {
			continue
		}
		for s := slash & ends; s != 0; s &= s - 1 {
			if j := i + bits.TrailingZeros64(s)>>3; j <= x.maxLen && x.maybe(p, j) {
				x.visit(e, p, j)
			}
		}
		ends = ^uint64(0)
	}
	if n <= x.maxLen && x.maybe(p, n) {
		x.visit(e, p, n)
	}
	return p[n-1] != '/'
}

// visit considers the rules of directory p[:j], if it has any.
func (x *pathIndex) visit(e *evaluator, p string, j int) {
	var a, b uint64
	if j >= 8 {
		a, b = load64(p[j-8:]), load64(p)
	} else {
		a, b = shortDirWords(p, j)
	}
	// x.dirs.find, written out.
	t := &x.dirs
	if t.slots == nil {
		return
	}
	if x.fold {
		x.visitFold(e, p, j, foldWord(a), foldWord(b))
		return
	}
	for k := dirHash(a, j) & t.mask; ; k = (k + 1) & t.mask {
		s := &t.slots[k]
		if s.val == 0 {
			return
		}
		if s.a == a && s.b == b && len(s.key) == j &&
			(j <= 16 || j <= 24 && load64(s.key[8:]) == load64(p[8:]) || j > 24 && s.key == p[:j]) {
			e.considerAll(x.rules[s.val-1], donePath)
			return
		}
	}
}

// visitFold is visit in an index of fold keys, with the words a and b of
// p[:j] folded: the rest of p is compared in ASCII case.
func (x *pathIndex) visitFold(e *evaluator, p string, j int, a, b uint64) {
	t := &x.dirs
	for k := dirHash(a, j) & t.mask; ; k = (k + 1) & t.mask {
		s := &t.slots[k]
		if s.val == 0 {
			return
		}
		if s.a == a && s.b == b && len(s.key) == j && (j <= 16 || equalFold(s.key, p[:j])) {
			e.considerAll(x.rules[s.val-1], 0)
			return
		}
	}
}
