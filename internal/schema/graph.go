package schema

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// token is one reference token of a pointer: a name, "*", or both a name and an array
// index ("0" names both a member and an element).
type token struct {
	name  string
	index int // -1 if the token is not an array index
	wild  bool
}

// parsePointer splits an RFC 6901 pointer with the "*" wildcard, as args.ParsePointer
// reads it.
func parsePointer(p string) ([]token, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, errors.New("a JSON Pointer must be empty or start with '/'")
	}
	var toks []token
	for raw := range strings.SplitSeq(p[1:], "/") {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(raw, "~0", ""), "~1", ""), "~") {
			return nil, errors.New("'~' must be followed by 0 or 1")
		}
		name := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		toks = append(toks, token{name: name, index: arrayIndex(name), wild: raw == "*"})
	}
	return toks, nil
}

// arrayIndex returns the array index an RFC 6901 token names ("0", or digits without
// a leading zero), or -1.
func arrayIndex(t string) int {
	if t == "" || len(t) > 9 || (t[0] == '0' && len(t) > 1) {
		return -1
	}
	n := 0
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return -1
		}
		n = n*10 + int(t[i]-'0')
	}
	return n
}

// inPlace calls fn for each subschema that applies to the value s applies to.
func inPlace(s *jsonschema.Schema, fn func(*jsonschema.Schema)) {
	one := func(c *jsonschema.Schema) {
		if c != nil {
			fn(c)
		}
	}
	one(s.Ref)
	one(s.RecursiveRef)
	if s.DynamicRef != nil {
		one(s.DynamicRef.Ref)
	}
	for _, c := range s.AllOf {
		one(c)
	}
	for _, c := range s.AnyOf {
		one(c)
	}
	for _, c := range s.OneOf {
		one(c)
	}
	one(s.Not)
	one(s.If)
	one(s.Then)
	one(s.Else)
	for _, c := range s.DependentSchemas {
		one(c)
	}
	for _, d := range s.Dependencies {
		if c, ok := d.(*jsonschema.Schema); ok {
			one(c)
		}
	}
	one(s.PropertyNames) // applies to the keys, but at this depth
}

// children calls fn for each subschema that applies to a member or element of the
// value s applies to.
func children(s *jsonschema.Schema, fn func(*jsonschema.Schema)) {
	one := func(c *jsonschema.Schema) {
		if c != nil {
			fn(c)
		}
	}
	for _, c := range s.Properties {
		one(c)
	}
	for _, c := range s.PatternProperties {
		one(c)
	}
	if c, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		one(c)
	}
	one(s.UnevaluatedProperties)
	switch items := s.Items.(type) {
	case *jsonschema.Schema:
		one(items)
	case []*jsonschema.Schema:
		for _, c := range items {
			one(c)
		}
	}
	if c, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
		one(c)
	}
	for _, c := range s.PrefixItems {
		one(c)
	}
	one(s.Items2020)
	one(s.UnevaluatedItems)
	one(s.Contains)
	one(s.ContentSchema)
}

// child calls fn for each subschema of s that may apply to the member or element t.
// It over-approximates (additionalProperties is offered even when a sibling branch
// declares the name), which is what a check that something may apply there needs.
func child(s *jsonschema.Schema, t token, fn func(*jsonschema.Schema)) {
	if t.wild {
		children(s, func(c *jsonschema.Schema) {
			if c != s.Contains && c != s.ContentSchema {
				fn(c)
			}
		})
		return
	}
	matched := false
	if c, ok := s.Properties[t.name]; ok {
		fn(c)
		matched = true
	}
	for re, c := range s.PatternProperties {
		if re.MatchString(t.name) {
			fn(c)
			matched = true
		}
	}
	if !matched {
		if c, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			fn(c)
		}
	}
	if s.UnevaluatedProperties != nil {
		fn(s.UnevaluatedProperties)
	}
	if t.index < 0 {
		return
	}
	switch items := s.Items.(type) {
	case *jsonschema.Schema:
		fn(items)
	case []*jsonschema.Schema:
		if t.index < len(items) {
			fn(items[t.index])
		} else if c, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
			fn(c)
		}
	}
	if t.index < len(s.PrefixItems) {
		fn(s.PrefixItems[t.index])
	} else if s.Items2020 != nil {
		fn(s.Items2020)
	}
	if s.UnevaluatedItems != nil {
		fn(s.UnevaluatedItems)
	}
}

// isFalse reports the schema that allows nothing.
func isFalse(s *jsonschema.Schema) bool { return s.Bool != nil && !*s.Bool }

// reach returns the schemas that may apply, each as a value's own schema, to the
// value at the pointer toks: the schemas of which the validator could evaluate one
// there. An empty result means no value is allowed there.
func reach(root *jsonschema.Schema, toks []token) []*jsonschema.Schema {
	cur := []*jsonschema.Schema{root}
	for _, t := range toks {
		seen := map[*jsonschema.Schema]bool{}
		var next []*jsonschema.Schema
		for _, s := range cur {
			closure(s, func(e *jsonschema.Schema) {
				child(e, t, func(c *jsonschema.Schema) {
					if !isFalse(c) && !seen[c] {
						seen[c] = true
						next = append(next, c)
					}
				})
			})
		}
		cur = next
	}
	out := cur[:0]
	for _, s := range cur {
		if !isFalse(s) {
			out = append(out, s)
		}
	}
	return out
}

// closure calls fn for s and every schema in place under it, once each.
func closure(s *jsonschema.Schema, fn func(*jsonschema.Schema)) {
	seen := map[*jsonschema.Schema]bool{}
	stack := []*jsonschema.Schema{s}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[e] || isFalse(e) {
			continue
		}
		seen[e] = true
		fn(e)
		inPlace(e, func(c *jsonschema.Schema) { stack = append(stack, c) })
	}
}

