package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
)

// role is what a schema position applies to.
type role uint8

const (
	// roleValue: the schema applies to a value of its own (a property's, an item's),
	// so it is where that value's object is closed.
	roleValue role = iota
	// roleRoot: the arguments object, closed always.
	roleRoot
	// roleInPlace: the schema applies to the value its parent applies to (allOf,
	// anyOf, oneOf, not, if/then/else, dependentSchemas, and the $defs that $ref
	// reaches); the parent's unevaluatedProperties sees what it evaluates.
	roleInPlace
)

// closer rewrites a 2019-09 or 2020-12 schema tree into its closed form, and checks
// what the validator must never be asked to resolve.
type closer struct {
	keep    bool            // check and normalise only: strip nothing, close nothing
	open    map[string]bool // positions left as the server declared them
	visited map[string]bool // every schema position, for checking $ref targets
	anchors map[string]bool
	refs    [][2]string // position, $ref
}

// annotations are the keywords that never constrain a value; a schema of these alone
// is the always-true schema. format is absent: aegis asserts it.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$schema": true, "$id": true, "$anchor": true, "$dynamicAnchor": true,
	"$defs": true, "definitions": true, "contentMediaType": true, "contentEncoding": true,
}

// countKeywords hold a non-negative integer; the validator reads them as int64 and
// would wrap a larger one.
var countKeywords = map[string]bool{
	"minLength": true, "maxLength": true, "minItems": true, "maxItems": true,
	"minProperties": true, "maxProperties": true, "minContains": true, "maxContains": true,
}

// alwaysTrue reports whether v is the schema every value satisfies, as written: true,
// or an object of annotations only.
func alwaysTrue(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case map[string]any:
		for k := range v {
			if !annotations[k] {
				return false
			}
		}
		return true
	}
	return false
}

// close returns the closed copy of the schema tree root.
func (c *closer) close(root any) (any, error) {
	out, err := c.schema(root, "", roleRoot)
	if err != nil {
		return nil, err
	}
	for _, r := range c.refs {
		if err := c.checkRef(r[0], r[1]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *closer) schema(v any, at string, r role) (any, error) {
	c.visited[at] = true
	m, ok := v.(map[string]any)
	if !ok {
		return v, nil // true stays open, false refuses; anything else the validator rejects
	}
	out := make(map[string]any, len(m)+1)
	for k, val := range m {
		kat := at + "/" + escapeToken(k)
		var err error
		switch k {
		case "$ref":
			ref, ok := val.(string)
			if !ok || !strings.HasPrefix(ref, "#") {
				return nil, fmt.Errorf("$ref %s at %s: only references within the schema (#...) are allowed", quoteValue(val), where(at))
			}
			c.refs = append(c.refs, [2]string{at, ref})
			out[k] = val
		case "dependencies":
			// Not a keyword since 2019-09 (translation turned a draft 4 to 7 one into
			// dependentRequired and dependentSchemas), so the server ignores it; but
			// the validator would apply it, and its schemas would evaluate keys, in
			// objects closing never saw, that the server's schema does not declare.
			continue
		case "$dynamicRef", "$recursiveRef":
			return nil, fmt.Errorf("%s at %s is not supported", k, where(at))
		case "$schema", "$id":
			if r != roleRoot {
				return nil, fmt.Errorf("%s at %s: embedded schema resources are not supported", k, where(at))
			}
			out[k] = val
		case "$anchor", "$dynamicAnchor":
			if name, ok := val.(string); ok {
				c.anchors[name] = true
			}
			out[k] = val
		case "properties", "patternProperties":
			out[k], err = c.schemaMap(val, kat, roleValue)
		case "$defs", "definitions", "dependentSchemas":
			out[k], err = c.schemaMap(val, kat, roleInPlace)
		case "allOf", "anyOf", "oneOf":
			out[k], err = c.schemaList(val, kat, roleInPlace)
		case "prefixItems":
			out[k], err = c.schemaList(val, kat, roleValue)
		case "items":
			if _, list := val.([]any); list { // 2019-09's tuple form
				out[k], err = c.schemaList(val, kat, roleValue)
			} else {
				out[k], err = c.schema(val, kat, roleValue)
			}
		case "additionalItems", "unevaluatedItems", "contains":
			out[k], err = c.schema(val, kat, roleValue)
		case "not", "if", "then", "else", "propertyNames":
			out[k], err = c.schema(val, kat, roleInPlace)
		case "additionalProperties", "unevaluatedProperties":
			if alwaysTrue(val) && !c.open[at] && !c.keep {
				continue // the server cannot reopen what aegis closes
			}
			out[k], err = c.schema(val, kat, roleValue)
		default:
			if countKeywords[k] {
				val = capCount(val)
			}
			out[k] = val
		}
		if err != nil {
			return nil, err
		}
	}
	if c.open[at] || c.keep {
		return out, nil
	}
	if r == roleRoot || (r == roleValue && !alwaysTrue(m)) {
		if _, ok := out["unevaluatedProperties"]; !ok {
			out["unevaluatedProperties"] = false
		}
	}
	return out, nil
}

func (c *closer) schemaMap(v any, at string, r role) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	out := make(map[string]any, len(m))
	for k, s := range m {
		var err error
		if out[k], err = c.schema(s, at+"/"+escapeToken(k), r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *closer) schemaList(v any, at string, r role) (any, error) {
	list, ok := v.([]any)
	if !ok {
		return v, nil
	}
	out := make([]any, len(list))
	for i, s := range list {
		var err error
		if out[i], err = c.schema(s, at+"/"+strconv.Itoa(i), r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkRef accepts a reference to the root, to a schema position, or to an anchor.
// A reference into anything else (an enum, an unknown keyword) could reach a schema
// that closing never saw, such as an additionalProperties: true that would reopen
// the object.
func (c *closer) checkRef(at, ref string) error {
	frag := ref[1:]
	if frag == "" {
		return nil
	}
	dec, err := url.PathUnescape(frag)
	if err != nil {
		return fmt.Errorf("$ref %s at %s: %v", quoteValue(ref), where(at), err)
	}
	if strings.HasPrefix(dec, "/") {
		if !c.visited[dec] {
			return fmt.Errorf("$ref %s at %s does not point at a schema in the document", quoteValue(ref), where(at))
		}
		return nil
	}
	if !c.anchors[dec] {
		return fmt.Errorf("$ref %s at %s names no anchor in the document", quoteValue(ref), where(at))
	}
	return nil
}

// capCount lowers an integer count above MaxInt32 to MaxInt32: the same bound for
// arguments under 2 GiB, and one the validator reads without wrapping.
func capCount(v any) any {
	n, ok := v.(json.Number)
	if !ok {
		return v
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f <= math.MaxInt32 || f != math.Trunc(f) {
		return v
	}
	return json.Number(strconv.Itoa(math.MaxInt32))
}

func where(at string) string {
	if at == "" {
		return "the root"
	}
	return strconv.Quote(truncate(at, 80))
}

func quoteValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(truncate(s, 80))
	}
	return fmt.Sprintf("%T", v)
}
