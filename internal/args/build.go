package args

import (
	"errors"
	"unicode/utf8"
	"unsafe"
)

// Builder writes a new arguments object and decodes it as it writes: [Builder.End]
// returns the object's JSON text and leaves in the Doc exactly what [Doc.Decode] of that
// text would leave, without reading the text again. It is for a caller that rewrites
// arguments it has decoded (pins fields, drops some, injects values) and must decide on
// the very arguments it forwards: the members it copies are decoded already, and copying
// their nodes costs a fraction of parsing their text.
//
// What Decode would refuse, End refuses: a document over the Limits given to
// [Builder.Begin] (whatever limits the copied values were decoded under), a key or
// string that is not valid UTF-8, and an object holding the same key twice or two keys
// differing only in case. A test and a fuzz target hold End to Decode.
//
// The zero Builder is ready for Begin. A Builder is not safe for concurrent use.
type Builder struct {
	d      *Doc
	out    []byte
	l      limits
	values int // values added, the object included, as Decode counts them
	n      int // members written
	err    error

	// What End must check for keys that name the same member. The members
	// kept from one object of a finished Doc, each once, are distinct by that
	// object's own check, and every value copied from a finished Doc holds
	// only checked objects (a Doc that a Builder is still writing is refused):
	// while trust holds, End compares only the pairs of the new object's members
	// that are not both kept. Anything else (a second source object, a member
	// kept twice, a member kept at index or position 64 or more) ends trust, and
	// End checks every object as Decode does; so does an object of more than 64
	// members.
	trust    bool
	keepFrom Value  // the object members were kept from (its d nil before the first Keep)
	kept     uint64 // the indices in keepFrom of the members kept
	fromKeep uint64 // the positions in the new object of the members kept
}

var (
	errSameDoc  = errors.New("args: Builder: a copied value is of the Doc being built")
	errBuilding = errors.New("args: Builder: a copied value is of a Doc another Builder is still writing")
)

// Begin starts an object in d, replacing what d held, as Decode does: Values handed out
// from d go stale. The object's text is written over dst's storage. d MUST NOT be the Doc
// of a value later passed to [Builder.Member].
func (b *Builder) Begin(d *Doc, dst []byte, lim *Limits) {
	d.gen++
	d.reset()
	d.building = true
	*b = Builder{d: d, out: append(dst[:0], '{'), l: lim.resolve(), values: 1, trust: true}
	d.frames = append(d.frames, frame{node: d.add(node{start: 0, kind: Object}), base: 0})
}

// BeginAppend starts writing members after those of the arguments object d holds, in
// place: [Builder.End] returns d's text with the members appended before its closing
// brace (whitespace after it dropped), and leaves in d exactly what Decode of that text
// would, as Begin does. The nodes of the members d held stay where they are and are not
// copied, which costs a fraction of keeping them one by one; Values handed out from d go
// stale all the same. The text is written over dst's storage, which therefore must not
// be the text d holds (a Builder's earlier End on d returned it). It reports false, and
// changes nothing, when d holds no document, one a Builder is writing, or one written
// under limits that lim does not cover (its members would have to be checked again).
func (b *Builder) BeginAppend(d *Doc, dst []byte, lim *Limits) bool {
	l := lim.resolve()
	if len(d.nodes) == 0 || d.building || len(d.frames) != 0 || !l.covers(d.lim) {
		return false
	}
	root := &d.nodes[0]
	// The root closes last: its children are the last of d.kids, and, with two
	// members or more, it is the last of d.objs.
	if root.kind != Object || int(root.a+2*root.b) != len(d.kids) {
		return false
	}
	d.gen++
	d.building = true
	d.strKnown = false // the members to come are not looked at as Decode looks
	n := int(root.b)
	d.stack = append(d.stack[:0], d.kids[root.a:]...)
	d.kids = d.kids[:root.a]
	if k := len(d.objs); n >= 2 && k > 0 && d.objs[k-1] == 0 {
		d.objs = d.objs[:k-1]
	}
	d.frames = append(d.frames[:0], frame{node: 0, base: 0})
	*b = Builder{d: d, out: append(dst[:0], d.src[:root.end-1]...), l: l, values: d.values, n: n, trust: n <= 64}
	if b.trust {
		// The members d held were checked together: only pairs with a new one are
		// compared.
		b.fromKeep = 1<<n - 1
		b.keepFrom = Value{d: d, i: -1} // no Value names it: Keep from d is refused as its own Doc
	}
	root.end = 0 // set by close, as Decode sets it
	return true
}

