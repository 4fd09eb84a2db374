package schema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aegis-mcp/aegis/internal/args"
)

// The fast path. Most tool schemas use a handful of keywords (type, properties,
// required, enum, bounds, items) and no in-place applicators, so whether a key is
// evaluated, and so whether closing refuses it, follows from the schema's own
// properties alone. [compileFast] turns such a closed schema into a tree of [fnode]s
// that checks an [args.Value] directly: no map[string]any, no big.Rat, and for a call
// that passes without a format, no allocation.
//
// The fast path only ever says "passes": when it finds anything wrong (or anything it
// is unsure of), the call goes to the validator, which decides and explains. So a
// mistake in it that refuses a good call costs time; one that passes a bad call
// would be a hole, which is why it is built from the compiled schema (the validator's
// own reading of every keyword, format and pattern), why anything outside its subset
// leaves the whole schema on the validator, and why a differential fuzz target holds
// the two to the same decisions.

// fnode is one compiled schema of the fast path.
type fnode struct {
	never   bool // the false schema
	trivial bool // no keyword: any value, whose numbers must still be exact

	types    typeSet // 0: any type
	hasConst bool
	konst    lit
	hasEnum  bool
	enum     []lit

	// strings
	minLen, maxLen int // -1: unset
	pattern        jsonschema.Regexp
	format         func(any) error

	// numbers
	bounds                        boundSet
	min, max, exMin, exMax, multi dec

	// arrays
	minItems, maxItems int // -1: unset
	unique             bool
	items              *fnode // nil: elements are not checked

	// objects
	minProps, maxProps int // -1: unset
	props              []fprop
	byName             map[string]int // index into props, when there are many
	reqMask            uint64         // required properties, as bits of their index
	reqOther           []string       // required names that reqMask cannot hold
	depReq             []depRequired
	rest               restRule // a key props does not declare
	restNode           *fnode   // for restSchema
}

type fprop struct {
	name string
	node *fnode
}

// depRequired is one dependentRequired entry: when key is present, so must requires
// be.
type depRequired struct {
	key      string
	requires []string
}

// restRule is what a member whose key the properties do not declare meets.
type restRule uint8

const (
	restAllow  restRule = iota // not evaluated, nothing closes the object: any value
	restDeny                   // additionalProperties false, or closed by unevaluatedProperties
	restSchema                 // additionalProperties (or unevaluatedProperties) as a schema
)

type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBool
	tNumber
	tInteger
	tString
	tArray
	tObject
)

type boundSet uint8

const (
	bMin boundSet = 1 << iota
	bMax
	bExMin
	bExMax
	bMulti
)

// lit is a value of an enum or const.
type lit struct {
	kind  args.Kind
	b     bool
	s     string
	d     dec
	elems []lit    // Array
	keys  []string // Object, with vals
	vals  []lit
}

// byNameMin is the property count from which a map finds a key faster than a scan.
const byNameMin = 9

// fastCompiler builds the fnodes of one schema.
type fastCompiler struct {
	on map[*jsonschema.Schema]bool // on the current path: a cycle needs a $ref, refused anyway
}

// compileFast returns the fast path for the closed schema s, or nil and the reason it
// has none.
func compileFast(s *jsonschema.Schema) (*fnode, string) {
	c := fastCompiler{on: map[*jsonschema.Schema]bool{}}
	n, err := c.node(s)
	if err != nil {
		return nil, err.Error()
	}
	return n, ""
}

