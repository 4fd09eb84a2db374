package args

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Doc is a decoded arguments document. Its zero value is ready to use, and it is reusable:
// [Doc.Decode] resets it, so a Doc kept per worker decodes in the steady state with one
// allocation (the private copy of the input) plus one more when some string had escapes.
//
// Values handed out before a Decode go stale at that Decode and then report [Invalid].
// Strings returned by [Value.Str] and [Value.Raw] never change: they stay valid after
// the Doc is reused. A Doc is not safe for concurrent Decode; concurrent reads are fine.
type Doc struct {
	src    string  // private copy of the input
	esc    string  // unescaped text of strings that held escapes
	buf    []byte  // esc under construction during a Decode
	nodes  []node  // values and object keys in document order; nodes[0] is the root
	kids   []int32 // children of containers: elements, or key and value pairs
	stack  []int32 // children of the containers still open
	frames []frame // containers still open, innermost last
	objs   []int32 // objects with two members or more, for the duplicate key check
	gen    uint32  // bumped by each Decode, so older Values go stale
	// building is set while a Builder writes d: its objects are not checked yet.
	building bool
	values   int // the values of the document, as MaxElements counts them
	// What Decode saw in the source text of strings and keys, for StringsMayHold:
	// known is set by a Decode that succeeded (a Builder's document leaves it
	// unset), braces when some string or key held '{' or '}', high when one held
	// a byte of 0x80 or more. (Escaped text is not looked at: d.buf tells.)
	strKnown, strBraces, strHigh bool
	lim                          limits // the limits of the Decode or Builder that wrote the document
	borrowed                     bool   // src is DecodeBorrowed's input, not a private copy
}

// node is one value or object key. Spans are offsets; int32 is enough under MaxBytes.
type node struct {
	start, end int32 // source text: src[start:end]
	a, b       int32 // String: text at [a:b] of src or esc; Array, Object: kids[a:], b children
	kind       Kind
	esc        bool // a String whose text is in esc
}

type frame struct {
	node int32 // the open container
	base int32 // its children start at stack[base]
}

// Decode parses data as one tool call's arguments, replacing what d held. The input must
// be strict JSON (RFC 8259) whose top-level value is an object: MCP arguments are a
// named-argument map, so an array, scalar or empty input is an error (a caller with
// absent arguments passes {}).
//
// Strict means: no byte-order mark, comments, single quotes, trailing commas, NaN,
// Infinity, hex, leading zeros, "+1", "1.", ".5" or "1e"; whitespace is only space, tab,
// CR and LF; nothing but whitespace after the object; strings are valid UTF-8 with no
// unescaped control characters; a \u escape of a UTF-16 surrogate must be a high one
// directly followed by a low one; and no object holds the same key twice, comparing
// keys after unescaping. Each of these is a place where JSON parsers disagree, and a
// call that two parsers read differently is refused rather than guessed at.
//
// Numbers are kept as their source text, without rounding. Decode reads data only
// during the call: d keeps a private copy. lim may be nil for the defaults.
//
// The error is a *[SyntaxError] for malformed input, or wraps [ErrLimit] for an input
// over a limit; both name the byte offset. After an error, d holds no document.
func (d *Doc) Decode(data []byte, lim *Limits) error {
	return d.decode(data, lim, false)
}

// DecodeBorrowed is [Doc.Decode] without the private copy: d reads data itself, and
// strings read from d's Values share its memory, until [Doc.Own] makes the copy. data
// MUST NOT change while d holds the document unowned. It is for a caller that often
// replaces the document before anything read from it outlives the call (a Builder's
// copy, BeginAppend's text), and so would copy the input for nothing.
func (d *Doc) DecodeBorrowed(data []byte, lim *Limits) error {
	return d.decode(data, lim, true)
}

// Own gives d a private copy of a text DecodeBorrowed left it reading in place. Values
// taken before stay valid; strings read from them before still share the input.
func (d *Doc) Own() {
	if d.borrowed {
		d.src, d.borrowed = string([]byte(d.src)), false
	}
}

