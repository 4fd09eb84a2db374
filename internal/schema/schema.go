package schema

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aegis-mcp/aegis/internal/args"
)

// Schema is a compiled, closed input schema with its clamps. It is immutable and safe
// for concurrent use. The nil *Schema denies every call.
type Schema struct {
	sch      *jsonschema.Schema // closed
	unclosed *jsonschema.Schema // as declared, for explaining a denial
	fast     *fnode             // nil: every call goes to the validator
	slowWhy  string             // why fast is nil
	clamps   []clamp
	limits   *args.Limits
	// clampInWalk is set when every clamp is on a member that the fast path's root
	// declares: the fast walk then clamps each as it meets it (see [walker]).
	clampInWalk bool
	clampProps  uint64 // with clampInWalk: bit p when a clamp is on props[p] of the fast root

	// defaults remembers Default's answers (a pointer: a Schema may be
	// copied).
	defaults *defaultCache
}

// Options configures [Compile]. The zero value (or nil) closes every object, clamps
// nothing and decodes arguments with the default [args.Limits].
type Options struct {
	// Clamp maps an argument, named by a JSON Pointer with the "*" wildcard of
	// [args.Pointer] ("/limit", "/pages/*/size"), to the range its numbers are clamped
	// into before validation. A value outside the range is rewritten to the nearest
	// bound; a value at that pointer that is not a number (a string, a boolean, an
	// array or an object) is denied, and null is left to the schema (it means what an
	// absent field means, which a clamp cannot prevent). Compile fails on a pointer the
	// schema allows no value at, and on a range that the schema's own type and bounds
	// make useless. Empty means no clamps.
	Clamp map[string]Range
	// Open names argument objects (JSON Pointers as for Clamp; "" is the arguments
	// object) to leave as the server declared them: no unevaluatedProperties is added
	// to the schemas there and no additionalProperties: true is removed, so an object
	// declared free-form ({"type":"object"}, or Python's dict[str, Any]) accepts any
	// member. The objects inside the members are still closed. Compile fails on a
	// pointer the schema allows no value at. Empty means every object is closed.
	Open []string
	// Limits caps the decoding of the arguments in [Schema.Check], and its MaxDepth
	// bounds the evaluation cost that Compile accepts. Nil means the defaults.
	Limits *args.Limits
}

// Range bounds a clamped number. A nil bound is not enforced; at least one must be
// set.
type Range struct {
	Min, Max *float64
}

// Ceiling returns the Range of the numbers up to max.
func Ceiling(max float64) Range { return Range{Max: &max} }

// Between returns the Range from min to max, both included.
func Between(min, max float64) Range { return Range{Min: &min, Max: &max} }

type clamp struct {
	ptr      args.Pointer
	min, max float64 // ±Inf when unset
	minText  string  // the bounds as JSON numbers
	maxText  string
	// member is the key of the arguments' member that ptr names when ptr is one
	// token and not "*" ("/limit"); then the clamp reads the arguments object's
	// members itself, as ptr.SelectExact would, instead of walking ptr.
	member      string
	isTopMember bool
	prop        int // with clampInWalk: the index of member in the fast root's props
}

// ErrCompile is wrapped by every error [Compile] returns: the tool's calls must all be
// denied, with the error as the reason.
var ErrCompile = errors.New("input schema refused")

// schemaLimits are the decoding limits of a schema, those package pin applies to a
// whole tool definition.
var schemaLimits = args.Limits{MaxBytes: 1 << 20, MaxDepth: 64, MaxElements: 1 << 16, MaxStringBytes: 1 << 20}

// resourceURL names the schema inside the validator. Only fragments of it are ever
// resolved: the loader refuses every other URL.
const resourceURL = "urn:aegis:input-schema"

// Compile closes and compiles a tool's inputSchema (a JSON object) with o, which may
// be nil. Compilation is the expensive step: callers compile once per pinned
// definition ([Cache]). The error wraps [ErrCompile] and says what was refused, naming
// the schema location (a JSON Pointer into inputSchema) or the option.
func Compile(inputSchema []byte, o *Options) (*Schema, error) {
	s, err := compile(inputSchema, o)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrCompile, oneLine(err.Error(), 400))
	}
	return s, nil
}