// Member appends the member key with the value v, a value of another Doc: its source
// text is copied as it is, and its decoded nodes with it.
func (b *Builder) Member(key string, v Value) {
	if b.err != nil {
		return
	}
	n := v.node()
	switch {
	case n == nil:
		b.err = errors.New("args: Builder: the value is invalid or stale")
		return
	case v.d == b.d:
		b.err = errSameDoc
		return
	case v.d.building:
		b.err = errBuilding
		return
	}
	b.key(key)
	if b.err != nil {
		return
	}
	delta := int32(len(b.out)) - n.start
	b.out = append(b.out, v.d.src[n.start:n.end]...)
	b.copy(v.d, v.i, delta)
}

// Keep appends member i of obj, an object of another Doc, as Member(key, value) would
// write it, copying the key's text too when it needs no escape.
func (b *Builder) Keep(obj Value, i int) {
	if b.err != nil {
		return
	}
	n := obj.node()
	switch {
	case n == nil || n.kind != Object || i < 0 || i >= int(n.b):
		b.err = errors.New("args: Builder: no such member")
		return
	case obj.d == b.d:
		b.err = errSameDoc
		return
	}
	if obj.d.building {
		b.err = errBuilding
		return
	}
	b.noteKeep(obj, i)
	src := obj.d
	k, v := src.kids[int(n.a)+2*i], src.kids[int(n.a)+2*i+1]
	kn, vn := &src.nodes[k], &src.nodes[v]
	if kn.esc {
		b.Member(src.text(k), obj.at(v)) // re-escaped, as Member writes it
		return
	}
	// An unescaped key's text is its source text between the quotes, which holds
	// nothing appendString would escape: Member would write the same bytes.
	out := b.out
	if b.n > 0 {
		out = append(out, ',')
	}
	b.n++
	if vn.start == kn.end+1 {
		// "key":value as written, with only the colon between: one copy, one shift.
		delta := int32(len(out)) - kn.start
		b.out = append(out, src.src[kn.start:vn.end]...)
		b.node(src, k, delta)
		b.copy(src, v, delta)
		return
	}
	delta := int32(len(out)) - kn.start
	out = append(out, src.src[kn.start:kn.end]...)
	b.out = append(out, ':')
	b.node(src, k, delta)
	delta = int32(len(b.out)) - vn.start
	b.out = append(b.out, src.src[vn.start:vn.end]...)
	b.copy(src, v, delta)
}

// noteKeep records that member i of obj becomes the next member written, for End's
// check of the keys.
func (b *Builder) noteKeep(obj Value, i int) {
	switch {
	case !b.trust:
	case i >= 64 || b.n >= 64:
		b.trust = false
	case b.keepFrom.d == nil:
		b.keepFrom = obj
	case b.keepFrom != obj || b.kept&(1<<i) != 0:
		b.trust = false
	}
	if b.trust {
		b.kept |= 1 << i
		b.fromKeep |= 1 << b.n
	}
}

// StringMember appends the member key with the string value s.
func (b *Builder) StringMember(key, s string) {
	if b.err != nil {
		return
	}
	b.key(key)
	if b.err == nil && b.count() {
		b.str(s)
	}
}

// End closes the object and returns its text, the arguments as d now holds them. On an
// error d holds no document, as after a failed Decode.
//
// The text returned is d's own source text, not a copy: it MUST NOT be modified while d
// holds the document, nor while strings read from d's Values are in use.
func (b *Builder) End() ([]byte, error) {
	d := b.d
	d.building = false
	if b.err == nil {
		b.out = append(b.out, '}')
		if !b.overBytes() {
			d.close(len(b.out))
			d.src = unsafe.String(unsafe.SliceData(b.out), len(b.out))
			d.values, d.lim, d.borrowed = b.values, b.l, false
			if b.trust && b.n <= 64 {
				b.err = d.finishBuilt(b.fromKeep)
			} else {
				b.err = d.finish()
			}
		}
	}
	if b.err != nil {
		d.reset()
		return nil, b.err
	}
	return b.out, nil
}

// overBytes records an error if the text is longer than MaxBytes. End alone asks:
// offsets written while the text grows past MaxBytes (even past 2 GiB, where they
// wrap) are never read, since End then fails and resets the Doc.
func (b *Builder) overBytes() bool {
	if len(b.out) > b.l.maxBytes {
		b.tooLong()
		return true
	}
	return false
}