// OwnIn is [Doc.Own] copying the text into *buf's storage (grown as needed, and
// left in *buf) rather than a new allocation: d then reads *buf, which the caller
// MUST NOT modify or reuse while d holds the document or strings read from it are in
// use.
func (d *Doc) OwnIn(buf *[]byte) {
	if d.borrowed {
		*buf = append((*buf)[:0], d.src...)
		d.src, d.borrowed = unsafe.String(unsafe.SliceData(*buf), len(*buf)), false
	}
}

func (d *Doc) decode(data []byte, lim *Limits, borrow bool) error {
	d.gen++
	d.reset()
	d.building = false
	l := lim.resolve()
	if len(data) == 0 {
		return syntaxError(0, "empty input; arguments must be a JSON object")
	}
	if len(data) > l.maxBytes {
		return limitError(l.maxBytes, "input of %d bytes is over MaxBytes %d", len(data), l.maxBytes)
	}
	if borrow {
		d.src, d.borrowed = unsafe.String(unsafe.SliceData(data), len(data)), true
	} else {
		d.src = string(data)
	}
	if err := d.parse(&l); err != nil {
		d.reset()
		return err
	}
	return nil
}

// Root returns the arguments object, or the [Invalid] value if d holds no document.
func (d *Doc) Root() Value {
	if len(d.nodes) == 0 {
		return Value{}
	}
	return Value{d: d, gen: d.gen}
}

func (d *Doc) reset() {
	d.strKnown, d.strBraces, d.strHigh, d.borrowed = false, false, false, false
	d.src, d.esc = "", ""
	d.buf = d.buf[:0]
	d.nodes = d.nodes[:0]
	d.kids = d.kids[:0]
	d.stack = d.stack[:0]
	d.frames = d.frames[:0]
	d.objs = d.objs[:0]
}

// parse is an explicit-stack parser: nesting costs a frame in d.frames, never a Go stack
// frame, so no input can exhaust the stack.
func (d *Doc) parse(l *limits) error {
	s := d.src
	i := skipSpace(s, 0)
	if i == len(s) {
		return syntaxError(i, "no value, only whitespace; arguments must be a JSON object")
	}
	if s[i] != '{' {
		return syntaxError(i, "arguments must be a JSON object, found "+describe(s[i]))
	}
	values := 0
	for {
		values++
		if values > l.maxElements {
			return limitError(i, "more than MaxElements %d values", l.maxElements)
		}
		var opened bool
		var err error
		if i, opened, err = d.value(s, i, l); err != nil {
			return err
		}
		if opened {
			continue // i is at the first value inside the new container
		}
		var done bool
		if i, done, err = d.next(s, i, l); err != nil || done {
			d.values, d.strKnown, d.lim = values, err == nil, *l
			return err
		}
	}
}

// value parses the value at s[i]. For a non-empty container it opens a frame, reads the
// first key of an object, and reports opened with i at the first child value.
func (d *Doc) value(s string, i int, l *limits) (next int, opened bool, err error) {
	if i >= len(s) {
		return i, false, syntaxError(i, "unexpected end of input; want a value")
	}
	switch c := s[i]; c {
	case '{', '[':
		if len(d.frames) >= l.maxDepth {
			return i, false, limitError(i, "nesting deeper than MaxDepth %d", l.maxDepth)
		}
		kind, closer := Object, byte('}')
		if c == '[' {
			kind, closer = Array, ']'
		}
		d.frames = append(d.frames, frame{node: d.add(node{start: int32(i), kind: kind}), base: int32(len(d.stack))})
		i = skipSpace(s, i+1)
		if i < len(s) && s[i] == closer {
			d.close(i + 1)
			return i + 1, false, nil
		}
		if kind == Object {
			i, err = d.key(s, i, l)
		}
		return i, err == nil, err
	case '"':
		a, b, esc, end, err := d.scanString(s, i, l.maxString)
		if err != nil {
			return i, false, err
		}
		d.add(node{start: int32(i), end: int32(end), a: int32(a), b: int32(b), kind: String, esc: esc})
		return end, false, nil
	case 't', 'f', 'n':
		lit := "null"
		if c == 't' {
			lit = "true"
		} else if c == 'f' {
			lit = "false"
		}
		if !strings.HasPrefix(s[i:], lit) {
			return i, false, syntaxError(i, "invalid literal; want true, false or null")
		}
		kind := Bool
		if c == 'n' {
			kind = Null
		}
		end := i + len(lit)
		d.add(node{start: int32(i), end: int32(end), kind: kind})
		return end, false, nil
	default:
		if c != '-' && !isDigit(c) {
			return i, false, syntaxError(i, "invalid character "+describe(c)+" looking for a value")
		}
		end, err := scanNumber(s, i)
		if err != nil {
			return i, false, err
		}
		d.add(node{start: int32(i), end: int32(end), a: int32(i), b: int32(end), kind: Number})
		return end, false, nil
	}
}

