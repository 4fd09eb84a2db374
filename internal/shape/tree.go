package shape

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aegis-mcp/aegis/internal/args"
)

// jnode is a JSON value that can be edited: the arguments while the
// shaping steps rewrite them. Scalars keep their source text; objects keep
// their members' order.
type jnode struct {
	kind args.Kind
	raw  string // a scalar's JSON text
	keys []string
	vals []*jnode
	// shared marks a node of a configured value, parsed once and linked
	// into every call's tree: set copies it before changing it.
	shared bool
}

// own returns n, or a copy of it the caller may change when n is shared.
func (n *jnode) own() *jnode {
	if !n.shared {
		return n
	}
	c := &jnode{kind: n.kind, raw: n.raw}
	c.keys = append([]string(nil), n.keys...)
	c.vals = append([]*jnode(nil), n.vals...)
	return c
}

// share marks n and everything under it shared.
func (n *jnode) share() *jnode {
	n.shared = true
	for _, v := range n.vals {
		v.share()
	}
	return n
}

func treeOf(v args.Value) *jnode {
	n := &jnode{kind: v.Kind()}
	switch n.kind {
	case args.Object:
		n.keys = make([]string, v.Len())
		n.vals = make([]*jnode, v.Len())
		for i := range v.Len() {
			k, m := v.Member(i)
			n.keys[i], n.vals[i] = k, treeOf(m)
		}
	case args.Array:
		n.vals = make([]*jnode, v.Len())
		for i := range v.Len() {
			n.vals[i] = treeOf(v.Index(i))
		}
	default:
		n.raw = v.Raw()
	}
	return n
}

func (n *jnode) appendJSON(dst []byte) []byte {
	switch n.kind {
	case args.Object:
		dst = append(dst, '{')
		for i, k := range n.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = args.AppendString(dst, k)
			dst = append(dst, ':')
			dst = n.vals[i].appendJSON(dst)
		}
		return append(dst, '}')
	case args.Array:
		dst = append(dst, '[')
		for i, v := range n.vals {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = v.appendJSON(dst)
		}
		return append(dst, ']')
	}
	return append(dst, n.raw...)
}

// pointerTokens splits a pointer into its unescaped reference tokens.
func pointerTokens(p args.Pointer) []string {
	s := p.String()
	if s == "" {
		return nil
	}
	toks := strings.Split(s[1:], "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks
}

func (n *jnode) member(key string) int {
	for i, k := range n.keys {
		if k == key {
			return i
		}
	}
	return -1
}

var errEditPath = errors.New("the field's parent is not an object")

// set puts val at the path toks, creating the objects on the way. A path
// through a value that is not an object (or an array, for an index token)
// is an error: the arguments do not have the shape the configuration
// expects, and guessing would forward something no one meant.
func (n *jnode) set(toks []string, val *jnode) error {
	if len(toks) == 0 {
		return errEditPath
	}
	cur := n
	for k, t := range toks {
		last := k == len(toks)-1
		switch cur.kind {
		case args.Object:
			i := cur.member(t)
			if last {
				if i < 0 {
					cur.keys = append(cur.keys, t)
					cur.vals = append(cur.vals, val)
				} else {
					cur.vals[i] = val
				}
				return nil
			}
			if i < 0 {
				cur.keys = append(cur.keys, t)
				cur.vals = append(cur.vals, &jnode{kind: args.Object})
				i = len(cur.vals) - 1
			}
			cur.vals[i] = cur.vals[i].own()
			cur = cur.vals[i]
		case args.Array:
			idx, err := strconv.Atoi(t)
			if err != nil || idx < 0 || idx >= len(cur.vals) || (t != "0" && t[0] == '0') {
				return errEditPath
			}
			if last {
				cur.vals[idx] = val
				return nil
			}
			cur.vals[idx] = cur.vals[idx].own()
			cur = cur.vals[idx]
		default:
			return errEditPath
		}
	}
	return nil
}

// remove deletes every value the path toks selects ("*" selects every
// element or member) and reports whether it removed any.
func (n *jnode) remove(toks []string) bool {
	if len(toks) == 0 {
		return false
	}
	t, rest := toks[0], toks[1:]
	removed := false
	switch n.kind {
	case args.Object:
		for i := 0; i < len(n.keys); i++ {
			if t != "*" && n.keys[i] != t {
				continue
			}
			if len(rest) == 0 {
				n.keys = append(n.keys[:i], n.keys[i+1:]...)
				n.vals = append(n.vals[:i], n.vals[i+1:]...)
				i--
				removed = true
				continue
			}
			removed = n.vals[i].remove(rest) || removed
		}
	case args.Array:
		for i := 0; i < len(n.vals); i++ {
			if t != "*" && strconv.Itoa(i) != t {
				continue
			}
			if len(rest) == 0 {
				n.vals = append(n.vals[:i], n.vals[i+1:]...)
				i--
				removed = true
				continue
			}
			removed = n.vals[i].remove(rest) || removed
		}
	}
	return removed
}

// parseJSONValue reads one JSON value (a configured pin) into a tree.
func parseJSONValue(b []byte) (*jnode, error) {
	// Wrapped in an object, since args decodes only objects.
	var d args.Doc
	wrapped := make([]byte, 0, len(b)+6)
	wrapped = append(append(append(wrapped, `{"v":`...), b...), '}')
	if err := d.Decode(wrapped, nil); err != nil {
		return nil, fmt.Errorf("value %s: %w", b, err)
	}
	v, _ := d.Root().Lookup("v")
	return treeOf(v), nil
}
