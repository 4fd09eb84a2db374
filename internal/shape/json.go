package shape

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/aegis-mcp/aegis/internal/args"
)

// NeutraliseJSON applies [Syntax.Neutralise] to every string in v, at any depth: string
// values and object keys alike, since an engine that expands the inputs of a step may
// expand the keys of a map it is given. It returns the rewritten JSON and the JSON
// Pointers (RFC 6901, relative to v, in document order) of the strings it changed, for
// the audit record; a changed key is reported at its member's pointer, spelled with the
// key as the model wrote it.
//
// When nothing needs rewriting, NeutraliseJSON returns nil, nil, nil without
// allocating: the caller forwards the arguments it already holds. Otherwise out is v
// with only the changed strings re-encoded: members keep their order, numbers and
// unchanged string values keep their source text, whitespace between tokens is dropped,
// and keys are re-escaped (the minimal escaping of RFC 8785).
//
// It fails on an invalid (zero or stale) value, and when rewriting makes two keys of
// one object equal ({"{{a":1,"{ {a":2}): that object would hold a duplicate key, which
// parsers read differently.
func (x Syntax) NeutraliseJSON(v args.Value) (out []byte, changed []string, err error) {
	if v.Kind() == args.Invalid {
		return nil, nil, errInvalid
	}
	// Every delimiter has a brace in it, and every brace is '{', '}' or a
	// compatibility form whose first byte is 0xEF: arguments with none of them in
	// any string need nothing, which one read of their text tells.
	if !v.StringsMayHold("{}\xef") || !x.anyNeeds(v) {
		return nil, nil, nil
	}
	w := rewriter{x: x, out: make([]byte, 0, len(v.Raw())+len(v.Raw())/8+8)}
	if err := w.value(v); err != nil {
		return nil, nil, err
	}
	return w.out, w.changed, nil
}

var errInvalid = errors.New("neutralising templates: invalid JSON value")

// anyNeeds reports whether some string in v needs rewriting. It allocates nothing.
func (x Syntax) anyNeeds(v args.Value) bool {
	switch v.Kind() {
	case args.String:
		return x.needs(v.Str())
	case args.Array:
		for i := range v.Len() {
			if x.anyNeeds(v.Index(i)) {
				return true
			}
		}
	case args.Object:
		for k, m := range v.Members() {
			if x.needs(k) || x.anyNeeds(m) {
				return true
			}
		}
	}
	return false
}

// rewriter builds the output of NeutraliseJSON. path is the pointer of the value being
// written.
type rewriter struct {
	x       Syntax
	out     []byte
	path    []byte
	changed []string
}

func (w *rewriter) value(v args.Value) error {
	switch v.Kind() {
	case args.String:
		if s := v.Str(); w.x.needs(s) {
			w.out = args.AppendString(w.out, w.x.Neutralise(s))
			w.mark()
		} else {
			w.out = append(w.out, v.Raw()...)
		}
	case args.Array:
		w.out = append(w.out, '[')
		for i := range v.Len() {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			n := len(w.path)
			w.path = strconv.AppendInt(append(w.path, '/'), int64(i), 10)
			if err := w.value(v.Index(i)); err != nil {
				return err
			}
			w.path = w.path[:n]
		}
		w.out = append(w.out, ']')
	case args.Object:
		if i, j, dup := w.x.collision(v); dup {
			// The keys are the model's text: name them by position only.
			return fmt.Errorf("%w: members %d and %d of the object at %q", ErrKeyCollision, i, j, w.path)
		}
		w.out = append(w.out, '{')
		for i := range v.Len() {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			k, m := v.Member(i)
			w.out = append(args.AppendString(w.out, w.x.Neutralise(k)), ':')
			n := len(w.path)
			w.path = args.AppendToken(append(w.path, '/'), k)
			if w.x.needs(k) {
				w.mark()
			}
			if err := w.value(m); err != nil {
				return err
			}
			w.path = w.path[:n]
		}
		w.out = append(w.out, '}')
	case args.Number, args.Bool, args.Null:
		w.out = append(w.out, v.Raw()...)
	default:
		return errInvalid
	}
	return nil
}

// mark records that the value at w.path changed; a member whose key and value both
// changed is reported once.
func (w *rewriter) mark() {
	if n := len(w.changed); n > 0 && w.changed[n-1] == string(w.path) {
		return
	}
	w.changed = append(w.changed, string(w.path))
}

// ErrKeyCollision is wrapped by the error NeutraliseJSON returns when rewriting makes
// two keys of one object equal, or equal but for case, which strict decoding refuses
// as duplicates ([args.SameKey]).
var ErrKeyCollision = errors.New("neutralising templates makes two keys equal")

// collision reports the first two members i < j of object v whose keys are the same
// key ([args.SameKey]) once rewritten. It allocates only for an object one of whose
// keys changes.
func (x Syntax) collision(v args.Value) (i, j int, dup bool) {
	var seen map[string]int
	for j := range v.Len() {
		k, _ := v.Member(j)
		if seen == nil {
			if !x.needs(k) {
				continue
			}
			// The first key that changes: from here on every key is compared, and
			// the unchanged keys before it are entered first.
			seen = make(map[string]int, v.Len())
			for i := range j {
				ki, _ := v.Member(i)
				seen[args.FoldKey(ki)] = i
			}
		}
		n := args.FoldKey(x.Neutralise(k))
		if i, dup := seen[n]; dup {
			return i, j, true
		}
		seen[n] = j
	}
	return 0, 0, false
}