func (c *fastCompiler) node(s *jsonschema.Schema) (*fnode, error) {
	if s.Bool != nil {
		return &fnode{never: !*s.Bool, trivial: *s.Bool}, nil
	}
	if c.on[s] {
		return nil, fmt.Errorf("%s: a cycle", where(position(s)))
	}
	c.on[s] = true
	defer delete(c.on, s)
	if kw := unsupported(s); kw != "" {
		return nil, fmt.Errorf("%s at %s", kw, where(position(s)))
	}
	n := &fnode{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}
	constrained := false
	set := func(dst *int, src *int) {
		if src != nil {
			*dst = *src
			constrained = true
		}
	}

	if s.Types != nil && !s.Types.IsEmpty() {
		for _, t := range s.Types.ToStrings() {
			switch t {
			case "null":
				n.types |= tNull
			case "boolean":
				n.types |= tBool
			case "number":
				n.types |= tNumber
			case "integer":
				n.types |= tInteger
			case "string":
				n.types |= tString
			case "array":
				n.types |= tArray
			case "object":
				n.types |= tObject
			default:
				return nil, fmt.Errorf("type %q at %s", t, where(position(s)))
			}
		}
		constrained = true
	}
	if s.Const != nil {
		l, err := litOf(*s.Const)
		if err != nil {
			return nil, fmt.Errorf("const at %s: %w", where(position(s)), err)
		}
		n.hasConst, n.konst, constrained = true, l, true
	}
	if s.Enum != nil {
		n.hasEnum, constrained = true, true
		for _, v := range s.Enum.Values {
			l, err := litOf(v)
			if err != nil {
				return nil, fmt.Errorf("enum at %s: %w", where(position(s)), err)
			}
			n.enum = append(n.enum, l)
		}
	}
	if s.Format != nil {
		n.format, constrained = s.Format.Validate, true
	}

	set(&n.minLen, s.MinLength)
	set(&n.maxLen, s.MaxLength)
	if s.Pattern != nil {
		n.pattern, constrained = s.Pattern, true
	}

	for _, b := range []struct {
		bit boundSet
		r   *big.Rat
		dst *dec
	}{
		{bMin, s.Minimum, &n.min},
		{bMax, s.Maximum, &n.max},
		{bExMin, s.ExclusiveMinimum, &n.exMin},
		{bExMax, s.ExclusiveMaximum, &n.exMax},
		{bMulti, s.MultipleOf, &n.multi},
	} {
		if b.r == nil {
			continue
		}
		d, ok := decOfRat(b.r)
		if !ok || (b.bit == bMulti && (d.m == 0 || d.neg)) {
			return nil, fmt.Errorf("a numeric bound at %s that is not a short decimal", where(position(s)))
		}
		*b.dst = d
		n.bounds |= b.bit
		constrained = true
	}

	set(&n.minItems, s.MinItems)
	set(&n.maxItems, s.MaxItems)
	if s.UniqueItems {
		n.unique, constrained = true, true
	}
	var items *jsonschema.Schema
	if it, ok := s.Items.(*jsonschema.Schema); ok {
		items = it
	} else if s.Items != nil {
		return nil, fmt.Errorf("items as a list at %s", where(position(s)))
	}
	if s.Items2020 != nil {
		if items != nil {
			return nil, fmt.Errorf("two items at %s", where(position(s)))
		}
		items = s.Items2020
	}
	if items != nil {
		var err error
		if n.items, err = c.node(items); err != nil {
			return nil, err
		}
		constrained = true
	}

	set(&n.minProps, s.MinProperties)
	set(&n.maxProps, s.MaxProperties)
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names) // one layout whatever the map's order
	for _, name := range names {
		p, err := c.node(s.Properties[name])
		if err != nil {
			return nil, err
		}
		n.props = append(n.props, fprop{name: name, node: p})
		constrained = true
	}
	if len(n.props) >= byNameMin {
		n.byName = make(map[string]int, len(n.props))
		for i, p := range n.props {
			n.byName[p.name] = i
		}
	}
	for _, r := range s.Required {
		constrained = true
		if i := n.propIndex(r); i >= 0 && i < 64 {
			n.reqMask |= 1 << i
		} else {
			n.reqOther = append(n.reqOther, r)
		}
	}
	depNames := make([]string, 0, len(s.DependentRequired))
	for name := range s.DependentRequired {
		depNames = append(depNames, name)
	}
	sort.Strings(depNames)
	for _, name := range depNames {
		n.depReq = append(n.depReq, depRequired{key: name, requires: s.DependentRequired[name]})
		constrained = true
	}

	// Which schema a key that properties does not declare meets. With no in-place
	// applicator, properties (and additionalProperties) are all that evaluate a key,
	// so unevaluatedProperties applies to exactly the rest. additionalProperties,
	// when present, evaluates every such key, and unevaluatedProperties then sees
	// none.
	var rest *jsonschema.Schema
	switch a := s.AdditionalProperties.(type) {
	case nil:
		rest = s.UnevaluatedProperties
	case bool:
		n.rest = restDeny
		if a {
			n.rest = restAllow
		}
		constrained = true
	case *jsonschema.Schema:
		rest = a
	default:
		return nil, fmt.Errorf("additionalProperties of type %T at %s", a, where(position(s)))
	}
	if rest != nil {
		r, err := c.node(rest)
		if err != nil {
			return nil, err
		}
		switch {
		case r.never:
			n.rest = restDeny
		case r.trivial:
			n.rest = restAllow
		default:
			n.rest, n.restNode = restSchema, r
		}
		constrained = true
	}
	n.trivial = !constrained
	return n, nil
}