// next consumes what follows a complete value: a comma and the next key, or closers.
// It reports done after the top-level object, having checked that only whitespace
// follows and that no object repeats a key.
func (d *Doc) next(s string, i int, l *limits) (next int, done bool, err error) {
	for {
		i = skipSpace(s, i)
		if len(d.frames) == 0 {
			if i != len(s) {
				return i, false, syntaxError(i, "data after the arguments object")
			}
			return i, true, d.finish()
		}
		top := d.frames[len(d.frames)-1]
		obj := d.nodes[top.node].kind == Object
		if i >= len(s) {
			if obj {
				return i, false, syntaxError(i, "unexpected end of input in object; want ',' or '}'")
			}
			return i, false, syntaxError(i, "unexpected end of input in array; want ',' or ']'")
		}
		switch c := s[i]; {
		case c == ',':
			i = skipSpace(s, i+1)
			if obj {
				i, err = d.key(s, i, l)
			}
			return i, false, err
		case c == '}' && obj, c == ']' && !obj:
			d.close(i + 1)
			i++
		case obj:
			return i, false, syntaxError(i, "invalid character "+describe(c)+" after object member; want ',' or '}'")
		default:
			return i, false, syntaxError(i, "invalid character "+describe(c)+" after array element; want ',' or ']'")
		}
	}
}

// key parses an object key and its colon, returning the offset of the member's value.
func (d *Doc) key(s string, i int, l *limits) (int, error) {
	if i >= len(s) {
		return i, syntaxError(i, "unexpected end of input; want an object key")
	}
	if s[i] != '"' {
		return i, syntaxError(i, "invalid character "+describe(s[i])+"; want a string for an object key")
	}
	a, b, esc, end, err := d.scanString(s, i, l.maxString)
	if err != nil {
		return i, err
	}
	d.add(node{start: int32(i), end: int32(end), a: int32(a), b: int32(b), kind: String, esc: esc})
	i = skipSpace(s, end)
	if i >= len(s) || s[i] != ':' {
		if i >= len(s) {
			return i, syntaxError(i, "unexpected end of input; want ':' after object key")
		}
		return i, syntaxError(i, "invalid character "+describe(s[i])+"; want ':' after object key")
	}
	return skipSpace(s, i+1), nil
}

// add appends n, registering it as a child of the innermost open container.
func (d *Doc) add(n node) int32 {
	idx := int32(len(d.nodes))
	d.nodes = append(d.nodes, n)
	if len(d.frames) > 0 {
		d.stack = append(d.stack, idx)
	}
	return idx
}

// close ends the innermost container at end, moving its children to d.kids.
func (d *Doc) close(end int) {
	f := d.frames[len(d.frames)-1]
	d.frames = d.frames[:len(d.frames)-1]
	n := &d.nodes[f.node]
	children := d.stack[f.base:]
	n.end = int32(end)
	n.a = int32(len(d.kids))
	n.b = int32(len(children))
	if n.kind == Object {
		n.b /= 2
		if n.b >= 2 {
			d.objs = append(d.objs, f.node)
		}
	}
	d.kids = append(d.kids, children...)
	d.stack = d.stack[:f.base]
}

// finish publishes the unescaped text and rejects duplicate keys. Duplicates are checked
// after parsing because only then is every key's text final.
func (d *Doc) finish() error {
	if len(d.buf) > 0 {
		d.esc = string(d.buf)
	}
	for _, o := range d.objs {
		if err := d.checkKeys(&d.nodes[o]); err != nil {
			return err
		}
	}
	return nil
}

