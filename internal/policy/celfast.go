package policy

import (
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// This file evaluates the common conditions without cel-go: a checked
// expression made only of the subset below is compiled to Go closures
// over celVars, which run in tens of nanoseconds and allocate nothing,
// where cel-go takes microseconds, most of them in tracking the cost.
//
// The subset: the string, int and bool fields of cap and call, the lists
// call.roles and cap.argv, string, int and bool literals, lists of string
// or int literals; ==, != on strings, ints and bools; <, <=, >, >= on ints
// and strings; startsWith, endsWith, contains; matches with a literal
// pattern; size of a string or list; in; indexing a list; &&, ||, ! and
// the ternary; the exists and all macros over lists of strings, nested up
// to maxLoopDepth. Anything else (exists_one, map, filter, has(), the
// strings extension, arithmetic, doubles, uints, dyn) leaves the condition
// to cel-go whole.
//
// A closure never decides an error: where cel-go could fail (an index out
// of range) or could exceed celCostLimit, it gives up (ok false) and the
// condition is evaluated by cel-go, which makes the error, absorbs it in
// && and || as CEL does, and reports it. So the fast path only has to give
// cel-go's value where cel-go gives a value, and to give up wherever cel-go
// might not: it charges every node it evaluates an upper bound of what
// cel-go's cost tracker charges for it (interpreter/runtimecost.go: sizes
// are byte lengths, never less than cel-go's rune counts, and every node
// costs one more), and gives up as soon as the sum passes the limit; the
// work of a string function is charged before it is done. The bound is
// enforced: no evaluation, fast or not, runs past celCostLimit.
// TestFastDifferential and FuzzFastCondition (celfast_test.go) hold the
// fast evaluation to cel-go, value for value and its bound to cel-go's
// actual cost.

type (
	fastBool    func(*celVars) (bool, bool)
	fastString  func(*celVars) (string, bool)
	fastInt     func(*celVars) (int64, bool)
	fastStrings func(*celVars) ([]string, bool)
	fastInts    func(*celVars) ([]int64, bool)
)

// charge adds n to the cost of the evaluation and reports whether it is
// still within celCostLimit.
func (v *celVars) charge(n uint64) bool {
	if v.cost += n; v.cost < n {
		v.cost = math.MaxUint64
	}
	return v.cost <= celCostLimit
}

// traversal is cel-go's cost of traversing a string of n bytes.
func traversal(n int) uint64 {
	return uint64(math.Ceil(float64(n) * common.StringTraversalCostFactor))
}

// mulSat multiplies without overflowing.
func mulSat(x, y uint64) uint64 {
	if y != 0 && x > math.MaxUint64/y {
		return math.MaxUint64
	}
	return x * y
}

// compileFast compiles the checked condition a, or returns nil when it is
// outside the subset. The caller MUST zero v.cost before each evaluation.
func compileFast(a *celast.AST) fastBool {
	c := fastCompiler{a: a}
	return c.boolean(a.Expr())
}

type fastCompiler struct {
	a     *celast.AST
	scope []loopVars // the comprehensions around the expression compiled
}

// loopVars names the variables of a comprehension.
type loopVars struct{ iter, accu string }

// maxLoopDepth bounds the nesting of comprehensions the fast evaluation
// takes.
const maxLoopDepth = 4

// celLoop holds the variables of the comprehensions being evaluated, by
// depth.
type celLoop struct {
	iter [maxLoopDepth]string
	accu [maxLoopDepth]bool
}

// local finds a comprehension variable as cel-go does: the innermost
// comprehension first, and in it the accumulator first.
func (c *fastCompiler) local(name string) (depth int, accu, ok bool) {
	for d := len(c.scope) - 1; d >= 0; d-- {
		switch name {
		case c.scope[d].accu:
			return d, true, true
		case c.scope[d].iter:
			return d, false, true
		}
	}
	return 0, false, false
}

func (c *fastCompiler) kind(e celast.Expr) types.Kind {
	t := c.a.GetType(e.ID())
	if t == nil {
		return types.UnspecifiedKind
	}
	return t.Kind()
}

// listOf returns the element kind of a list-typed expression.
func (c *fastCompiler) listOf(e celast.Expr) types.Kind {
	t := c.a.GetType(e.ID())
	if t == nil || t.Kind() != types.ListKind || len(t.Parameters()) != 1 {
		return types.UnspecifiedKind
	}
	return t.Parameters()[0].Kind()
}

// call returns the call of e and its single overload, or false.
func (c *fastCompiler) call(e celast.Expr) (celast.CallExpr, string, bool) {
	if e.Kind() != celast.CallKind {
		return nil, "", false
	}
	ids := c.a.GetOverloadIDs(e.ID())
	if len(ids) != 1 {
		return nil, "", false
	}
	return e.AsCall(), ids[0], true
}

// operands returns the operands of a call, the target first, if there are
// n of them.
func operands(call celast.CallExpr, n int) []celast.Expr {
	var ops []celast.Expr
	if call.IsMemberFunction() {
		ops = append(ops, call.Target())
	}
	ops = append(ops, call.Args()...)
	if len(ops) != n {
		return nil
	}
	return ops
}

// field returns the variable and field a selection names.
func (c *fastCompiler) field(e celast.Expr) (string, bool) {
	if e.Kind() != celast.SelectKind {
		return "", false
	}
	sel := e.AsSelect()
	op := sel.Operand()
	if sel.IsTestOnly() || op.Kind() != celast.IdentKind {
		return "", false
	}
	ref, ok := c.a.ReferenceMap()[op.ID()]
	name := op.AsIdent()
	if _, _, local := c.local(name); local {
		return "", false
	}
	if !ok || ref.Name != name || len(ref.OverloadIDs) != 0 || ref.Value != nil {
		return "", false
	}
	t := c.a.GetType(op.ID())
	switch {
	case name == "cap" && t != nil && t.TypeName() == "policy.celCap":
	case name == "call" && t != nil && t.TypeName() == "policy.celCall":
	default:
		return "", false
	}
	return name + "." + sel.FieldName(), true
}

func (c *fastCompiler) boolean(e celast.Expr) fastBool {
	if c.kind(e) != types.BoolKind {
		return nil
	}
	switch e.Kind() {
	case celast.LiteralKind:
		b, ok := e.AsLiteral().(types.Bool)
		if !ok {
			return nil
		}
		return func(v *celVars) (bool, bool) { return bool(b), v.charge(1) }
	case celast.SelectKind:
		name, ok := c.field(e)
		if !ok {
			return nil
		}
		switch name {
		case "call.taint":
			return func(v *celVars) (bool, bool) { return v.req.Taint, v.charge(2) }
		case "cap.shell":
			return func(v *celVars) (bool, bool) { return v.c != nil && v.c.Shell, v.charge(2) }
		case "cap.subtree":
			return func(v *celVars) (bool, bool) { return v.c != nil && v.c.Subtree, v.charge(2) }
		case "cap.unproven":
			return func(v *celVars) (bool, bool) { return v.c != nil && v.c.Unproven, v.charge(2) }
		}
		return nil
	case celast.IdentKind:
		d, accu, ok := c.local(e.AsIdent())
		if !ok || !accu {
			return nil
		}
		return func(v *celVars) (bool, bool) { return v.loop.accu[d], v.charge(2) }
	case celast.ComprehensionKind:
		return c.comprehension(e)
	case celast.CallKind:
		return c.boolCall(e)
	}
	return nil
}

// comprehension compiles the exists and all macros over a list of
// strings: a boolean accumulator, initialised by a literal, that is the
// result. cel-go evaluates, for each element, the loop condition, stops
// if it is not true, and else the step.
func (c *fastCompiler) comprehension(e celast.Expr) fastBool {
	comp := e.AsComprehension()
	if comp.HasIterVar2() || len(c.scope) >= maxLoopDepth {
		return nil
	}
	list := c.strings(comp.IterRange())
	init, ok := comp.AccuInit().AsLiteral().(types.Bool)
	res := comp.Result()
	if list == nil || !ok || comp.AccuInit().Kind() != celast.LiteralKind ||
		res.Kind() != celast.IdentKind || res.AsIdent() != comp.AccuVar() || c.kind(res) != types.BoolKind {
		return nil
	}
	d := len(c.scope)
	c.scope = append(c.scope, loopVars{iter: comp.IterVar(), accu: comp.AccuVar()})
	cond, step := c.boolean(comp.LoopCondition()), c.boolean(comp.LoopStep())
	c.scope = c.scope[:d]
	if cond == nil || step == nil {
		return nil
	}
	return func(v *celVars) (bool, bool) {
		l, ok := list(v)
		// The initial value and the result.
		if !ok || !v.charge(4) {
			return false, false
		}
		if v.loop == nil {
			v.loop = new(celLoop)
		}
		v.loop.accu[d] = bool(init)
		for _, s := range l {
			v.loop.iter[d] = s
			more, ok := cond(v)
			if !ok {
				return false, false
			}
			if !more {
				break
			}
			if v.loop.accu[d], ok = step(v); !ok {
				return false, false
			}
		}
		return v.loop.accu[d], true
	}
}

func (c *fastCompiler) boolCall(e celast.Expr) fastBool {
	call, overload, ok := c.call(e)
	if !ok {
		return nil
	}
	switch overload {
	case "logical_and", "logical_or":
		ops := operands(call, 2)
		if ops == nil {
			return nil
		}
		x, y := c.boolean(ops[0]), c.boolean(ops[1])
		if x == nil || y == nil {
			return nil
		}
		if overload == "logical_and" {
			return func(v *celVars) (bool, bool) {
				if !v.charge(1) {
					return false, false
				}
				if a, ok := x(v); !ok || !a {
					return false, ok
				}
				return y(v)
			}
		}
		return func(v *celVars) (bool, bool) {
			if !v.charge(1) {
				return false, false
			}
			if a, ok := x(v); !ok || a {
				return a, ok
			}
			return y(v)
		}
	case "not_strictly_false":
		// True for an error or an unknown, which the fast evaluation
		// never has: the value itself.
		ops := operands(call, 1)
		if ops == nil {
			return nil
		}
		x := c.boolean(ops[0])
		if x == nil {
			return nil
		}
		return func(v *celVars) (bool, bool) {
			a, ok := x(v)
			return a, ok && v.charge(2)
		}
	case "logical_not":
		ops := operands(call, 1)
		if ops == nil {
			return nil
		}
		x := c.boolean(ops[0])
		if x == nil {
			return nil
		}
		return func(v *celVars) (bool, bool) {
			a, ok := x(v)
			return !a, ok && v.charge(2)
		}
	case "conditional":
		ops := operands(call, 3)
		if ops == nil {
			return nil
		}
		return ternary(c.boolean(ops[0]), c.boolean(ops[1]), c.boolean(ops[2]))
	case "equals", "not_equals":
		return c.equality(call, overload == "not_equals")
	case "less_int64", "less_equals_int64", "greater_int64", "greater_equals_int64":
		ops := operands(call, 2)
		if ops == nil || c.kind(ops[0]) != types.IntKind || c.kind(ops[1]) != types.IntKind {
			return nil
		}
		x, y := c.integer(ops[0]), c.integer(ops[1])
		if x == nil || y == nil {
			return nil
		}
		cmp := intComparisons[overload]
		return func(v *celVars) (bool, bool) {
			a, ok := x(v)
			if !ok {
				return false, false
			}
			b, ok := y(v)
			return cmp(a, b), ok && v.charge(2)
		}
	case "less_string", "less_equals_string", "greater_string", "greater_equals_string":
		ops := operands(call, 2)
		if ops == nil {
			return nil
		}
		x, y := c.str(ops[0]), c.str(ops[1])
		if x == nil || y == nil {
			return nil
		}
		cmp := stringComparisons[overload]
		return func(v *celVars) (bool, bool) {
			a, ok := x(v)
			if !ok {
				return false, false
			}
			b, ok := y(v)
			if !ok || !v.charge(1+traversal(min(len(a), len(b)))) {
				return false, false
			}
			return cmp(strings.Compare(a, b)), true
		}
	case "starts_with_string", "ends_with_string", "contains_string":
		ops := operands(call, 2)
		if ops == nil {
			return nil
		}
		x, y := c.str(ops[0]), c.str(ops[1])
		if x == nil || y == nil {
			return nil
		}
		if p, ok := literal(ops[1]); ok {
			return searchLiteral(overload, x, p)
		}
		switch overload {
		case "starts_with_string":
			return func(v *celVars) (bool, bool) {
				s, ok := x(v)
				if !ok {
					return false, false
				}
				p, ok := y(v)
				if !ok || !v.charge(1+traversal(len(p))) {
					return false, false
				}
				return strings.HasPrefix(s, p), true
			}
		case "ends_with_string":
			return func(v *celVars) (bool, bool) {
				s, ok := x(v)
				if !ok {
					return false, false
				}
				p, ok := y(v)
				if !ok || !v.charge(1+traversal(len(p))) {
					return false, false
				}
				return strings.HasSuffix(s, p), true
			}
		}
		return func(v *celVars) (bool, bool) {
			s, ok := x(v)
			if !ok {
				return false, false
			}
			p, ok := y(v)
			if !ok || !v.charge(1+mulSat(traversal(len(s)), traversal(len(p)))) {
				return false, false
			}
			return strings.Contains(s, p), true
		}
	case "matches", "matches_string":
		ops := operands(call, 2)
		if ops == nil || ops[1].Kind() != celast.LiteralKind {
			return nil
		}
		pattern, ok := ops[1].AsLiteral().(types.String)
		if !ok {
			return nil
		}
		re, err := regexp.Compile(string(pattern))
		if err != nil {
			// cel-go fails on every evaluation: let it.
			return nil
		}
		x := c.str(ops[0])
		if x == nil {
			return nil
		}
		reCost := uint64(math.Ceil(float64(len(pattern)) * common.RegexStringLengthCostFactor))
		return func(v *celVars) (bool, bool) {
			s, ok := x(v)
			strCost := uint64(math.Ceil((1 + float64(len(s))) * common.StringTraversalCostFactor))
			if !ok || !v.charge(2+mulSat(strCost, reCost)) {
				return false, false
			}
			return re.MatchString(s), true
		}
	case "in_list":
		return c.in(call)
	case "index_list":
		return nil // no bool lists
	}
	return nil
}

// literal returns the value of a string literal.
func literal(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// searchLiteral is startsWith, endsWith or contains of a literal p, the
// commonest conditions, with p's cost charged at once.
func searchLiteral(overload string, x fastString, p string) fastBool {
	// The call and the literal.
	cost := 2 + traversal(len(p))
	switch overload {
	case "starts_with_string":
		return func(v *celVars) (bool, bool) {
			s, ok := x(v)
			return strings.HasPrefix(s, p), ok && v.charge(cost)
		}
	case "ends_with_string":
		return func(v *celVars) (bool, bool) {
			s, ok := x(v)
			return strings.HasSuffix(s, p), ok && v.charge(cost)
		}
	}
	pCost := traversal(len(p))
	return func(v *celVars) (bool, bool) {
		s, ok := x(v)
		if !ok || !v.charge(2+mulSat(traversal(len(s)), pCost)) {
			return false, false
		}
		return strings.Contains(s, p), true
	}
}

var intComparisons = map[string]func(a, b int64) bool{
	"less_int64":           func(a, b int64) bool { return a < b },
	"less_equals_int64":    func(a, b int64) bool { return a <= b },
	"greater_int64":        func(a, b int64) bool { return a > b },
	"greater_equals_int64": func(a, b int64) bool { return a >= b },
}

var stringComparisons = map[string]func(cmp int) bool{
	"less_string":           func(cmp int) bool { return cmp < 0 },
	"less_equals_string":    func(cmp int) bool { return cmp <= 0 },
	"greater_string":        func(cmp int) bool { return cmp > 0 },
	"greater_equals_string": func(cmp int) bool { return cmp >= 0 },
}

func (c *fastCompiler) equality(call celast.CallExpr, negate bool) fastBool {
	ops := operands(call, 2)
	if ops == nil {
		return nil
	}
	k := c.kind(ops[0])
	if c.kind(ops[1]) != k {
		return nil
	}
	switch k {
	case types.StringKind:
		x, y := c.str(ops[0]), c.str(ops[1])
		if x == nil || y == nil {
			return nil
		}
		return func(v *celVars) (bool, bool) {
			a, ok := x(v)
			if !ok {
				return false, false
			}
			b, ok := y(v)
			if !ok || !v.charge(1+traversal(min(len(a), len(b)))) {
				return false, false
			}
			return (a == b) != negate, true
		}
	case types.IntKind:
		x, y := c.integer(ops[0]), c.integer(ops[1])
		if x == nil || y == nil {
			return nil
		}
		return func(v *celVars) (bool, bool) {
			a, ok := x(v)
			if !ok {
				return false, false
			}
			b, ok := y(v)
			return (a == b) != negate, ok && v.charge(2)
		}
	case types.BoolKind:
		x, y := c.boolean(ops[0]), c.boolean(ops[1])
		if x == nil || y == nil {
			return nil
		}
		return func(v *celVars) (bool, bool) {
			a, ok := x(v)
			if !ok {
				return false, false
			}
			b, ok := y(v)
			return (a == b) != negate, ok && v.charge(2)
		}
	}
	return nil
}

// in compiles `x in list` for a string or int x.
func (c *fastCompiler) in(call celast.CallExpr) fastBool {
	ops := operands(call, 2)
	if ops == nil {
		return nil
	}
	switch c.kind(ops[0]) {
	case types.StringKind:
		x, l := c.str(ops[0]), c.strings(ops[1])
		if x == nil || l == nil {
			return nil
		}
		return func(v *celVars) (bool, bool) {
			a, ok := x(v)
			if !ok {
				return false, false
			}
			list, ok := l(v)
			if !ok || !v.charge(1+uint64(len(list))) {
				return false, false
			}
			for _, s := range list {
				// cel-go charges nothing for comparing the elements.
				if s == a {
					return true, true
				}
			}
			return false, true
		}
	case types.IntKind:
		x, l := c.integer(ops[0]), c.ints(ops[1])
		if x == nil || l == nil {
			return nil
		}
		return func(v *celVars) (bool, bool) {
			a, ok := x(v)
			if !ok {
				return false, false
			}
			list, ok := l(v)
			if !ok || !v.charge(1+uint64(len(list))) {
				return false, false
			}
			for _, n := range list {
				if n == a {
					return true, true
				}
			}
			return false, true
		}
	}
	return nil
}

func (c *fastCompiler) str(e celast.Expr) fastString {
	if c.kind(e) != types.StringKind {
		return nil
	}
	switch e.Kind() {
	case celast.LiteralKind:
		s, ok := e.AsLiteral().(types.String)
		if !ok {
			return nil
		}
		return func(v *celVars) (string, bool) { return string(s), v.charge(1) }
	case celast.IdentKind:
		// Comprehensions range over lists of strings only.
		d, accu, ok := c.local(e.AsIdent())
		if !ok || accu {
			return nil
		}
		return func(v *celVars) (string, bool) { return v.loop.iter[d], v.charge(2) }
	case celast.SelectKind:
		name, ok := c.field(e)
		if !ok {
			return nil
		}
		get := stringFields[name]
		if get == nil {
			return nil
		}
		if name == "cap.path" {
			// The field conditions read most.
			return func(v *celVars) (string, bool) {
				if v.c == nil {
					return "", v.charge(2)
				}
				return v.c.Path, v.charge(2)
			}
		}
		return func(v *celVars) (string, bool) { return get(v), v.charge(2) }
	case celast.CallKind:
		call, overload, ok := c.call(e)
		if !ok {
			return nil
		}
		switch overload {
		case "conditional":
			ops := operands(call, 3)
			if ops == nil {
				return nil
			}
			return ternary(c.boolean(ops[0]), c.str(ops[1]), c.str(ops[2]))
		case "index_list":
			ops := operands(call, 2)
			if ops == nil {
				return nil
			}
			return indexed(c.strings(ops[0]), c.integer(ops[1]))
		}
	}
	return nil
}

// stringFields read the string fields as celActivation has them.
var stringFields = map[string]func(*celVars) string{
	"call.server":    func(v *celVars) string { return v.req.Server },
	"call.method":    func(v *celVars) string { return v.req.method() },
	"call.tool":      func(v *celVars) string { return v.req.Tool },
	"call.principal": func(v *celVars) string { return v.req.Principal },
	"call.origin":    func(v *celVars) string { return v.req.Origin.String() },
	"call.tier":      func(v *celVars) string { return effectiveTier(v.req.Tier).String() },
	"cap.kind": func(v *celVars) string {
		if v.c == nil {
			return ""
		}
		return v.c.Kind.String()
	},
	"cap.path": func(v *celVars) string {
		if v.c == nil {
			return ""
		}
		return v.c.Path
	},
	"cap.scheme": func(v *celVars) string {
		if v.c == nil {
			return ""
		}
		return v.c.Scheme
	},
	"cap.host": func(v *celVars) string {
		if v.c == nil {
			return ""
		}
		return v.c.Host
	},
	"cap.url": func(v *celVars) string {
		if v.c == nil {
			return ""
		}
		return v.c.URL
	},
	"cap.program": func(v *celVars) string {
		if v.c == nil {
			return ""
		}
		return v.c.Program
	},
	"cap.id_kind": func(v *celVars) string {
		if v.c == nil {
			return ""
		}
		return v.c.IDKind
	},
	"cap.id": func(v *celVars) string {
		if v.c == nil {
			return ""
		}
		return v.c.ID
	},
}

func (c *fastCompiler) integer(e celast.Expr) fastInt {
	if c.kind(e) != types.IntKind {
		return nil
	}
	switch e.Kind() {
	case celast.LiteralKind:
		n, ok := e.AsLiteral().(types.Int)
		if !ok {
			return nil
		}
		return func(v *celVars) (int64, bool) { return int64(n), v.charge(1) }
	case celast.SelectKind:
		if name, ok := c.field(e); !ok || name != "cap.port" {
			return nil
		}
		return func(v *celVars) (int64, bool) {
			if v.c == nil {
				return 0, v.charge(2)
			}
			return int64(v.c.Port), v.charge(2)
		}
	case celast.CallKind:
		call, overload, ok := c.call(e)
		if !ok {
			return nil
		}
		switch overload {
		case "conditional":
			ops := operands(call, 3)
			if ops == nil {
				return nil
			}
			return ternary(c.boolean(ops[0]), c.integer(ops[1]), c.integer(ops[2]))
		case "index_list":
			ops := operands(call, 2)
			if ops == nil {
				return nil
			}
			return indexed(c.ints(ops[0]), c.integer(ops[1]))
		case "size_string", "string_size":
			ops := operands(call, 1)
			if ops == nil {
				return nil
			}
			x := c.str(ops[0])
			if x == nil {
				return nil
			}
			return func(v *celVars) (int64, bool) {
				s, ok := x(v)
				// CEL's size is the number of code points, as
				// len([]rune(s)) counts them.
				return int64(utf8.RuneCountInString(s)), ok && v.charge(2)
			}
		case "size_list", "list_size":
			ops := operands(call, 1)
			if ops == nil {
				return nil
			}
			switch c.listOf(ops[0]) {
			case types.StringKind:
				return size(c.strings(ops[0]))
			case types.IntKind:
				return size(c.ints(ops[0]))
			}
		}
	}
	return nil
}

func (c *fastCompiler) strings(e celast.Expr) fastStrings {
	if c.listOf(e) != types.StringKind {
		return nil
	}
	switch e.Kind() {
	case celast.SelectKind:
		name, ok := c.field(e)
		if !ok {
			return nil
		}
		switch name {
		case "call.roles":
			return func(v *celVars) ([]string, bool) { return v.req.Roles, v.charge(2) }
		case "cap.argv":
			return func(v *celVars) ([]string, bool) {
				if v.c == nil {
					return nil, v.charge(2)
				}
				return v.c.Argv, v.charge(2)
			}
		}
	case celast.ListKind:
		return literals(c, e, func(l types.String) string { return string(l) })
	}
	return nil
}

func (c *fastCompiler) ints(e celast.Expr) fastInts {
	if c.listOf(e) != types.IntKind || e.Kind() != celast.ListKind {
		return nil
	}
	return literals(c, e, func(l types.Int) int64 { return int64(l) })
}

// literals compiles a list of literals of type L, each checked as the
// list's element type.
func literals[L types.String | types.Int, T string | int64](c *fastCompiler, e celast.Expr, conv func(L) T) func(*celVars) ([]T, bool) {
	l := e.AsList()
	if len(l.OptionalIndices()) != 0 {
		return nil
	}
	elem := c.listOf(e)
	list := make([]T, 0, l.Size())
	for _, el := range l.Elements() {
		if el.Kind() != celast.LiteralKind || c.kind(el) != elem {
			return nil
		}
		lit, ok := el.AsLiteral().(L)
		if !ok {
			return nil
		}
		list = append(list, conv(lit))
	}
	cost := 1 + common.ListCreateBaseCost + uint64(len(list))
	return func(v *celVars) ([]T, bool) { return list, v.charge(cost) }
}

func ternary[T any](cond fastBool, x, y func(*celVars) (T, bool)) func(*celVars) (T, bool) {
	if cond == nil || x == nil || y == nil {
		return nil
	}
	return func(v *celVars) (T, bool) {
		var zero T
		c, ok := cond(v)
		if !ok || !v.charge(1) {
			return zero, false
		}
		if c {
			return x(v)
		}
		return y(v)
	}
}

// indexed compiles list[i]; out of range, cel-go fails, so it gives up.
func indexed[T any](list func(*celVars) ([]T, bool), i fastInt) func(*celVars) (T, bool) {
	if list == nil || i == nil {
		return nil
	}
	return func(v *celVars) (T, bool) {
		var zero T
		l, ok := list(v)
		if !ok {
			return zero, false
		}
		n, ok := i(v)
		if !ok || n < 0 || n >= int64(len(l)) || !v.charge(2) {
			return zero, false
		}
		return l[n], true
	}
}

func size[T any](list func(*celVars) ([]T, bool)) fastInt {
	if list == nil {
		return nil
	}
	return func(v *celVars) (int64, bool) {
		l, ok := list(v)
		return int64(len(l)), ok && v.charge(2)
	}
}
