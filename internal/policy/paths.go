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
	bloom  [64]uint64 // bit dirHash>>52 of each directory, in 64 words
	maxLen int        // the longest directory
}

// dirHash hashes a directory, or a path up to the end of a component,
// from its length and its last eight bytes: in a policy, directories of
// one length mostly differ at their ends ("/srv/projects/team-537").
func dirHash(d string) uint64 { return dirHashAt(d, len(d)) }

// dirHashAt is dirHash(p[:j]). It reads the last eight bytes of p[:j] as
// one number, taking bytes of p past j when j < 8 and masking them off.
func dirHashAt(p string, j int) uint64 {
	var x uint64
	switch {
	case j >= 8:
		x = load64(p[j-8:])
	case len(p) >= 8:
		x = load64(p) & (1<<(8*j) - 1)
	default:
		for k := j - 1; k >= 0; k-- {
			x = x<<8 | uint64(p[k])
		}
	}
	return mix(x^0xa0761d6478bd642f, uint64(j)^0xe7037ed1a0b428db)
}

// maybe reports whether a directory of dirHash h may be in the index.
func (x *pathIndex) maybe(h uint64) bool { return x.bloom[h>>58]&(1<<(h>>52&63)) != 0 }

func (x *pathIndex) add(dir string, r *rule) {
	if dir == "/" {
		x.root = appendOnce(x.root, r)
		return
	}
	h := dirHash(dir)
	i := x.dirs.putHashed(dir, h)
	if i == len(x.rules) {
		x.rules = append(x.rules, nil)
	}
	x.rules[i] = appendOnce(x.rules[i], r)
	x.bloom[h>>58] |= 1 << (h >> 52 & 63) // as maybe tests it
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
// returns). It reads the path eight bytes at a time, finds the slashes
// and NULs in each word, and at the end of each component checks it and
// looks the path so far up (through a Bloom filter, then the table). The
// tally of a path it refuses means nothing.
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
	start := 1 // of the current component
	for i := 0; i <= n; i += 8 {
		// s: the high bit of each byte of p[i:i+8] that ends a
		// component: a slash, or the end of p.
		var s uint64
		if rem := n - i; rem >= 8 {
			w := load64(p[i:])
			if zeroBytes(w) != 0 {
				return false
			}
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
				if zeroBytes(w)&valid != 0 {
					return false
				}
				s = zeroBytes(w^slashes) & valid
			}
			s |= 0x80 << (8 * rem)
		}
		for ; s != 0; s &= s - 1 {
			j := i + bits.TrailingZeros64(s)>>3
			if j == 0 {
				continue // the leading slash
			}
			if c := p[start:j]; c == "" || c[0] == '.' && len(c) <= 2 && c[len(c)-1] == '.' {
				return false
			}
			if j <= x.maxLen {
				if h := dirHashAt(p, j); x.maybe(h) {
					x.visit(e, p[:j], h)
				}
			}
			start = j + 1
		}
	}
	return true
}

// visit considers the rules of directory d, whose dirHash is h, if it has
// any.
func (x *pathIndex) visit(e *evaluator, d string, h uint64) {
	if k := x.dirs.getHashed(d, h); k >= 0 {
		e.considerAll(x.rules[k], donePath)
	}
}