// finishBuilt is finish for a Builder's document whose every object but the root is a
// copy of a checked one, and whose root's members at the positions set in kept (all below
// 64) were kept from one checked object, each once: those are distinct already, and only
// the pairs with another member are compared.
func (d *Doc) finishBuilt(kept uint64) error {
	if len(d.buf) > 0 {
		d.esc = string(d.buf)
	}
	n := &d.nodes[0]
	kids := d.kids[n.a : n.a+2*n.b]
	// Each member not kept against every member before it, and against the
	// kept ones after it.
	for x := 0; x < len(kids); x += 2 {
		if kept&(1<<(x/2)) != 0 {
			continue
		}
		kx := d.text(kids[x])
		for y := 0; y < len(kids); y += 2 {
			if y == x || y > x && kept&(1<<(y/2)) == 0 {
				continue // itself, or a later new member, which compares with this one
			}
			if ky := d.text(kids[y]); !differAtFirst(ky, kx) && sameKeyFolded(ky, kx) {
				first, second := kids[y], kids[x]
				if first > second {
					first, second = second, first
				}
				return d.duplicate(first, second)
			}
		}
	}
	return nil
}

// smallObject is the member count up to which duplicate keys are found by comparing
// every pair, which beats sorting for the objects tool calls carry.
const smallObject = 16

func (d *Doc) checkKeys(n *node) error {
	kids := d.kids[n.a : n.a+2*n.b]
	if n.b <= smallObject {
		for x := 2; x < len(kids); x += 2 {
			kx := d.text(kids[x])
			for y := 0; y < x; y += 2 {
				if ky := d.text(kids[y]); !differAtFirst(ky, kx) && sameKeyFolded(ky, kx) {
					return d.duplicate(kids[y], kids[x])
				}
			}
		}
		return nil
	}
	keys := make([]int32, 0, n.b)
	for x := 0; x < len(kids); x += 2 {
		keys = append(keys, kids[x])
	}
	slices.SortFunc(keys, func(p, q int32) int { return strings.Compare(foldKey(d.text(p)), foldKey(d.text(q))) })
	for x := 1; x < len(keys); x++ {
		if sameKey(d.text(keys[x-1]), d.text(keys[x])) {
			first, second := keys[x-1], keys[x]
			if first > second {
				first, second = second, first
			}
			return d.duplicate(first, second)
		}
	}
	return nil
}

// sameKey reports whether two keys name the same member for some server:
// equal, or equal under Unicode simple case folding, as Go's encoding/json
// matches struct fields ("Path" and "path", and "ſ" and "s", fill the same
// field, the last one winning). Such pairs are refused like duplicates.
func sameKey(a, b string) bool {
	return !differAtFirst(a, b) && sameKeyFolded(a, b)
}

// differAtFirst reports whether two keys differ in their first characters so that
// sameKey is false: two ASCII first characters fold together only if equal or a case
// pair, and then they agree but for bit 0x20. Most pairs of keys differ there, and are
// told apart without folding the rest.
func differAtFirst(a, b string) bool {
	return len(a) > 0 && len(b) > 0 && (a[0]|b[0]) < utf8.RuneSelf && (a[0]^b[0])&^0x20 != 0
}

// SameKey reports whether two object keys name the same member for some server: equal,
// or equal under Unicode simple case folding. [Doc.Decode] refuses an object holding
// two such keys.
func SameKey(a, b string) bool { return sameKey(a, b) }

// sameKeyFolded is sameKey without its first test, which the loops that compare many
// keys make inline before calling it.
func sameKeyFolded(a, b string) bool { return a == b || strings.EqualFold(a, b) }

// FoldKey maps an object key to a form in which keys that [SameKey] calls the same
// are equal: every rune replaced by the smallest rune of its case-folding orbit.
func FoldKey(s string) string { return foldKey(s) }

// foldKey maps a key to a form in which sameKey keys are equal: every rune
// replaced by the smallest rune of its case-folding orbit.
func foldKey(s string) string {
	ascii, lower := true, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		lower = lower || ('a' <= c && c <= 'z')
	}
	if ascii {
		// An ASCII letter's orbit is its two cases (and for k and s a non-ASCII
		// rune, larger than both): its smallest rune is the upper case.
		if !lower {
			return s
		}
		b := []byte(s)
		for i, c := range b {
			if 'a' <= c && c <= 'z' {
				b[i] = c - ('a' - 'A')
			}
		}
		return string(b)
	}
	var b strings.Builder
	for _, r := range s {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b.WriteRune(min)
	}
	return b.String()
}