func compile(inputSchema []byte, o *Options) (*Schema, error) {
	if o == nil {
		o = &Options{}
	}
	var doc args.Doc
	if err := doc.Decode(inputSchema, &schemaLimits); err != nil {
		return nil, fmt.Errorf("not a strict JSON object: %w", err)
	}
	raw, v := toTree(doc.Root(), nil)
	if v != nil {
		v.settle()
		return nil, fmt.Errorf("at %s: %s", where(v.Pointer), v.Message)
	}
	draft, err := draftOf(raw.(map[string]any))
	if err != nil {
		return nil, err
	}
	if draft < 2019 {
		if raw, err = translate(raw, draft, ""); err != nil {
			return nil, err
		}
	}

	// The schema as the server declared it, normalised but not closed: it finds the
	// positions of the open objects, and tells a value the server would refuse from a
	// key that only closing refuses when a call is denied.
	u := closer{keep: true, visited: map[string]bool{}, anchors: map[string]bool{}}
	kept, err := u.close(raw)
	if err != nil {
		return nil, err
	}
	unclosed, err := build(kept)
	if err != nil {
		return nil, err
	}
	open := map[string]bool{}
	for _, p := range o.Open {
		toks, err := parsePointer(p)
		if err != nil {
			return nil, fmt.Errorf("open %q: %w", p, err)
		}
		found := reach(unclosed, toks)
		if len(found) == 0 {
			return nil, fmt.Errorf("open %q: the schema allows no value there", p)
		}
		for _, f := range found {
			open[position(f)] = true
		}
	}
	c := closer{open: open, visited: map[string]bool{}, anchors: map[string]bool{}}
	closed, err := c.close(raw)
	if err != nil {
		return nil, err
	}
	sch, err := build(closed)
	if err != nil {
		return nil, err
	}
	depth := args.DefaultMaxDepth
	if o.Limits != nil && o.Limits.MaxDepth > 0 {
		depth = o.Limits.MaxDepth
	}
	if err := checkCost(sch, depth); err != nil {
		return nil, err
	}
	s := &Schema{sch: sch, unclosed: unclosed, limits: o.Limits, defaults: new(defaultCache)}
	s.fast, s.slowWhy = compileFast(sch)
	if s.clamps, err = compileClamps(sch, o.Clamp); err != nil {
		return nil, err
	}
	s.planClampInWalk()
	return s, nil
}

// planClampInWalk sets clampInWalk when the fast path can clamp as it walks: every
// clamp (of at most 64) is on one member of the arguments that the fast path's root
// declares.
func (s *Schema) planClampInWalk() {
	if s.fast == nil || len(s.clamps) == 0 || len(s.clamps) > 64 {
		return
	}
	for i := range s.clamps {
		c := &s.clamps[i]
		if !c.isTopMember {
			return
		}
		if c.prop = s.fast.propIndex(c.member); c.prop < 0 || c.prop >= 64 {
			return
		}
	}
	for i := range s.clamps {
		s.clampProps |= 1 << s.clamps[i].prop
	}
	s.clampInWalk = true
}

// build compiles a closed (or translated) tree with the validator.
func build(tree any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseAll{})
	if err := c.AddResource(resourceURL, tree); err != nil {
		return nil, err
	}
	return c.Compile(resourceURL)
}

// refuseAll is the validator's loader: aegis checks arguments against the definition
// it pinned, so nothing may be fetched, and a schema naming another document is
// refused whole.
type refuseAll struct{}

func (refuseAll) Load(u string) (any, error) {
	return nil, fmt.Errorf("schema %q is outside the tool definition; aegis loads no schema", truncate(u, 80))
}

// position returns the JSON Pointer into the (translated) schema document of a
// compiled schema, from its location "urn:aegis:input-schema#/properties/a%20b".
func position(s *jsonschema.Schema) string {
	_, frag, _ := strings.Cut(s.Location, "#")
	if p, err := url.PathUnescape(frag); err == nil {
		return p
	}
	return frag
}

func compileClamps(sch *jsonschema.Schema, m map[string]Range) ([]clamp, error) {
	ptrs := make([]string, 0, len(m))
	for p := range m {
		ptrs = append(ptrs, p)
	}
	sort.Strings(ptrs) // one order for the clamped list, whatever the map's
	var out []clamp
	for _, p := range ptrs {
		r := m[p]
		c := clamp{min: math.Inf(-1), max: math.Inf(1)}
		if r.Min == nil && r.Max == nil {
			return nil, fmt.Errorf("clamp %q: no bound set", p)
		}
		if r.Min != nil {
			c.min = *r.Min
		}
		if r.Max != nil {
			c.max = *r.Max
		}
		if math.IsNaN(c.min) || math.IsNaN(c.max) || (r.Min != nil && math.IsInf(c.min, 0)) || (r.Max != nil && math.IsInf(c.max, 0)) {
			return nil, fmt.Errorf("clamp %q: bounds must be finite numbers", p)
		}
		if c.min > c.max {
			return nil, fmt.Errorf("clamp %q: minimum %v is above maximum %v", p, c.min, c.max)
		}
		c.minText, c.maxText = numberText(c.min), numberText(c.max)
		var err error
		if c.ptr, err = args.ParsePointer(p); err != nil {
			return nil, fmt.Errorf("clamp %q: %w", p, err)
		}
		toks, err := parsePointer(p)
		if err != nil {
			return nil, fmt.Errorf("clamp %q: %w", p, err)
		}
		if len(toks) == 0 {
			return nil, fmt.Errorf("clamp %q: the arguments object is not a number", p)
		}
		if len(toks) == 1 && !toks[0].wild {
			c.member, c.isTopMember = toks[0].name, true
		}
		found := reach(sch, toks)
		if len(found) == 0 {
			return nil, fmt.Errorf("clamp %q: the schema allows no value there", p)
		}
		if err := checkRange(found, r); err != nil {
			return nil, fmt.Errorf("clamp %q: %w", p, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// oneLine joins the lines of a (validator's) message and caps its length.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	return truncate(s, max)
}

// truncate caps s at max bytes, cutting at a rune boundary and marking the cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
