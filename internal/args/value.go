package args

import (
	"iter"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the JSON type of a [Value].
type Kind uint8

// The kinds. Invalid is the zero Kind: the kind of the zero [Value], of a Value whose
// [Doc] has since been reused, and of what an out-of-range accessor returns.
const (
	Invalid Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

var kindNames = [...]string{"invalid", "null", "bool", "number", "string", "array", "object"}

// String returns the kind's lower-case name, such as "object".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is a small, copyable handle to one value in a [Doc]. It is valid until the Doc's
// next [Doc.Decode]; after that it reports [Invalid], so a stale handle fails closed.
// Accessors never panic: asked for something the value does not have (an index past the
// end, the members of an array), they return zero results and the Invalid value.
type Value struct {
	d   *Doc
	i   int32
	gen uint32
}

func (v Value) node() *node {
	if v.d == nil || v.gen != v.d.gen || int(v.i) >= len(v.d.nodes) {
		return nil
	}
	return &v.d.nodes[v.i]
}

// Kind returns the value's JSON type.
func (v Value) Kind() Kind {
	if n := v.node(); n != nil {
		return n.kind
	}
	return Invalid
}

// Str returns a string value's text, unescaped; "" for any other kind.
func (v Value) Str() string {
	n := v.node()
	switch {
	case n == nil || n.kind != String:
		return ""
	case n.esc:
		return v.d.esc[n.a:n.b]
	}
	return v.d.src[n.a:n.b]
}

// Raw returns the value's exact source text, such as `-1.50e+3`, `true` or `"a\nb"`; for
// a number it is the only representation kept.
func (v Value) Raw() string {
	if n := v.node(); n != nil {
		return v.d.src[n.start:n.end]
	}
	return ""
}

// Len returns the number of elements of an array or members of an object; 0 otherwise.
func (v Value) Len() int {
	if n := v.node(); n != nil && (n.kind == Array || n.kind == Object) {
		return int(n.b)
	}
	return 0
}

// Index returns element i of an array.
func (v Value) Index(i int) Value {
	n := v.node()
	if n == nil || n.kind != Array || i < 0 || i >= int(n.b) {
		return Value{}
	}
	return v.at(v.d.kids[int(n.a)+i])
}

// Member returns member i of an object, in document order.
func (v Value) Member(i int) (key string, val Value) {
	n := v.node()
	if n == nil || n.kind != Object || i < 0 || i >= int(n.b) {
		return "", Value{}
	}
	k := int(n.a) + 2*i
	return v.d.text(v.d.kids[k]), v.at(v.d.kids[k+1])
}

// StringsMayHold reports whether some string or object key under v may hold, once
// unescaped, one of the bytes of set. False is certain: none does. It reads v's source
// text once rather than each string: without a backslash in that text every string is
// its source text, so a byte of set in some string stands in the text more often than
// outside strings. Outside strings only '{' and '}' (one each per object), '[' and ']'
// (per array) and ':' (per member) are counted; any other byte of set found anywhere
// in the text, or any escape, gives true.
func (v Value) StringsMayHold(set string) bool {
	n := v.node()
	if n == nil {
		return false // an invalid value holds nothing
	}
	if d := v.d; v.i == 0 && d.strKnown && len(d.buf) == 0 {
		// The whole of a decoded document without escapes: what Decode saw in
		// its strings and keys answers for braces and non-ASCII bytes exactly.
		known := true
		for i := 0; i < len(set) && known; i++ {
			switch c := set[i]; {
			case c == '{' || c == '}':
				if d.strBraces {
					return true
				}
			case c >= utf8.RuneSelf:
				if d.strHigh {
					return true
				}
			default:
				known = false
			}
		}
		if known {
			return false
		}
	}
	raw := v.d.src[n.start:n.end]
	if strings.IndexByte(raw, '\\') >= 0 {
		return true
	}
	var objects, arrays, members int
	counted := false
	for i := 0; i < len(set); i++ {
		k := strings.Count(raw, set[i:i+1])
		if k == 0 {
			continue
		}
		c := set[i]
		if c != '{' && c != '}' && c != '[' && c != ']' && c != ':' {
			return true
		}
		if !counted {
			objects, arrays, members = v.d.containers(v.i)
			counted = true
		}
		switch c {
		case '{', '}':
			k -= objects
		case '[', ']':
			k -= arrays
		default:
			k -= members
		}
		if k > 0 {
			return true
		}
	}
	return false
}

// containers counts the objects, arrays and object members of the value at node i,
// itself included: the nodes from i that start before it ends.
func (d *Doc) containers(i int32) (objects, arrays, members int) {
	end := d.nodes[i].end
	for j := int(i); j < len(d.nodes) && d.nodes[j].start < end; j++ {
		switch n := &d.nodes[j]; n.kind {
		case Object:
			objects++
			members += int(n.b)
		case Array:
			arrays++
		}
	}
	return objects, arrays, members
}

// Members iterates over the members of an object, in document order: the key and the
// value of each, as [Value.Member] returns them. It yields nothing for any other kind.
// The object is checked once, where a loop of Member calls checks it for each member;
// the iteration stops if the Doc is decoded again meanwhile.
func (v Value) Members() iter.Seq2[string, Value] {
	return func(yield func(string, Value) bool) {
		n := v.node()
		if n == nil || n.kind != Object {
			return
		}
		d, gen := v.d, v.gen
		kids := d.kids[n.a : n.a+2*n.b]
		for k := 0; k+1 < len(kids) && d.gen == gen; k += 2 {
			if !yield(d.text(kids[k]), v.at(kids[k+1])) {
				return
			}
		}
	}
}

// Lookup returns the member of an object with the given (unescaped) key. Keys are unique,
// since [Doc.Decode] rejects duplicates.
func (v Value) Lookup(key string) (Value, bool) {
	n := v.node()
	if n == nil || n.kind != Object {
		return Value{}, false
	}
	kids := v.d.kids[n.a : n.a+2*n.b]
	for k := 0; k < len(kids); k += 2 {
		// Length and first byte first: most keys differ there, and then the
		// comparison costs no call.
		if t := v.d.text(kids[k]); len(t) == len(key) && (len(t) == 0 || t[0] == key[0]) && t == key {
			return v.at(kids[k+1]), true
		}
	}
	return Value{}, false
}

func (v Value) at(i int32) Value { return Value{d: v.d, i: i, gen: v.gen} }
