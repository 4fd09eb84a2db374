package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Default returns the default the schema declares for the argument at
// pointer (a JSON Pointer with "*" for array elements, as [Options.Clamp]
// names arguments): what a server that fills in defaults uses when the
// model leaves the argument out. It follows the schema as the server
// declared it, through properties, items and in-place applicators (allOf,
// anyOf, oneOf, $ref, if/then/else). ok is false when there is none. Two
// different defaults for the same argument (in two branches of an anyOf)
// are an error: which one the server uses cannot be known.
func (s *Schema) Default(pointer string) (value []byte, ok bool, err error) {
	if s == nil {
		return nil, false, nil
	}
	c := s.defaults
	if c != nil {
		if d, hit := c.m.Load(pointer); hit {
			d := d.(*defaultAt)
			return d.value, d.value != nil, d.err
		}
	}
	value, err = s.findDefault(pointer)
	if c != nil && c.n.Add(1) <= maxDefaultsKept { // pointers come from bindings: a few per tool
		c.m.Store(pointer, &defaultAt{value: value, err: err})
	}
	return value, value != nil, err
}

// defaultCache remembers Default's answers by pointer (*defaultAt), at
// most maxDefaultsKept of them (n counts).
type defaultCache struct {
	m sync.Map
	n atomic.Int64
}

// maxDefaultsKept bounds the defaults a Schema remembers.
const maxDefaultsKept = 256

// defaultAt is a remembered answer of Default.
type defaultAt struct {
	value []byte
	err   error
}

func (s *Schema) findDefault(pointer string) ([]byte, error) {
	toks, err := parsePointer(pointer)
	if err != nil {
		return nil, err
	}
	var found []byte
	var bad error
	for _, at := range reach(s.unclosed, toks) {
		closure(at, func(e *jsonschema.Schema) {
			if e.Default == nil || bad != nil {
				return
			}
			b, err := json.Marshal(*e.Default)
			switch {
			case err != nil:
				bad = fmt.Errorf("the default at %s: %v", where(pointer), err)
			case found == nil:
				found = b
			case !bytes.Equal(found, b):
				bad = fmt.Errorf("the schema declares two defaults at %s (%s and %s)", where(pointer), found, b)
			}
		})
	}
	if bad != nil {
		return nil, bad
	}
	return found, nil
}
