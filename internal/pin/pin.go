// Package pin keeps the tool definitions a server listed, so that a server
// cannot change a tool under an approved policy (a "rug pull", DESIGN.md
// R5): the first definition aegis sees of each tool is pinned, and a later
// listing whose input schema differs in anything that shapes the arguments
// holds the tool — hidden from the client and refused when called — until a
// person accepts the new definition (`aegis pins accept`).
//
// Two hashes are kept per tool. The shape hash covers the input schema with
// its annotations (title, description, examples, $comment) removed at every
// schema position: a change there re-asks. The full hash covers the whole
// definition as listed (name, description, schemas, annotations), and is
// evidence: it goes into every chain entry, and a change of it alone is
// recorded in the pin file without holding the tool.
//
// Pins are stored per server in one JSON file, written atomically under an
// advisory lock, so that `aegis pins accept` in another process and a
// running gateway see each other's changes.
package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/aegis-mcp/aegis/internal/args"
)

// Digest is a SHA-256 hash, written as lower-case hex in the pin file.
type Digest [32]byte

func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// MarshalText writes d as hex.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads 64 hex digits.
func (d *Digest) UnmarshalText(b []byte) error {
	if len(b) != 64 {
		return fmt.Errorf("digest %q: want 64 hex digits", b)
	}
	_, err := hex.Decode(d[:], b)
	return err
}

// Domain separators: no hash aegis computes can be confused with another.
const (
	fullDomain  = "aegis.tool.v1\x00"
	shapeDomain = "aegis.tool-shape.v1\x00"
)

// Def is one tool definition as a server listed it.
type Def struct {
	Name string
	// Raw is the definition exactly as listed.
	Raw json.RawMessage
	// InputSchema is the definition's inputSchema, as listed; nil when the
	// definition has none.
	InputSchema json.RawMessage
	Full        Digest
	Shape       Digest
}

// maxDef bounds one tool definition. Servers list schemas of a few KB; a
// definition this large is refused rather than pinned.
const maxDef = 1 << 20

// Parse reads one tool definition of a tools/list result and computes its
// hashes. It fails on a definition that is not a strict JSON object with a
// string name (duplicate keys, invalid UTF-8, numbers without an exact
// value are refused, as for arguments), or whose inputSchema is not an
// object.
func Parse(raw []byte) (*Def, error) {
	var doc args.Doc
	if err := doc.Decode(raw, &args.Limits{MaxBytes: maxDef, MaxDepth: 64, MaxElements: 1 << 16, MaxStringBytes: maxDef}); err != nil {
		return nil, fmt.Errorf("tool definition: %w", err)
	}
	root := doc.Root()
	if root.Kind() != args.Object {
		return nil, errors.New("tool definition: not a JSON object")
	}
	name, ok := root.Lookup("name")
	if !ok || name.Kind() != args.String || name.Str() == "" {
		return nil, errors.New("tool definition: no name")
	}
	d := &Def{Name: name.Str(), Raw: bytes.Clone(raw)}
	// The full hash is over the RFC 8785 form, so that the pin file can
	// hold the definition in any spelling. A definition without one (a
	// number with no exact value) is refused: it could not be re-checked.
	canon, err := root.AppendCanonical(nil)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", d.Name, err)
	}
	h := sha256.New()
	h.Write([]byte(fullDomain))
	h.Write(canon)
	d.Full = Digest(h.Sum(nil))

	schema, ok := root.Lookup("inputSchema")
	var tree any
	if ok {
		if schema.Kind() != args.Object {
			return nil, fmt.Errorf("tool %q: inputSchema is not a JSON object", d.Name)
		}
		d.InputSchema = json.RawMessage(schema.AppendJSON(nil))
		dec := json.NewDecoder(bytes.NewReader(d.InputSchema))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			return nil, fmt.Errorf("tool %q: inputSchema: %w", d.Name, err)
		}
		tree = project(tree)
	}
	shape, err := json.Marshal(tree) // map keys sorted: one spelling per shape
	if err != nil {
		return nil, fmt.Errorf("tool %q: inputSchema: %w", d.Name, err)
	}
	h.Reset()
	h.Write([]byte(shapeDomain))
	h.Write(shape)
	d.Shape = Digest(h.Sum(nil))
	return d, nil
}

// annotations are the JSON Schema keywords that describe a value and never
// constrain it. Removed from the shape, at schema positions only: a property
// that happens to be called "description" is kept.
var annotations = map[string]bool{
	"title": true, "description": true, "examples": true, "$comment": true,
}

// Keywords whose value is a schema, a map of names to schemas, or a list of
// schemas (drafts 4 to 2020-12). A keyword not listed here is kept whole,
// annotations inside it included: an unknown keyword may constrain.
var (
	schemaKeywords = map[string]bool{
		"additionalProperties": true, "additionalItems": true, "items": true,
		"contains": true, "propertyNames": true, "not": true, "if": true,
		"then": true, "else": true, "unevaluatedItems": true,
		"unevaluatedProperties": true, "contentSchema": true,
	}
	schemaMapKeywords = map[string]bool{
		"properties": true, "patternProperties": true, "$defs": true,
		"definitions": true, "dependentSchemas": true,
	}
	schemaListKeywords = map[string]bool{
		"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true,
		"items": true, // draft 4–2019-09: a list of schemas
	}
)

// project returns the schema s without its annotations.
func project(s any) any {
	obj, ok := s.(map[string]any)
	if !ok {
		return s // true, false: boolean schemas
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		switch {
		case annotations[k]:
			continue
		case schemaMapKeywords[k]:
			if m, ok := v.(map[string]any); ok {
				pm := make(map[string]any, len(m))
				for name, sub := range m {
					pm[name] = project(sub)
				}
				out[k] = pm
				continue
			}
		case schemaListKeywords[k]:
			if l, ok := v.([]any); ok {
				pl := make([]any, len(l))
				for i, sub := range l {
					pl[i] = project(sub)
				}
				out[k] = pl
				continue
			}
			if schemaKeywords[k] {
				out[k] = project(v)
				continue
			}
		case schemaKeywords[k]:
			out[k] = project(v)
			continue
		}
		out[k] = v
	}
	return out
}

// names returns the keys of m, sorted.
func names[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