// unsupported names the first keyword of s that the fast path does not implement, or
// "".
func unsupported(s *jsonschema.Schema) string {
	switch {
	case s.DraftVersion < 2019:
		return fmt.Sprintf("draft %d", s.DraftVersion)
	case s.Ref != nil:
		return "$ref"
	case s.RecursiveRef != nil:
		return "$recursiveRef"
	case s.DynamicRef != nil:
		return "$dynamicRef"
	case s.Not != nil:
		return "not"
	case len(s.AllOf) > 0:
		return "allOf"
	case len(s.AnyOf) > 0:
		return "anyOf"
	case len(s.OneOf) > 0:
		return "oneOf"
	case s.If != nil || s.Then != nil || s.Else != nil:
		return "if"
	case s.PropertyNames != nil:
		return "propertyNames"
	case len(s.PatternProperties) > 0:
		return "patternProperties"
	case len(s.Dependencies) > 0:
		return "dependencies"
	case len(s.DependentSchemas) > 0:
		return "dependentSchemas"
	case s.Contains != nil || s.MinContains != nil || s.MaxContains != nil:
		return "contains"
	case s.AdditionalItems != nil:
		return "additionalItems"
	case len(s.PrefixItems) > 0:
		return "prefixItems"
	case s.UnevaluatedItems != nil:
		return "unevaluatedItems"
	case s.ContentEncoding != nil || s.ContentMediaType != nil || s.ContentSchema != nil:
		return "content"
	case len(s.Extensions) > 0:
		return "an extension keyword"
	}
	return ""
}

// litOf converts an enum or const value, as the compiled schema holds it.
func litOf(v any) (lit, error) {
	switch v := v.(type) {
	case nil:
		return lit{kind: args.Null}, nil
	case bool:
		return lit{kind: args.Bool, b: v}, nil
	case string:
		return lit{kind: args.String, s: v}, nil
	case json.Number:
		d, _, ok := parseDec(string(v))
		if !ok {
			return lit{}, fmt.Errorf("number %s with too many digits", truncate(string(v), 40))
		}
		return lit{kind: args.Number, d: d}, nil
	case []any:
		l := lit{kind: args.Array, elems: make([]lit, len(v))}
		for i, e := range v {
			var err error
			if l.elems[i], err = litOf(e); err != nil {
				return lit{}, err
			}
		}
		return l, nil
	case map[string]any:
		l := lit{kind: args.Object}
		for k := range v {
			l.keys = append(l.keys, k)
		}
		sort.Strings(l.keys)
		for _, k := range l.keys {
			e, err := litOf(v[k])
			if err != nil {
				return lit{}, err
			}
			l.vals = append(l.vals, e)
		}
		return l, nil
	}
	return lit{}, fmt.Errorf("value of type %T", v)
}

func (n *fnode) propIndex(name string) int {
	if n.byName != nil {
		if i, ok := n.byName[name]; ok {
			return i
		}
		return -1
	}
	for i := range n.props {
		// Length and first byte first: most names differ there, and then the
		// comparison costs no call.
		if p := n.props[i].name; len(p) == len(name) && (len(p) == 0 || p[0] == name[0]) && p == name {
			return i
		}
	}
	return -1
}

// walker checks one call's arguments against the fast path.
type walker struct {
	repl   map[args.Value]string // numbers a clamp rewrote
	budget int                   // comparison steps left for uniqueItems
	// clamps is the schema whose clamps the walk applies as it meets their
	// members, members of root (Schema.clampInWalk), or nil.
	clamps  *Schema
	root    args.Value
	met     uint64 // bit k: clamp k's member was met and clamped
	changed uint64 // bit k: clamp k rewrote its member
	refused bool   // a clamp refused its member
}

// equalBudget caps the comparison steps of one call's uniqueItems checks, which are
// pairwise: a longer array, or one of large items, goes to the validator, which
// hashes.
const equalBudget = 4096