//go:noinline
func (b *Builder) tooLong() {
	b.err = limitError(b.l.maxBytes, "input of more than %d bytes is over MaxBytes %d", b.l.maxBytes, b.l.maxBytes)
}

// count counts one more value against MaxElements.
func (b *Builder) count() bool {
	b.values++
	if b.values > b.l.maxElements {
		b.tooMany()
		return false
	}
	return true
}

//go:noinline
func (b *Builder) tooLongString(at, n int) {
	b.err = limitError(at, "string of %d bytes is over MaxStringBytes %d", n, b.l.maxString)
}

//go:noinline
func (b *Builder) tooMany() {
	b.err = limitError(len(b.out), "more than MaxElements %d values", b.l.maxElements)
}

// plainText reports whether s is printable ASCII without a quote or backslash, eight bytes at a
// time: a JSON string of it needs no escape, and it is valid UTF-8.
func plainText(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if special(load64(s, i)) {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf || !plain[s[i]] {
			return false
		}
	}
	return true
}

// key writes an object key and its colon.
func (b *Builder) key(key string) {
	if b.n > 0 {
		b.out = append(b.out, ',')
	}
	b.n++
	b.str(key)
	b.out = append(b.out, ':')
}

// str writes the string s and adds its node, with its text where Decode would put it:
// in the source text when it needs no escape, else unescaped in d.buf.
func (b *Builder) str(s string) {
	d := b.d
	if len(s) <= b.l.maxString && plainText(s) {
		// Printable ASCII without a quote or backslash: valid, and written as it is.
		start := len(b.out)
		b.out = append(b.out, '"')
		b.out = append(b.out, s...)
		b.out = append(b.out, '"')
		d.add(node{start: int32(start), end: int32(len(b.out)), a: int32(start + 1), b: int32(len(b.out) - 1), kind: String})
		return
	}
	if !utf8.ValidString(s) {
		b.err = syntaxError(len(b.out), "invalid UTF-8 in string")
		return
	}
	if len(s) > b.l.maxString {
		b.err = limitError(len(b.out), "string of %d bytes is over MaxStringBytes %d", len(s), b.l.maxString)
		return
	}
	start := len(b.out)
	b.out = appendString(b.out, s)
	n := node{start: int32(start), end: int32(len(b.out)), kind: String}
	if len(b.out)-start == len(s)+2 { // nothing escaped
		n.a, n.b = n.start+1, n.end-1
	} else {
		n.a = int32(len(d.buf))
		d.buf = append(d.buf, s...)
		n.b, n.esc = int32(len(d.buf)), true
	}
	d.add(n)
}

// copy adds the nodes of value si of src, whose text is now at offset delta from where
// it is in src, checking what Decode checks as it reads a value.
func (b *Builder) copy(src *Doc, si int32, delta int32) {
	if b.err != nil || !b.count() {
		return
	}
	b.node(src, si, delta)
}

// node adds node si of src (a value or a key, already counted) and what it holds.
func (b *Builder) node(src *Doc, si int32, delta int32) {
	d := b.d
	n := &src.nodes[si]
	c := node{start: n.start + delta, end: n.end + delta, kind: n.kind}
	switch n.kind {
	case String:
		if int(n.b-n.a) > b.l.maxString { // the text's length, wherever it is
			b.tooLongString(int(c.start), int(n.b-n.a))
			return
		}
		if n.esc {
			c.a = int32(len(d.buf))
			d.buf = append(d.buf, src.esc[n.a:n.b]...)
			c.b, c.esc = int32(len(d.buf)), true
		} else {
			c.a, c.b = n.a+delta, n.b+delta
		}
	case Number:
		c.a, c.b = n.a+delta, n.b+delta
	case Array, Object:
		if len(d.frames) >= b.l.maxDepth {
			b.err = limitError(int(c.start), "nesting deeper than MaxDepth %d", b.l.maxDepth)
			return
		}
		c.end = 0 // set by close, as Decode sets it
		d.frames = append(d.frames, frame{node: d.add(c), base: int32(len(d.stack))})
		stride := int32(1)
		if n.kind == Object {
			stride = 2
		}
		kids := src.kids[n.a : n.a+stride*n.b]
		for k, kid := range kids {
			if stride == 2 && k%2 == 0 {
				b.node(src, kid, delta) // a key: no value to count
			} else {
				b.copy(src, kid, delta)
			}
			if b.err != nil {
				return
			}
		}
		d.close(int(n.end + delta))
		return
	}
	d.add(c)
}
