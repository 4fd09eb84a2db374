package policy

import "math/bits"

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
}

// endBit summarises a directory of j bytes whose last byte is c, so that
// most prefixes of a path that are no directory cost no hashing.
func endBit(j int, c byte) uint { return uint(j*131+int(c)) & 1023 }

// maybe reports whether p[:j] may be a directory of the index.
func (x *pathIndex) maybe(p string, j int) bool {
	b := endBit(j, p[j-1])
	return x.ends[b/64]&(1<<(b%64)) != 0
}

// dirWordsAt returns the words of the directory p[:j] (strTable): its
// last and first eight bytes, read as numbers with the bytes of p past j
// masked off when j < 8.
func dirWordsAt(p string, j int) (a, b uint64) {
	switch {
	case j >= 8:
		return load64(p[j-8:]), load64(p)
	case len(p) >= 8:
		a = load64(p) & (1<<(8*j) - 1)
	default:
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

func (x *pathIndex) add(dir string, r *rule) {
	if dir == "/" {
		x.root = appendOnce(x.root, r)
		return
	}
	wa, wb := dirWordsAt(dir, len(dir))
	i := x.dirs.putWords(dir, wa, wb, dirHash(wa, len(dir)))
	if i == len(x.rules) {
		x.rules = append(x.rules, nil)
	}
	x.rules[i] = appendOnce(x.rules[i], r)
	b := endBit(len(dir), dir[len(dir)-1])
	x.ends[b/64] |= 1 << (b % 64)
	x.maxLen = max(x.maxLen, len(dir))
}

// SWAR constants: a byte of ones, the low seven bits of each byte, and
// each byte a slash.
const (
	bytes01 = 0x0101010101010101
	bytes7f = 0x7f7f7f7f7f7f7f7f
	slashes = '/' * bytes01
)

// zeroBytes sets the high bit of each zero byte of w, and only those.
func zeroBytes(w uint64) uint64 { return ^((w&bytes7f + bytes7f) | w | bytes7f) }

// walk considers the rules of the directories e.cap.Path is under, and
// reports whether the path is canonical: absolute, without NUL, and
// without empty, "." or ".." components (what capability.CanonPath
// returns). It reads the path eight bytes at a time, finds the slashes in
// each word, and at the end of each component checks it and looks the path
// so far up (through a filter, then the table). The tally of a path it
// refuses means nothing.
func (x *pathIndex) walk(e *evaluator) bool {
	p := e.cap.Path
	n := len(p)
	if n == 0 || p[0] != '/' {
		return false
	}
	if len(x.root) > 0 {
		e.considerAll(x.root, donePath)
	}
	if n == 1 {
		return true
	}
	start := 1            // of the current component
	skip := ^uint64(0x80) // the leading slash ends no component
	var nul uint64        // the high bit of each NUL byte seen
	for i := 0; i <= n; i += 8 {
		// s: the high bit of each byte of p[i:i+8] that ends a
		// component: a slash, or the end of p.
		var s uint64
		if rem := n - i; rem >= 8 {
			w := load64(p[i:])
			nul |= zeroBytes(w)
			s = zeroBytes(w ^ slashes)
		} else {
			if rem > 0 {
				var w uint64
				if n >= 8 {
					w = load64(p[n-8:]) >> (8 * (8 - rem))
				} else {
					for k := n - 1; k >= i; k-- {
						w = w<<8 | uint64(p[k])
					}
				}
				valid := uint64(1)<<(8*rem) - 1
				nul |= zeroBytes(w) & valid
				s = zeroBytes(w^slashes) & valid
			}
			s |= 0x80 << (8 * rem)
		}
		for s &= skip; s != 0; s &= s - 1 {
			j := i + bits.TrailingZeros64(s)>>3
			if j == start || p[start] == '.' && j-start <= 2 && p[j-1] == '.' {
				return false // an empty, "." or ".." component
			}
			if j <= x.maxLen && x.maybe(p, j) {
				x.visit(e, p, j)
			}
			start = j + 1
		}
		skip = ^uint64(0)
	}
	return nul == 0
}

// visit considers the rules of directory p[:j], if it has any.
func (x *pathIndex) visit(e *evaluator, p string, j int) {
	a, b := dirWordsAt(p, j)
	if k := x.dirs.find(p[:j], a, b, dirHash(a, j)); k >= 0 {
		e.considerAll(x.rules[k], donePath)
	}
}
