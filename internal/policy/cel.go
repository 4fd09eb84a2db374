package policy

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// celCostLimit bounds the work of one condition: enough for string
// functions over a long path or a list of arguments, not for a loop that
// holds up a call. Exceeding it is an evaluation error.
const celCostLimit = 10_000

// maxWhenLen bounds the text of one condition.
const maxWhenLen = 4096

// celCall is the `call` variable of a condition.
type celCall struct {
	Server    string   `cel:"server"`
	Method    string   `cel:"method"`
	Tool      string   `cel:"tool"`
	Principal string   `cel:"principal"`
	Roles     []string `cel:"roles"`
	Origin    string   `cel:"origin"`
	Taint     bool     `cel:"taint"`
	Tier      string   `cel:"tier"`
}

// celCap is the `cap` variable of a condition: the capability being
// decided, or all empty for an action rule.
type celCap struct {
	Kind    string   `cel:"kind"`
	Path    string   `cel:"path"`
	Scheme  string   `cel:"scheme"`
	Host    string   `cel:"host"`
	Port    int64    `cel:"port"`
	URL     string   `cel:"url"`
	Program string   `cel:"program"`
	Argv    []string `cel:"argv"`
	Shell   bool     `cel:"shell"`
	IDKind  string   `cel:"id_kind"`
	ID      string   `cel:"id"`
	Subtree bool     `cel:"subtree"`
	// Unproven: an id the server did not return (provenance flag).
	Unproven bool `cel:"unproven"`
}

// celVars holds what the conditions of one Decide evaluate: the request
// and the capability being decided. It is created when the first
// condition is reached; the fast evaluation reads the request and the
// capability directly, and the cel-go activation is built only when
// cel-go is needed.
type celVars struct {
	req  *Request
	c    *capability.Capability // nil for an action rule
	cost uint64                 // the cost of the fast evaluation so far
	loop *celLoop               // the fast evaluation's comprehension variables
	act  *celActivation
}

// celActivation is the activation cel-go evaluates.
type celActivation struct {
	call    celCall
	cap     celCap
	capFrom *capability.Capability // the capability cap was filled from
	filled  bool                   // cap was filled (from capFrom)
	values  map[string]any         // the request's typed values
}

func (a *celActivation) ResolveName(name string) (any, bool) {
	switch name {
	case "call":
		return &a.call, true
	case "cap":
		return &a.cap, true
	case "value":
		if a.values == nil {
			return map[string]any{}, true
		}
		return a.values, true
	}
	return nil, false
}

func (a *celActivation) Parent() interpreter.Activation { return nil }

func newCELVars(req *Request) *celVars {
	return &celVars{req: req}
}

// setCap points the cap variable at c (nil for an action rule).
func (v *celVars) setCap(c *capability.Capability) {
	v.c = c
}

// activation returns the cel-go activation for the request and the
// current capability.
func (v *celVars) activation() *celActivation {
	a := v.act
	if a == nil {
		req := v.req
		a = &celActivation{call: celCall{
			Server:    req.Server,
			Method:    req.method(),
			Tool:      req.Tool,
			Principal: req.Principal,
			Roles:     req.Roles,
			Origin:    req.Origin.String(),
			Taint:     req.Taint,
			Tier:      effectiveTier(req.Tier).String(),
		}}
		if a.call.Roles == nil {
			a.call.Roles = []string{}
		}
		a.values = req.Values
		v.act = a
	}
	if a.filled && a.capFrom == v.c {
		return a
	}
	a.filled, a.capFrom = true, v.c
	c := v.c
	if c == nil {
		a.cap = celCap{Argv: []string{}}
		return a
	}
	a.cap = celCap{
		Kind:     c.Kind.String(),
		Path:     c.Path,
		Scheme:   c.Scheme,
		Host:     c.Host,
		Port:     int64(c.Port),
		URL:      c.URL,
		Program:  c.Program,
		Argv:     c.Argv,
		Shell:    c.Shell,
		IDKind:   c.IDKind,
		ID:       c.ID,
		Subtree:  c.Subtree,
		Unproven: c.Unproven,
	}
	if a.cap.Argv == nil {
		a.cap.Argv = []string{}
	}
	return a
}