// valid reports whether the arguments root pass the fast path, with the numbers in
// repl rewritten. false means "ask the validator", never a decision.
func (n *fnode) valid(root args.Value, repl map[args.Value]string) bool {
	w := walker{repl: repl, budget: equalBudget}
	return w.valid(n, root)
}

// number returns the value of the number v: the clamp's text if one rewrote it, which
// is canonical, else v's own text if it has an exact double value.
func (w *walker) number(v args.Value) (dec, bool) {
	if w.repl != nil {
		if t, ok := w.repl[v]; ok {
			d, _, ok := parseDec(t)
			return d, ok
		}
	}
	return exactDec(v.Raw())
}

// exact reports whether every number in v has an exact double value: what the
// validator's conversion requires of values that no schema constrains.
func (w *walker) exact(v args.Value) bool {
	switch v.Kind() {
	case args.Null, args.Bool, args.String:
		return true
	case args.Number:
		_, ok := w.number(v)
		return ok
	case args.Array:
		for i := range v.Len() {
			if !w.exact(v.Index(i)) {
				return false
			}
		}
		return true
	case args.Object:
		for i := range v.Len() {
			if _, e := v.Member(i); !w.exact(e) {
				return false
			}
		}
		return true
	}
	return false
}

func (w *walker) valid(n *fnode, v args.Value) bool {
	if n.never {
		return false
	}
	if n.trivial {
		return w.exact(v)
	}
	k := v.Kind()
	var d dec
	if k == args.Number {
		var ok bool
		if d, ok = w.number(v); !ok {
			return false
		}
	}
	if n.types != 0 && !n.types.has(k, d) {
		return false
	}
	if n.hasConst && !w.equalLit(v, d, &n.konst) {
		return false
	}
	if n.hasEnum {
		found := false
		for i := range n.enum {
			if w.equalLit(v, d, &n.enum[i]) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	switch k {
	case args.Null, args.Bool:
		return true
	case args.String:
		if n.minLen < 0 && n.maxLen < 0 && n.pattern == nil && n.format == nil {
			return true // validString would pass it without reading it
		}
		return n.validString(v.Str())
	case args.Number:
		return n.validNumber(d)
	case args.Array:
		return w.validArray(n, v)
	case args.Object:
		return w.validObject(n, v)
	}
	return false
}

func (t typeSet) has(k args.Kind, d dec) bool {
	switch k {
	case args.Null:
		return t&tNull != 0
	case args.Bool:
		return t&tBool != 0
	case args.Number:
		return t&tNumber != 0 || (t&tInteger != 0 && d.isInt())
	case args.String:
		return t&tString != 0
	case args.Array:
		return t&tArray != 0
	case args.Object:
		return t&tObject != 0
	}
	return false
}

func (n *fnode) validString(s string) bool {
	if n.minLen >= 0 || n.maxLen >= 0 {
		l := utf8.RuneCountInString(s)
		if (n.minLen >= 0 && l < n.minLen) || (n.maxLen >= 0 && l > n.maxLen) {
			return false
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		return false
	}
	if n.format != nil && n.format(s) != nil {
		return false
	}
	return true
}

func (n *fnode) validNumber(d dec) bool {
	b := n.bounds
	if b == 0 {
		return true
	}
	return (b&bMin == 0 || cmpDec(d, n.min) >= 0) &&
		(b&bMax == 0 || cmpDec(d, n.max) <= 0) &&
		(b&bExMin == 0 || cmpDec(d, n.exMin) > 0) &&
		(b&bExMax == 0 || cmpDec(d, n.exMax) < 0) &&
		(b&bMulti == 0 || d.multipleOf(n.multi))
}

func (w *walker) validArray(n *fnode, v args.Value) bool {
	l := v.Len()
	if (n.minItems >= 0 && l < n.minItems) || (n.maxItems >= 0 && l > n.maxItems) {
		return false
	}
	if n.unique && l > 1 {
		for i := 1; i < l; i++ {
			for j := range i {
				if eq, sure := w.equal(v.Index(i), v.Index(j)); eq || !sure {
					return false
				}
			}
		}
	}
	for i := range l {
		e := v.Index(i)
		if n.items != nil {
			if !w.valid(n.items, e) {
				return false
			}
		} else if !w.exact(e) {
			return false
		}
	}
	return true
}

func (w *walker) validObject(n *fnode, v args.Value) bool {
	l := v.Len()
	if (n.minProps >= 0 && l < n.minProps) || (n.maxProps >= 0 && l > n.maxProps) {
		return false
	}
	var seen uint64
	for key, e := range v.Members() {
		if p := n.propIndex(key); p >= 0 {
			if p < 64 {
				seen |= 1 << p
			}
			if w.clamps != nil && p < 64 && w.clamps.clampProps&(1<<p) != 0 && n == w.clamps.fast && v == w.root && !w.clampMember(p, e) {
				return false
			}
			if !w.valid(n.props[p].node, e) {
				return false
			}
			continue
		}
		switch n.rest {
		case restDeny:
			return false
		case restSchema:
			if !w.valid(n.restNode, e) {
				return false
			}
		default:
			if !w.exact(e) {
				return false
			}
		}
	}
	if seen&n.reqMask != n.reqMask {
		return false
	}
	for _, r := range n.reqOther {
		if _, ok := v.Lookup(r); !ok {
			return false
		}
	}
	for _, dr := range n.depReq {
		if _, ok := v.Lookup(dr.key); !ok {
			continue
		}
		for _, r := range dr.requires {
			if _, ok := v.Lookup(r); !ok {
				return false
			}
		}
	}
	return true
}

// equalLit reports whether v (whose value is d if it is a number) equals l as the
// validator compares: numbers by value, objects whatever their order. Unsure is false.
func (w *walker) equalLit(v args.Value, d dec, l *lit) bool {
	k := v.Kind()
	if k != l.kind {
		return false
	}
	switch k {
	case args.Null:
		return true
	case args.Bool:
		return (v.Raw() == "true") == l.b
	case args.String:
		return v.Str() == l.s
	case args.Number:
		return d == l.d
	case args.Array:
		if v.Len() != len(l.elems) {
			return false
		}
		for i := range l.elems {
			if !w.equalLitValue(v.Index(i), &l.elems[i]) {
				return false
			}
		}
		return true
	case args.Object:
		if v.Len() != len(l.keys) {
			return false
		}
		// Keys are unique in both, so the same count and every key found is the
		// same set.
		for i, key := range l.keys {
			e, ok := v.Lookup(key)
			if !ok || !w.equalLitValue(e, &l.vals[i]) {
				return false
			}
		}
		return true
	}
	return false
}

func (w *walker) equalLitValue(v args.Value, l *lit) bool {
	var d dec
	if v.Kind() == args.Number {
		var ok bool
		if d, ok = w.number(v); !ok {
			return false
		}
	}
	return w.equalLit(v, d, l)
}

// equal compares two values of the arguments as the validator does. sure is false
// when the comparison ran out of budget or met a number it cannot read: uniqueItems
// then leaves the call to the validator.
func (w *walker) equal(a, b args.Value) (eq, sure bool) {
	if w.budget--; w.budget < 0 {
		return false, false
	}
	k := a.Kind()
	if k != b.Kind() {
		return false, true
	}
	switch k {
	case args.Null:
		return true, true
	case args.Bool:
		return a.Raw() == b.Raw(), true
	case args.String:
		sa, sb := a.Str(), b.Str()
		if w.budget -= len(sa) / 64; w.budget < 0 {
			return false, false // long strings: the validator hashes them
		}
		return sa == sb, true
	case args.Number:
		da, ok1 := w.number(a)
		db, ok2 := w.number(b)
		if !ok1 || !ok2 {
			return false, false
		}
		return da == db, true
	case args.Array:
		if a.Len() != b.Len() {
			return false, true
		}
		for i := range a.Len() {
			if eq, sure := w.equal(a.Index(i), b.Index(i)); !eq || !sure {
				return false, sure
			}
		}
		return true, true
	case args.Object:
		if a.Len() != b.Len() {
			return false, true
		}
		for i := range a.Len() {
			key, ea := a.Member(i)
			if w.budget -= b.Len(); w.budget < 0 {
				return false, false // Lookup scans b
			}
			eb, ok := b.Lookup(key)
			if !ok {
				return false, true
			}
			if eq, sure := w.equal(ea, eb); !eq || !sure {
				return false, sure
			}
		}
		return true, true
	}
	return false, false
}
