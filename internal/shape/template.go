package shape

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Syntax is the template language of a server that expands templates in its inputs.
// The zero Syntax is [Mustache]. A Syntax value other than the constants below
// neutralises like [Jinja], the larger set, so a bad value fails closed.
type Syntax uint8

const (
	// Mustache is the "{{ }}" family: Mustache, Handlebars (with its "{{{raw}}}" and
	// "{{{{raw block}}}}" forms), Go's text/template with its default delimiters,
	// Angular and Vue interpolation, and Liquid output. No "{{" and no "}}" survives.
	Mustache Syntax = iota
	// Jinja is Mustache plus statements "{% %}" and comments "{# #}": Jinja2, Django,
	// Twig, Nunjucks, and Liquid tags. No "{{", "}}", "{%", "%}", "{#" or "#}"
	// survives.
	Jinja
)

// ParseSyntax reads a Syntax by the name String gives it: "mustache" or "jinja".
func ParseSyntax(name string) (Syntax, error) {
	switch name {
	case "mustache":
		return Mustache, nil
	case "jinja":
		return Jinja, nil
	}
	return Mustache, fmt.Errorf("unknown template syntax %q: want mustache or jinja", name)
}

// String returns "mustache" or "jinja".
func (x Syntax) String() string {
	if x == Mustache {
		return "mustache"
	}
	return "jinja"
}

// Neutralise applies [Mustache.Neutralise] to s.
func Neutralise(s string) string { return Mustache.Neutralise(s) }

// Neutralise returns s with a space put between every two characters that together
// open or close a template of syntax x, so that the result holds no delimiter at all:
// "{{x}}" becomes "{ {x} }", "{{{x}}}" becomes "{ { {x} } }", a lone "}}" becomes
// "} }". Nothing else changes: single braces (`{"a":1}`, "f(x){return}") and text
// that already holds no delimiter ("{ {x} }") come back as they were, without
// allocating. Neutralise is idempotent, and its result holds no delimiter for any
// input, valid UTF-8 or not; the proof is in the comment on split.
//
// Engines compare ASCII delimiters byte for byte: none of the syntaxes above reads the
// fullwidth "｛｛" as "{{". Neutralise still splits the characters that Unicode
// compatibility normalisation (NFKC or NFKD) turns into a delimiter character
// (fullwidth ｛ ｝ ％ ＃, small ﹛ ﹜ ﹪ ﹟, vertical ︷ ︸), since a server may
// normalise its input before expanding it, and a space costs the text nothing. For the
// same reason it looks through the characters that a cleaning step may delete before
// the expansion: control characters other than whitespace, format characters (zero
// width space, soft hyphen, byte-order mark, bidi controls), combining marks, default
// ignorable code points, and bytes that are not UTF-8. "{\u200b{" becomes
// "{\u200b {", so deleting the zero width space leaves "{ {".
//
// It does not cover a server that decodes its input (HTML entities, percent or
// backslash escapes) before expanding it, a server configured with other delimiters
// (Mustache's "{{=<% %>=}}" needs a "{{" and is split, but a server's own custom
// delimiters are not known here), or a server that strips whitespace before
// expanding.
func (x Syntax) Neutralise(s string) string {
	i := x.split(s, 0)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/8 + 8)
	done := 0
	for i >= 0 {
		b.WriteString(s[done:i])
		b.WriteByte(' ')
		done = i
		i = x.split(s, i)
	}
	b.WriteString(s[done:])
	return b.String()
}

// needs reports whether Neutralise would change s.
func (x Syntax) needs(s string) bool { return x.split(s, 0) >= 0 }

// split returns the index of the first character at or after from that must get a
// space before it, or -1 if there is none. The character before from is taken to be a
// plain one: it is the start of s, or the space Neutralise just wrote.
//
// The proof that Neutralise leaves no delimiter. Call a character significant unless
// split skips it (class skipped), and let S(t) be t with its insignificant characters
// deleted and its compatibility forms folded to ASCII. split compares each significant
// character with the significant character before it, so it walks exactly the pairs
// that are adjacent in S(s), and Neutralise puts a space before the second character of
// each pair that forms a delimiter (x.splits). Take two characters adjacent in S of the
// result. Either one of them is a space Neutralise wrote, and a space is in no
// delimiter; or both come from s with no space between them, so they were adjacent in
// S(s) and split found they form no delimiter. Hence S(result) holds no delimiter, and
// neither does the result itself: the characters of a delimiter (braces, '%', '#' and
// their compatibility forms) are all significant, so two of them adjacent in the
// result are adjacent in S(result) too. Idempotence follows: split finds nothing in a
// string whose S holds no delimiter, so Neutralise returns it unchanged.
//
// A one-pass replace-all of "{{" by "{ {" breaks this argument at "{{{": it never
// compares the brace it resumes at with the brace just before it, which is why split
// compares every adjacent pair, including the one that starts at a brace it has
// already split.
func (x Syntax) split(s string, from int) int {
	if !mayHoldBrace(s[from:]) {
		return -1 // every delimiter has a brace in it
	}
	prev := plain
	for i := from; i < len(s); {
		if prev == plain {
			// Until a delimiter character, every character leaves prev plain (a plain
			// one sets it, a skipped one keeps it) and none can split, since a
			// delimiter starts with a delimiter character: jump to the next byte that
			// may start one. Those bytes are never inside a UTF-8 sequence.
			for i < len(s) && !delimiterByte[s[i]] {
				i++
			}
			if i == len(s) {
				break
			}
		}
		c, n := classify(s, i)
		if c != skipped {
			if x.splits(prev, c) {
				return i
			}
			prev = c
		}
		i += n
	}
	return -1
}

