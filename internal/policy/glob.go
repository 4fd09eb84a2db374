package policy

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// glob is a name pattern: `*` matches any run of characters, `?` one
// character, and `\` makes the next character literal. In a program
// pattern (slash set) neither `*` nor `?` matches "/", as in path.Match,
// so "/usr/bin/*" names the programs in /usr/bin and nothing below it.
// Character classes are not supported: `[` must be escaped.
type glob struct {
	pattern string
	literal string // the unescaped pattern when it has no wildcard
	wild    bool
	slash   bool
	// segs are the literal runs between the stars of a pattern without
	// `?`, which match without backtracking.
	segs []string
	// prefix is set for a pattern that is a literal and one trailing
	// star, in a name (not a program) pattern: it matches what starts
	// with segs[0].
	prefix bool
}

func compileGlob(p string, slash bool) (glob, error) {
	if p == "" {
		return glob{}, errors.New("empty pattern")
	}
	if !utf8.ValidString(p) {
		return glob{}, errors.New("pattern is not valid UTF-8")
	}
	var lit strings.Builder
	var segs []string
	wild, question := false, false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\':
			if i+1 == len(p) {
				return glob{}, errors.New(`pattern ends in "\"`)
			}
			i++
			lit.WriteByte(p[i])
		case '*':
			wild = true
			segs = append(segs, lit.String())
			lit.Reset()
		case '?':
			wild, question = true, true
		case '[', ']':
			return glob{}, errors.New(`character classes ([...]) are not supported; write \[ for a literal bracket`)
		default:
			lit.WriteByte(c)
		}
	}
	g := glob{pattern: p, wild: wild, slash: slash}
	switch {
	case !wild:
		g.literal = lit.String()
	case !question:
		g.segs = append(segs, lit.String())
		g.prefix = !slash && len(g.segs) == 2 && g.segs[1] == ""
	}
	return g, nil
}

// match reports whether s matches the pattern. It does not allocate, and
// takes time O(len(pattern)·len(s)) at worst.
func (g *glob) match(s string) bool {
	if !g.wild {
		return s == g.literal
	}
	if g.prefix {
		return len(s) >= len(g.segs[0]) && s[:len(g.segs[0])] == g.segs[0]
	}
	if g.segs != nil {
		return g.matchSegs(s)
	}
	p := g.pattern
	pi, si := 0, 0
	star, starS := -1, 0 // the last `*` in p and where in s it resumes
	for si < len(s) {
		if pi < len(p) {
			switch p[pi] {
			case '*':
				star, starS = pi, si
				pi++
				continue
			case '?':
				r, n := utf8.DecodeRuneInString(s[si:])
				if !(g.slash && r == '/') {
					pi++
					si += n
					continue
				}
			case '\\':
				if pi+1 < len(p) && p[pi+1] == s[si] {
					pi += 2
					si++
					continue
				}
			default:
				if p[pi] == s[si] {
					pi++
					si++
					continue
				}
			}
		}
		// Mismatch: let the last star swallow one more character.
		if star < 0 || (g.slash && s[starS] == '/') {
			return false
		}
		_, n := utf8.DecodeRuneInString(s[starS:])
		starS += n
		pi, si = star+1, starS
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchSegs matches a pattern of literals and stars: the first literal is a
// prefix, the last a suffix, and the others are found leftmost in order,
// which finds a match whenever there is one.
func (g *glob) matchSegs(s string) bool {
	first, last := g.segs[0], g.segs[len(g.segs)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	mid := s[len(first) : len(s)-len(last)]
	for _, seg := range g.segs[1 : len(g.segs)-1] {
		i := strings.Index(mid, seg)
		if i < 0 || g.slash && strings.IndexByte(mid[:i], '/') >= 0 {
			return false
		}
		mid = mid[i+len(seg):]
	}
	return !g.slash || strings.IndexByte(mid, '/') < 0
}

// globs is an any-of list of patterns; an empty list matches anything.
type globs []glob

func (gs globs) match(s string) bool {
	if len(gs) == 0 {
		return true
	}
	for i := range gs {
		if gs[i].match(s) {
			return true
		}
	}
	return false
}