func (d *Doc) duplicate(first, second int32) error {
	// The key itself stays out of the message: keys can carry data, errors get logged.
	return &SyntaxError{
		Offset: int(d.nodes[second].start),
		Msg:    "duplicate object key, or one differing only in case (first at byte " + strconv.Itoa(int(d.nodes[first].start)) + ")",
	}
}

// text is the unescaped text of the String node at idx.
func (d *Doc) text(idx int32) string {
	n := &d.nodes[idx]
	if n.esc {
		return d.esc[n.a:n.b]
	}
	return d.src[n.a:n.b]
}

func skipSpace(s string, i int) int {
	if i < len(s) && s[i] > ' ' {
		return i // the common case: no whitespace at all
	}
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber returns the end of the number at s[i], which starts with '-' or a digit.
func scanNumber(s string, i int) (int, error) {
	j := i
	if s[j] == '-' {
		j++
	}
	switch {
	case j >= len(s):
		return j, syntaxError(j, "unexpected end of input in number; want a digit")
	case s[j] == '0':
		j++
		if j < len(s) && isDigit(s[j]) {
			return j, syntaxError(j, "leading zero in number")
		}
	case isDigit(s[j]):
		for j++; j < len(s) && isDigit(s[j]); j++ {
		}
	default:
		return j, syntaxError(j, "invalid character "+describe(s[j])+" in number; want a digit")
	}
	if j < len(s) && s[j] == '.' {
		j++
		if j >= len(s) || !isDigit(s[j]) {
			return j, syntaxError(j, "want a digit after the decimal point")
		}
		for j++; j < len(s) && isDigit(s[j]); j++ {
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j >= len(s) || !isDigit(s[j]) {
			return j, syntaxError(j, "want a digit in the exponent")
		}
		for j++; j < len(s) && isDigit(s[j]); j++ {
		}
	}
	return j, nil
}

// plain marks the bytes a string holds as they are: ASCII but not a control
// character, quote or backslash. It covers every byte value, so [Validate] indexes it
// with any byte; a byte of 0x80 or more, which starts a UTF-8 sequence to check, is
// not plain.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// load64 returns s[i:i+8] as a little-endian word.
func load64(s string, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// special reports whether some byte of x is not [plain]: a control character, '"',
// '\\' or a non-ASCII byte.
func special(x uint64) bool { return specialBytes(x) != 0 }

// specialBytes flags the bytes of x that are not [plain] by their high bits. No
// subtraction borrows below the lowest such byte, and a plain byte gets no high bit from
// any term, so the lowest flag is exact: it marks the first special byte. Bytes above it
// may be flagged falsely.
func specialBytes(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	return (x | (x - lo*0x20) | ((x ^ (lo * '"')) - lo) | ((x ^ (lo * '\\')) - lo)) & hi
}

// plainRun returns the end of the run of plain bytes of s starting at j: eight bytes at
// a time, and the first special byte of a word found from its flag.
func plainRun(s string, j int) int {
	for j+8 <= len(s) {
		if m := specialBytes(load64(s, j)); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
		j += 8
	}
	for j < len(s) && s[j] < utf8.RuneSelf && plain[s[j]] {
		j++
	}
	return j
}

// scanString reads the string whose opening quote is s[i]. Its text is s[a:b] or, when
// esc, d.buf[a:b]; end is the offset after the closing quote.
func (d *Doc) scanString(s string, i, max int) (a, b int, esc bool, end int, err error) {
	j := i + 1
	for j < len(s) {
		j = stringRun(s, j)
		if j >= len(s) {
			break
		}
		c := s[j]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				if j-(i+1) > max {
					return 0, 0, false, 0, limitError(i, "string of %d bytes is over MaxStringBytes %d", j-(i+1), max)
				}
				return i + 1, j, false, j + 1, nil
			case '\\':
				return d.unescape(s, i, j, max)
			case '{', '}':
				d.strBraces = true
				j++
				continue
			}
			return 0, 0, false, 0, syntaxError(j, "control character "+describe(c)+" in string; want it escaped")
		}
		d.strHigh = true
		r, size := utf8.DecodeRuneInString(s[j:])
		if r == utf8.RuneError && size == 1 {
			return 0, 0, false, 0, syntaxError(j, "invalid UTF-8 in string")
		}
		j += size
	}
	return 0, 0, false, 0, syntaxError(len(s), "unexpected end of input in string")
}

// stringRun is plainRun that stops at a brace too, which scanString notes.
func stringRun(s string, j int) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for j+8 <= len(s) {
		x := load64(s, j)
		// A brace's byte becomes zero and borrows; a plain byte neither borrows
		// nor gains a high bit: the lowest flag stays exact.
		if m := specialBytes(x) | (((x^(lo*'{'))-lo)|((x^(lo*'}'))-lo))&hi; m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
		j += 8
	}
	for j < len(s) && s[j] < utf8.RuneSelf && plain[s[j]] && s[j] != '{' && s[j] != '}' {
		j++
	}
	return j
}

