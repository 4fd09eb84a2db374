package strictyaml

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// ToJSON converts the YAML value n to JSON, the one conversion aegis makes
// wherever YAML carries a JSON value (a pinned field's value in the
// configuration, a call's arguments in a policy test table). file names
// the document in errors.
//
// Scalars mean what they mean everywhere else in aegis: YAML 1.2's core
// schema as go.yaml.in/yaml/v3 resolves it, so True and TRUE are
// booleans, 0x10, 0o20 and 1_6 are the number 16, and ~ is null. A
// timestamp stays the string it was written as. Mapping keys are the text
// of their scalars, in the order written.
//
// ToJSON refuses, with an [*Error] at the offending node, what has no JSON
// meaning or two: .inf and .nan, a duplicate key, a key that is not a
// scalar or is null, an alias, a merge key, a tag other than the core
// ones, a string that is not UTF-8, and nesting deeper than [Decode]
// follows.
func ToJSON(file string, n *yaml.Node) ([]byte, error) {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	c := toJSON{file: file}
	if err := c.value(n, 0); err != nil {
		return nil, err
	}
	return c.out, nil
}

type toJSON struct {
	file string
	out  []byte
}

func (c *toJSON) value(n *yaml.Node, depth int) error {
	if depth > maxDepth {
		return Errorf(c.file, n, "nesting deeper than %d levels", maxDepth)
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return c.scalar(n)
	case yaml.SequenceNode:
		if n.ShortTag() != "!!seq" {
			return Errorf(c.file, n, "unsupported tag %q", n.Tag)
		}
		c.out = append(c.out, '[')
		for i, e := range n.Content {
			if i > 0 {
				c.out = append(c.out, ',')
			}
			if err := c.value(e, depth+1); err != nil {
				return err
			}
		}
		c.out = append(c.out, ']')
		return nil
	case yaml.MappingNode:
		if n.ShortTag() != "!!map" {
			return Errorf(c.file, n, "unsupported tag %q", n.Tag)
		}
		return c.mapping(n, depth)
	case yaml.AliasNode:
		return Errorf(c.file, n, "aliases (*%s) are not supported", n.Value)
	}
	return Errorf(c.file, n, "unsupported YAML value")
}

func (c *toJSON) mapping(n *yaml.Node, depth int) error {
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	c.out = append(c.out, '{')
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge":
			return Errorf(c.file, k, "merge keys (<<) are not supported")
		case k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null":
			return Errorf(c.file, k, "want a string key, got %s", describe(k))
		}
		if first, dup := seen[k.Value]; dup {
			return Errorf(c.file, k, "duplicate key %q (first at line %d)", k.Value, first.Line)
		}
		seen[k.Value] = k
		if i > 0 {
			c.out = append(c.out, ',')
		}
		if err := c.str(k); err != nil {
			return err
		}
		c.out = append(c.out, ':')
		if err := c.value(v, depth+1); err != nil {
			return err
		}
	}
	c.out = append(c.out, '}')
	return nil
}

func (c *toJSON) scalar(n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		c.out = append(c.out, "null"...)
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return Errorf(c.file, n, "want a boolean, got %q", n.Value)
		}
		c.out = strconv.AppendBool(c.out, b)
	case "!!int":
		var v any
		if err := n.Decode(&v); err != nil {
			return Errorf(c.file, n, "want an integer, got %q", n.Value)
		}
		switch v := v.(type) {
		case int:
			c.out = strconv.AppendInt(c.out, int64(v), 10)
		case int64:
			c.out = strconv.AppendInt(c.out, v, 10)
		case uint64:
			c.out = strconv.AppendUint(c.out, v, 10)
		case float64:
			return c.float(n, v)
		default:
			return Errorf(c.file, n, "want an integer, got %q", n.Value)
		}
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return Errorf(c.file, n, "want a number, got %q", n.Value)
		}
		return c.float(n, f)
	case "!!str", "!!timestamp":
		return c.str(n)
	default:
		return Errorf(c.file, n, "unsupported tag %q", n.Tag)
	}
	return nil
}

func (c *toJSON) float(n *yaml.Node, f float64) error {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return Errorf(c.file, n, "number %s has no JSON form", n.Value)
	}
	b, err := json.Marshal(f) // encoding/json's shortest form
	if err != nil {
		return Errorf(c.file, n, "number %s: %v", n.Value, err)
	}
	c.out = append(c.out, b...)
	return nil
}

// str writes n's text as a JSON string, escaping only what JSON requires.
func (c *toJSON) str(n *yaml.Node) error {
	s := n.Value
	if !utf8.ValidString(s) {
		return Errorf(c.file, n, "a string that is not UTF-8")
	}
	const hex = "0123456789abcdef"
	c.out = append(c.out, '"')
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b == '"' || b == '\\':
			c.out = append(c.out, '\\', b)
		case b == '\n':
			c.out = append(c.out, '\\', 'n')
		case b == '\t':
			c.out = append(c.out, '\\', 't')
		case b == '\r':
			c.out = append(c.out, '\\', 'r')
		case b < 0x20:
			c.out = append(c.out, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
		default:
			c.out = append(c.out, b)
		}
	}
	c.out = append(c.out, '"')
	return nil
}