var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[celCall](), reflect.TypeFor[celCap](), ext.ParseStructTags(true)),
		cel.Variable("call", cel.ObjectType("policy.celCall")),
		cel.Variable("cap", cel.ObjectType("policy.celCap")),
		// The typed values of the call (R35): value.amount, whatever the
		// tool calls its argument. A name the call's binding does not
		// give is absent: has(value.amount) tells.
		cel.Variable("value", cel.MapType(cel.StringType, cel.DynType)),
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
	)
})

// condition is a compiled `when`.
type condition struct {
	text string
	prg  cel.Program
	fast fastBool // nil when the condition is outside the fast subset
	// partial evaluates the condition with cap.path unknown, for a
	// capability on a whole subtree (evalSubtree); nil when the
	// condition does not read cap, and so means the same for every path.
	partial cel.Program
}

// compileCondition type-checks expr; the error is one line.
func compileCondition(expr string) (*condition, error) {
	if len(expr) > maxWhenLen {
		return nil, fmt.Errorf("condition of %d bytes is too long (at most %d)", len(expr), maxWhenLen)
	}
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %v", err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		var msgs []string
		for _, e := range iss.Errors() {
			msgs = append(msgs, fmt.Sprintf("%s (at %d:%d of the condition)", e.Message, e.Location.Line(), e.Location.Column()+1))
		}
		return nil, fmt.Errorf("bad condition: %s", strings.Join(msgs, "; "))
	}
	if !ast.OutputType().IsExactType(types.BoolType) {
		return nil, fmt.Errorf("bad condition: want a boolean, got %s", ast.OutputType())
	}
	prg, err := env.Program(ast, cel.CostLimit(celCostLimit))
	if err != nil {
		return nil, fmt.Errorf("bad condition: %v", err)
	}
	c := &condition{text: expr, prg: prg, fast: compileFast(ast.NativeRep())}
	if readsCap(ast.NativeRep()) {
		c.partial, err = env.Program(ast, cel.CostLimit(celCostLimit), cel.EvalOptions(cel.OptPartialEval))
		if err != nil {
			return nil, fmt.Errorf("bad condition: %v", err)
		}
	}
	return c, nil
}

// readsCap reports whether a checked condition refers to the cap
// variable. It may say so of a condition that does not (a comprehension
// variable named cap), never the reverse.
func readsCap(a *celast.AST) bool {
	for _, ref := range a.ReferenceMap() {
		if ref.Name == "cap" {
			return true
		}
	}
	return false
}

// errSubtreeUnknown is the outcome of a condition that depends on the path
// of a capability on a whole subtree: its value for the paths under the
// capability's own is not known, so it fails closed like a condition that
// fails to evaluate.
var errSubtreeUnknown = errors.New("it depends on cap.path, which has no one value for a whole subtree")

// evalSubtree evaluates the condition for a capability on v's path and
// everything under it, which MUST be current in v: with cap.path unknown,
// so that the answer holds for every path under it, or is errSubtreeUnknown.
// A condition that does not read cap is evaluated as usual.
func (c *condition) evalSubtree(v *celVars) (bool, error) {
	if c.partial == nil {
		return c.eval(v)
	}
	vars, err := cel.PartialVars(v.activation(), cel.AttributePattern("cap").QualString("path"))
	if err != nil {
		return false, err
	}
	out, _, err := c.partial.Eval(vars)
	if err == nil && types.IsUnknown(out) {
		return false, errSubtreeUnknown
	}
	return celOutcome(out, err)
}

// eval evaluates the condition; an error, including a result that is not
// a boolean and an exceeded cost limit, is returned as such. The fast
// evaluation answers where it can; cel-go answers the rest, errors among
// them.
func (c *condition) eval(v *celVars) (bool, error) {
	if c.fast != nil {
		v.cost = 0
		if b, ok := c.fast(v); ok {
			return b, nil
		}
	}
	return c.evalCEL(v)
}

// evalCEL evaluates the condition with cel-go.
func (c *condition) evalCEL(v *celVars) (bool, error) {
	out, _, err := c.prg.Eval(v.activation())
	return celOutcome(out, err)
}

// celOutcome is the outcome of a condition cel-go evaluated to out or err.
func celOutcome(out ref.Val, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("condition gave %s, not a boolean", out.Type())
	}
	return b, nil
}