// unescape continues scanString at the first backslash, s[j], writing the unescaped
// text to d.buf.
func (d *Doc) unescape(s string, i, j, max int) (a, b int, esc bool, end int, err error) {
	start := len(d.buf)
	d.buf = append(d.buf, s[i+1:j]...)
	for j < len(s) {
		c := s[j]
		switch {
		case c == '"':
			if n := len(d.buf) - start; n > max {
				return 0, 0, false, 0, limitError(i, "string of %d bytes is over MaxStringBytes %d", n, max)
			}
			return start, len(d.buf), true, j + 1, nil
		case c == '\\':
			if j+1 >= len(s) {
				return 0, 0, false, 0, syntaxError(j, "unexpected end of input in escape")
			}
			n, err := d.escape(s, j)
			if err != nil {
				return 0, 0, false, 0, err
			}
			j += n
		case c < 0x20:
			return 0, 0, false, 0, syntaxError(j, "control character "+describe(c)+" in string; want it escaped")
		case c < utf8.RuneSelf:
			k := plainRun(s, j+1)
			d.buf = append(d.buf, s[j:k]...)
			j = k
		default:
			r, size := utf8.DecodeRuneInString(s[j:])
			if r == utf8.RuneError && size == 1 {
				return 0, 0, false, 0, syntaxError(j, "invalid UTF-8 in string")
			}
			d.buf = append(d.buf, s[j:j+size]...)
			j += size
		}
	}
	return 0, 0, false, 0, syntaxError(len(s), "unexpected end of input in string")
}

// escape decodes the escape sequence at s[j] (a backslash with at least one byte after
// it) onto d.buf and returns its length.
func (d *Doc) escape(s string, j int) (int, error) {
	var r rune
	switch s[j+1] {
	case '"', '\\', '/':
		d.buf = append(d.buf, s[j+1])
		return 2, nil
	case 'b':
		r = '\b'
	case 'f':
		r = '\f'
	case 'n':
		r = '\n'
	case 'r':
		r = '\r'
	case 't':
		r = '\t'
	case 'u':
		r = hex4(s, j+2)
		if r < 0 {
			return 0, syntaxError(j, `invalid \u escape; want four hex digits`)
		}
		switch {
		case 0xDC00 <= r && r <= 0xDFFF:
			return 0, syntaxError(j, `\u escape of a UTF-16 low surrogate without a high surrogate before it`)
		case 0xD800 <= r && r <= 0xDBFF:
			lo := rune(-1)
			if j+12 <= len(s) && s[j+6] == '\\' && s[j+7] == 'u' {
				lo = hex4(s, j+8)
			}
			if lo < 0xDC00 || lo > 0xDFFF {
				return 0, syntaxError(j, `\u escape of a UTF-16 high surrogate not followed by a low surrogate escape`)
			}
			d.buf = utf8.AppendRune(d.buf, 0x10000+(r-0xD800)<<10+(lo-0xDC00))
			return 12, nil
		}
		d.buf = utf8.AppendRune(d.buf, r)
		return 6, nil
	default:
		return 0, syntaxError(j, "invalid escape: backslash followed by "+describe(s[j+1]))
	}
	d.buf = append(d.buf, byte(r))
	return 2, nil
}

// hex4 decodes the four hex digits at s[i:], or returns -1. It is written to be
// inlined: [Validate] calls it for every \u escape.
func hex4(s string, i int) rune {
	if i+4 > len(s) {
		return -1
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return -1
		}
	}
	return r
}