// checkRange refuses a clamp range that none of the schemas found at its pointer can
// hold: every value it produces would be denied anyway, so the configuration is wrong.
// Each schema is judged with its unconditional in-place parts ($ref, allOf); anyOf and
// the like are left to validation, which runs after clamping.
func checkRange(found []*jsonschema.Schema, r Range) error {
	var first error
	for _, s := range found {
		err := rangeFits(s, r)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

func rangeFits(s *jsonschema.Schema, r Range) error {
	seen := map[*jsonschema.Schema]bool{}
	var check func(e *jsonschema.Schema) error
	check = func(e *jsonschema.Schema) error {
		if seen[e] {
			return nil
		}
		seen[e] = true
		if e.Types != nil && !e.Types.IsEmpty() {
			ts := e.Types.ToStrings()
			num, integer := false, false
			for _, t := range ts {
				num = num || t == "number"
				integer = integer || t == "integer"
			}
			if !num && !integer {
				return fmt.Errorf("the schema says the value is %s, not a number", strings.Join(ts, " or "))
			}
			if !num {
				for _, b := range []*float64{r.Min, r.Max} {
					if b != nil && *b != math.Trunc(*b) {
						return fmt.Errorf("bound %v is not an integer, and the schema says the value is one", *b)
					}
				}
			}
		}
		for _, b := range []*float64{r.Min, r.Max} {
			if b == nil {
				continue
			}
			x := new(big.Rat).SetFloat64(*b)
			switch {
			case e.Maximum != nil && x.Cmp(e.Maximum) > 0:
				return fmt.Errorf("bound %v is above the schema's maximum %s", *b, ratText(e.Maximum))
			case e.ExclusiveMaximum != nil && x.Cmp(e.ExclusiveMaximum) >= 0:
				return fmt.Errorf("bound %v is not below the schema's exclusiveMaximum %s", *b, ratText(e.ExclusiveMaximum))
			case e.Minimum != nil && x.Cmp(e.Minimum) < 0:
				return fmt.Errorf("bound %v is below the schema's minimum %s", *b, ratText(e.Minimum))
			case e.ExclusiveMinimum != nil && x.Cmp(e.ExclusiveMinimum) <= 0:
				return fmt.Errorf("bound %v is not above the schema's exclusiveMinimum %s", *b, ratText(e.ExclusiveMinimum))
			case e.MultipleOf != nil && !new(big.Rat).Quo(x, e.MultipleOf).IsInt():
				return fmt.Errorf("bound %v is not a multiple of the schema's multipleOf %s", *b, ratText(e.MultipleOf))
			}
		}
		for _, c := range append([]*jsonschema.Schema{e.Ref}, e.AllOf...) {
			if c != nil && !isFalse(c) {
				if err := check(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return check(s)
}

// maxCost bounds the schema evaluations that validating one path of the arguments,
// from the root to a leaf at the deepest depth, may take. A tree-shaped schema costs
// about its size; one whose in-place branches reach the same subschema twice per
// level costs 2^depth and would let a server stall every call.
const maxCost = 1 << 20

// maxWalk bounds the recursion of the cost walk, so that a long chain of references
// cannot exhaust the stack.
const maxWalk = 100_000

var errTooComplex = errors.New("the schema is too complex: its evaluation could grow exponentially with the depth of the arguments")

// checkCost refuses a schema whose evaluation cost is over maxCost, and one with an
// in-place reference cycle (the validator would refuse every value reaching it).
//
// cost(s, d) = 1 + Σ cost(in-place c, d) + Σ cost(child c, d-1) for d > 0: an upper
// bound, since every child is counted though a member matches only some.
func checkCost(root *jsonschema.Schema, depth int) error {
	w := costWalk{memo: map[*jsonschema.Schema][]uint64{}, on: map[costKey]bool{}, depth: depth}
	c, err := w.cost(root, depth)
	if err != nil {
		return err
	}
	if c > maxCost {
		return errTooComplex
	}
	return nil
}

type costKey struct {
	s *jsonschema.Schema
	d int
}

type costWalk struct {
	memo  map[*jsonschema.Schema][]uint64 // cost by depth, 0 = not computed
	on    map[costKey]bool                // on the current in-place path
	depth int
	calls int
}

func (w *costWalk) cost(s *jsonschema.Schema, d int) (uint64, error) {
	if s.Bool != nil {
		return 1, nil
	}
	m := w.memo[s]
	if m == nil {
		m = make([]uint64, w.depth+1)
		w.memo[s] = m
	}
	if m[d] != 0 {
		return m[d], nil
	}
	k := costKey{s, d}
	if w.on[k] {
		return 0, fmt.Errorf("the schema at %s refers to itself in place (a $ref cycle that consumes no part of the arguments)", where(position(s)))
	}
	w.calls++
	if w.calls > maxWalk {
		return 0, errTooComplex
	}
	w.on[k] = true
	defer delete(w.on, k)
	total := uint64(1)
	var err error
	add := func(c *jsonschema.Schema, d int) {
		if err != nil {
			return
		}
		var n uint64
		if n, err = w.cost(c, d); err == nil {
			total = min(total+n, maxCost+1)
		}
	}
	inPlace(s, func(c *jsonschema.Schema) { add(c, d) })
	if d > 0 {
		children(s, func(c *jsonschema.Schema) { add(c, d-1) })
	}
	if err != nil {
		return 0, err
	}
	m[d] = total
	return total, nil
}