// splits reports whether the significant characters a, b, in that order, open or
// close a template of syntax x.
func (x Syntax) splits(a, b class) bool {
	if a == open && b == open || a == close && b == close {
		return true // "{{" and "}}", in every syntax
	}
	if x == Mustache {
		return false
	}
	return a == open && (b == percent || b == hash) || // "{%" and "{#"
		b == close && (a == percent || a == hash) // "%}" and "#}"
}

// class is what a character is to split.
type class uint8

const (
	plain   class = iota // in no delimiter: letters, digits, whitespace, the space split writes
	skipped              // deleted by some cleaning step; split looks through it
	open                 // '{' or a compatibility form of it
	close                // '}' or a compatibility form of it
	percent              // '%' or a compatibility form of it (Jinja only)
	hash                 // '#' or a compatibility form of it (Jinja only)
)

// mayHoldBrace reports whether s has a byte that can start a brace: '{', '}', or 0xEF,
// the first byte of every compatibility form of a brace (U+FE37..U+FF5D). It is the
// fast path that lets plain text through without decoding it.
func mayHoldBrace(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		b := s[i : i+8] // one load, once the compiler sees eight bytes
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		if zeroBytes(w^('{'*bytes01))|zeroBytes(w^('}'*bytes01))|zeroBytes(w^(0xEF*bytes01)) != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		switch s[i] {
		case '{', '}', 0xEF:
			return true
		}
	}
	return false
}

// bytes01 has each byte one; bytes7f the low seven bits of each byte.
const (
	bytes01 = 0x0101010101010101
	bytes7f = 0x7f7f7f7f7f7f7f7f
)

// zeroBytes sets the high bit of each zero byte of w, and only those.
func zeroBytes(w uint64) uint64 { return ^((w&bytes7f + bytes7f) | w | bytes7f) }

// delimiterByte marks the bytes that may start a delimiter character: the ASCII ones,
// and 0xEF, the first byte of each of their compatibility forms.
var delimiterByte = [256]bool{'{': true, '}': true, '%': true, '#': true, 0xEF: true}

// classify returns the class of the character at s[i] and its length in bytes. A
// byte that does not start valid UTF-8 is one skipped character of length 1.
func classify(s string, i int) (class, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	switch r {
	case '\uFF5B', '\uFE5B', '\uFE37': // fullwidth, small, vertical left curly bracket
		return open, n
	case '\uFF5D', '\uFE5C', '\uFE38':
		return close, n
	case '\uFF05', '\uFE6A': // fullwidth, small percent sign
		return percent, n
	case '\uFF03', '\uFE5F': // fullwidth, small number sign
		return hash, n
	}
	if r == utf8.RuneError && n == 1 || ignorable(r) {
		return skipped, n
	}
	return plain, n
}

// asciiClass is the class of each ASCII character: the delimiter characters, the
// control characters other than whitespace (skipped), and plain.
var asciiClass = func() (t [utf8.RuneSelf]class) {
	for c := range t {
		if (c < 0x20 || c == 0x7F) && !isASCIISpace(byte(c)) {
			t[c] = skipped
		}
	}
	t['{'], t['}'], t['%'], t['#'] = open, close, percent, hash
	return t
}()

func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// ignorable reports whether r is a non-ASCII character that a cleaning step may
// delete: a C1 control that is not whitespace (U+0085 is), a format character, a
// combining mark or a default ignorable code point. Counting too many characters as
// ignorable costs only a space; too few, a delimiter.
func ignorable(r rune) bool {
	if unicode.IsSpace(r) {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.M, unicode.Other_Default_Ignorable_Code_Point)
}
