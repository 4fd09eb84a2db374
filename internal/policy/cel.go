package policy

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/google/cel-go/cel"
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
}

func (a *celActivation) ResolveName(name string) (any, bool) {
	switch name {
	case "call":
		return &a.call, true
	case "cap":
		return &a.cap, true
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
		Kind:    c.Kind.String(),
		Path:    c.Path,
		Scheme:  c.Scheme,
		Host:    c.Host,
		Port:    int64(c.Port),
		URL:     c.URL,
		Program: c.Program,
		Argv:    c.Argv,
		Shell:   c.Shell,
		IDKind:  c.IDKind,
		ID:      c.ID,
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
		ext.Strings(),
	)
})

// condition is a compiled `when`.
type condition struct {
	text string
	prg  cel.Program
	fast fastBool // nil when the condition is outside the fast subset
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
	return &condition{text: expr, prg: prg, fast: compileFast(ast.NativeRep())}, nil
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
