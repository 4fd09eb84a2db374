package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/difftest"
)

// TestFastSubset pins which conditions the fast evaluation takes: those
// outside the subset must be left to cel-go whole.
func TestFastSubset(t *testing.T) {
	tests := []struct {
		name string
		expr string
		fast bool
	}{
		{"example", `cap.path.endsWith("/.env") || cap.path.contains("/.env.")`, true},
		{"fields", `call.server == "fs" && call.tool != "x" && call.principal < "m" && call.origin >= "i" && call.tier <= "z"`, true},
		{"cap fields", `cap.kind == "" && cap.scheme == "" && cap.host == "" && cap.url == "" && cap.program == "" && cap.id_kind == "" && cap.id == ""`, true},
		{"bools", `call.taint == cap.shell && !call.taint && (cap.shell ? true : false)`, true},
		{"ints", `cap.port > 1024 && cap.port <= 65535 && cap.port != 8080 && size(cap.path) >= 1 && cap.path.size() < 10`, true},
		{"lists", `"dev" in call.roles && cap.port in [80, 443] && cap.kind in ["fs.read", "fs.write"] && size(cap.argv) == cap.argv.size()`, true},
		{"index", `cap.argv[0] == "git" && [1, 2][1] == 2 && ["a"][0] == "a"`, true},
		{"ternary string", `(call.taint ? cap.path : cap.host).startsWith("/")`, true},
		{"matches", `cap.id.matches("^[0-9a-f]+$") && matches(cap.path, "\\.env$")`, true},
		{"literal", `true`, true},
		{"list sizes", `size(["a", "b"]) == 2 && [1].size() == 1 && size(call.roles) > 0`, true},

		{"exists macro", `call.roles.exists(r, r == "dev")`, true},
		{"all macro", `cap.argv.all(a, a != "")`, true},
		{"nested macros", `cap.argv.all(a, call.roles.exists(r, a.startsWith(r) || r in ["x"]) && ["y"].all(y, y != a))`, true},
		{"shadowing cap", `call.roles.exists(cap, cap == "dev")`, true},
		{"shadowing call", `call.roles.exists(call, call.size() > 1)`, true},
		{"too deep", `[""].all(a, [""].all(b, [""].all(c, [""].all(d, [""].all(e, a == e)))))`, false},
		{"exists_one macro", `call.roles.exists_one(r, r == "dev")`, false},
		{"filter macro", `size(call.roles.filter(r, r == "dev")) > 0`, false},
		{"map macro", `"x" in call.roles.map(r, r + "x")`, false},
		{"int range", `[1, 2].exists(i, i == 1)`, false},
		{"range of fields", `[cap.path].exists(p, p == "")`, false},
		{"has macro", `has(cap.path)`, false},
		{"strings extension", `cap.path.lowerAscii() == "x"`, false},
		{"concatenation", `cap.path + "x" == "y"`, false},
		{"arithmetic", `cap.port + 1 > 2`, false},
		{"double", `double(cap.port) > 1.5`, false},
		{"uint", `size(cap.path) > 1 && 1u == 1u`, false},
		{"dyn list", `cap.path in ["a", 1]`, false},
		{"regex from a field", `cap.path.matches(cap.id)`, false},
		{"invalid regex", `cap.path.matches("(")`, false},
		{"list equality", `call.roles == ["dev"]`, false},
		{"list of fields", `cap.path in [call.server]`, false},
		{"bytes", `b"a" == b"a"`, false},
		{"null", `null == null`, false},
		{"conversion", `string(cap.port) == "443"`, false},
		{"int of string", `int("1") == 1`, false},
		{"map", `{"a": 1}["a"] == 1`, false},
		{"type", `type(cap.path) == string`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := compileCondition(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.fast != nil; got != tt.fast {
				t.Errorf("compiled to the fast evaluation: %v, want %v", got, tt.fast)
			}
		})
	}
}

// TestFastCostBoundary holds the fast evaluation of the example condition
// to cel-go around the path length where cel-go's cost passes the limit:
// there cel-go fails, and so must the condition.
func TestFastCostBoundary(t *testing.T) {
	c, err := compileCondition(`cap.path.endsWith("/.env") || cap.path.contains("/.env.")`)
	if err != nil {
		t.Fatal(err)
	}
	var fast, errs int
	for n := 99_900; n <= 100_010; n += 3 {
		for _, path := range []string{strings.Repeat("a", n), strings.Repeat("é", n/2), strings.Repeat("a", n-6) + "/.env.", strings.Repeat("a", n-5) + "/.env"} {
			v := testVars(&Request{}, &capability.Capability{Kind: capability.FSRead, Path: path})
			ok, celErr := checkFast(t, c, v)
			if t.Failed() {
				t.Fatalf("path of %d bytes", len(path))
			}
			if ok {
				fast++
			}
			if celErr {
				errs++
			}
		}
	}
	if fast == 0 || errs == 0 {
		t.Errorf("%d fast evaluations, %d cost errors: the lengths should straddle the limit", fast, errs)
	}
}

func testVars(req *Request, c *capability.Capability) *celVars {
	v := newCELVars(req)
	v.setCap(c)
	return v
}

// celIn is one evaluation to compare: condition c on v, with cel-go's
// answer, computed first (before either twin runs on v) and once for both.
type celIn struct {
	c   *condition
	v   *celVars
	cel celAnswer
	// answered is set by fastTwin: the fast evaluation answered.
	answered bool
}

// celAnswer is an evaluation's answer: its value and error text; for the
// fast evaluation whether it answered and the cost bound it charged, for
// cel-go the cost it reports (MaxUint64 when it passed the limit).
type celAnswer struct {
	B        bool
	Err      string
	Answered bool
	Cost     uint64
}

func newCELIn(c *condition, v *celVars) *celIn {
	out, det, err := c.prg.Eval(v.activation())
	b, err := celOutcome(out, err)
	in := &celIn{c: c, v: v, cel: celAnswer{B: b, Err: errText(err), Answered: true, Cost: math.MaxUint64}}
	if det != nil && det.ActualCost() != nil {
		in.cel.Cost = *det.ActualCost()
	}
	return in
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func showCELIn(in *celIn) string {
	a := in.v.activation()
	return fmt.Sprintf("%s on %+v %+v", in.c.text, a.call, abbrev(a.cap))
}

// evalTwin holds a condition's evaluation (the fast one where it answers,
// cel-go's otherwise) to cel-go's: value and error text.
var evalTwin = &difftest.Twin[*celIn, celAnswer]{
	Name: "condition",
	Fast: func(in *celIn) celAnswer {
		b, err := in.c.eval(in.v)
		return celAnswer{B: b, Err: errText(err), Answered: true}
	},
	Ref: func(in *celIn) celAnswer { return in.cel },
	Same: func(got, cel celAnswer) (bool, string) {
		return got.B == cel.B && got.Err == cel.Err, ""
	},
	Show: showCELIn,
}

// fastTwin holds the fast evaluation (celfast.go) to cel-go: where it
// answers, cel-go answers the same without error, and its cost is within
// the fast evaluation's bound. Giving up always agrees.
var fastTwin = &difftest.Twin[*celIn, celAnswer]{
	Name: "CEL fast path",
	Fast: func(in *celIn) celAnswer {
		if in.c.fast == nil {
			return celAnswer{}
		}
		in.v.cost = 0
		b, ok := in.c.fast(in.v)
		in.answered = ok
		return celAnswer{B: b, Answered: ok, Cost: in.v.cost}
	},
	Ref: func(in *celIn) celAnswer { return in.cel },
	Same: func(fast, cel celAnswer) (bool, string) {
		switch {
		case !fast.Answered:
			return true, ""
		case cel.Err != "":
			return false, "the fast evaluation answered where cel-go failed"
		case fast.B != cel.B:
			return false, "the values differ"
		case fast.Cost < cel.Cost:
			return false, "the fast evaluation's cost bound is below cel-go's cost"
		}
		return true, ""
	},
	Show: showCELIn,
}

// checkFast evaluates c on v both ways, with both twins, and reports a
// difference as an error of t. It says whether the fast evaluation
// answered and whether cel-go failed.
func checkFast(t testing.TB, c *condition, v *celVars) (fast, celErr bool) {
	t.Helper()
	in := newCELIn(c, v)
	evalTwin.Check(t, in)
	fastTwin.Check(t, in)
	return in.answered, in.cel.Err != ""
}

// TestFastDifferential evaluates generated conditions on generated
// calls both ways.
func TestFastDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	nexpr, ninput := 1000, 30
	if testing.Short() || raceEnabled {
		nexpr = 150
	}
	inputs := make([]*celVars, ninput)
	for i := range inputs {
		inputs[i] = genVars(r, i < 2)
	}
	var compiled, fastConds int
	var ins []*celIn
	for i := range nexpr {
		expr := genCond(r)
		c, err := compileCondition(expr)
		if err != nil {
			if !strings.Contains(err.Error(), "too long") {
				t.Fatalf("generated condition %s: %v", expr, err)
			}
			continue
		}
		compiled++
		if c.fast != nil {
			fastConds++
		}
		for j, v := range inputs {
			if j < 2 && i%5 != 0 {
				continue // the inputs with long lists, which cel-go takes long over
			}
			ins = append(ins, newCELIn(c, v))
		}
	}
	evalTwin.Agree(t, slices.Values(ins))
	fastTwin.Agree(t, slices.Values(ins))
	var fastEvals, celErrs int
	for _, in := range ins {
		if in.answered {
			fastEvals++
		}
		if in.cel.Err != "" {
			celErrs++
		}
	}
	evals := len(ins)
	t.Logf("%d conditions (%d fast), %d evaluations (%d fast, %d cel-go errors)", compiled, fastConds, evals, fastEvals, celErrs)
	// The generator must reach every side: fast answers, conditions
	// left to cel-go, and cel-go's errors.
	if fastConds < compiled/2 || fastConds == compiled || fastEvals < evals/3 || celErrs < evals/50 {
		t.Errorf("the generator is off balance")
	}
}

// abbrev shortens long strings of a cap for a failure message.
func abbrev(c celCap) celCap {
	short := func(s string) string {
		if len(s) > 40 {
			return fmt.Sprintf("%s…(%d bytes)", s[:20], len(s))
		}
		return s
	}
	c.Path, c.Host, c.ID = short(c.Path), short(c.Host), short(c.ID)
	if len(c.Argv) > 8 {
		c.Argv = append(c.Argv[:8:8], fmt.Sprintf("…(%d)", len(c.Argv)))
	}
	return c
}

var (
	// genStrings are the strings the generated calls are made of: the
	// literals of the conditions, with and without unicode, and their
	// parts.
	genStrings  = []string{"", "/", ".env", "/.env", "/.env.", "a", "dev", "é", "日本", "x/y", "https", "api.", "fs.read", "git", "A", "\u0301"}
	genPatterns = []string{`^[0-9a-f]+$`, `.*`, `a|b`, `(\.env)$`, `é+`, ``, `^/home/[^/]+/\.env`, `(`, `x{1001}`}
)

func genLong(r *rand.Rand) string {
	// Lengths around those where a traversal or a product of two crosses
	// the cost limit.
	n := []int{99, 100, 101, 999, 1000, 1001, 9_999, 10_000, 10_001, 99_990, 100_000, 100_010}[r.IntN(12)]
	s := strings.Repeat(genStrings[r.IntN(len(genStrings))]+"a", n)
	if len(s) > n {
		s = s[:n]
	}
	return s
}

func genString(r *rand.Rand) string {
	switch r.IntN(40) {
	case 0:
		return genLong(r)
	case 1, 2, 3:
		return "\xff\xfe" + genStrings[r.IntN(len(genStrings))] // not UTF-8
	case 4, 5, 6, 7, 8, 9, 10, 11:
		return "/home/a/" + genStrings[r.IntN(len(genStrings))] + genStrings[r.IntN(len(genStrings))]
	}
	return genStrings[r.IntN(len(genStrings))]
}

// genList generates a list of strings; a long one, around the lengths
// where an `in` or a comprehension passes the cost limit, if long.
func genList(r *rand.Rand, long bool) []string {
	var l []string
	switch {
	case long:
		l = make([]string, []int{1_000, 2_000, 9_990, 10_000, 20_000}[r.IntN(5)])
	case r.IntN(6) == 0:
		return nil
	default:
		l = make([]string, r.IntN(6))
	}
	for i := range l {
		l[i] = genStrings[r.IntN(len(genStrings))]
	}
	return l
}

// genVars generates a call; with long lists if long (cel-go's cost
// tracking takes a time quadratic in their length).
func genVars(r *rand.Rand, long bool) *celVars {
	req := &Request{
		Server: genString(r), Tool: genString(r), Principal: genString(r), Roles: genList(r, long),
		Origin: capability.Origin(r.IntN(3)), Taint: r.IntN(2) == 0, Tier: capability.Tier(r.IntN(4)),
	}
	c := &capability.Capability{
		Kind: capability.Kind(r.IntN(6)), Path: genString(r), Scheme: genString(r), Host: genString(r),
		Port: uint16([]int{0, 80, 443, 1024, 1025, 65535}[r.IntN(6)]), URL: genString(r), Program: genString(r),
		Argv: genList(r, long), Shell: r.IntN(2) == 0, IDKind: genString(r), ID: genString(r),
	}
	if r.IntN(8) == 0 {
		c = nil // an action rule
	}
	return testVars(req, c)
}

// celQuote writes s as a CEL string literal.
func celQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// genCond generates a boolean condition, mostly within the fast subset.
func genCond(r *rand.Rand) string {
	g := &condGen{r: r}
	return g.boolean(4)
}

type condGen struct {
	r    *rand.Rand
	vars []string // the comprehension variables in scope
}

func (g *condGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *condGen) boolean(d int) string {
	if d <= 0 {
		return g.pick("true", "false", "call.taint", "cap.shell")
	}
	d--
	switch g.r.IntN(20) {
	case 0:
		return "!(" + g.boolean(d) + ")"
	case 1, 2:
		return "(" + g.boolean(d) + " && " + g.boolean(d) + ")"
	case 3, 4:
		return "(" + g.boolean(d) + " || " + g.boolean(d) + ")"
	case 5:
		return "(" + g.boolean(d) + " ? " + g.boolean(d) + " : " + g.boolean(d) + ")"
	case 6:
		return "(" + g.str(d) + g.pick(" == ", " != ", " < ", " <= ", " > ", " >= ") + g.str(d) + ")"
	case 7:
		return "(" + g.integer(d) + g.pick(" == ", " != ", " < ", " <= ", " > ", " >= ") + g.integer(d) + ")"
	case 8:
		return "(" + g.boolean(d) + g.pick(" == ", " != ") + g.boolean(d) + ")"
	case 9, 10:
		return g.str(d) + g.pick(".startsWith(", ".endsWith(", ".contains(") + g.str(d) + ")"
	case 11:
		p := celQuote(genPatterns[g.r.IntN(len(genPatterns))])
		if g.r.IntN(2) == 0 {
			return g.str(d) + ".matches(" + p + ")"
		}
		return "matches(" + g.str(d) + ", " + p + ")"
	case 12:
		return "(" + g.str(d) + " in " + g.strList() + ")"
	case 13:
		return "(" + g.integer(d) + " in " + g.pick("[80, 443]", "[]", "[0, -1, 1024]") + ")"
	case 14:
		// Outside the subset.
		return "(" + g.pick(`call.roles.exists_one(r, r == "dev")`, `size(cap.argv.filter(a, a.size() < 3)) == 1`, `has(cap.path)`,
			`cap.path.lowerAscii().endsWith("/.env")`, `cap.port + 1 > 443`, `cap.path in ["a", 1]`, `cap.path.matches(cap.id)`,
			`cap.argv.exists(a, cap.argv.exists(b, a + b == "xyz"))`) + ")"
	case 15:
		return g.pick("true", "false", "call.taint", "cap.shell")
	case 16:
		// A comprehension, whose body may use its variable and those
		// around it.
		name := g.pick("r", "a", "b") // sometimes shadowing one around
		list := g.strList()
		if list == "[]" {
			list = `[""]` // the element type of [] is left open
		}
		g.vars = append(g.vars, name)
		body := g.boolean(d)
		g.vars = g.vars[:len(g.vars)-1]
		return list + g.pick(".exists(", ".all(", ".exists(") + name + ", " + body + ")"
	}
	return g.str(d) + g.pick(".endsWith(", ".contains(") + g.str(d) + ")"
}

func (g *condGen) strList() string {
	switch g.r.IntN(4) {
	case 0:
		return g.pick("call.roles", "cap.argv")
	case 1:
		return "[]"
	}
	var elems []string
	for range 1 + g.r.IntN(4) {
		elems = append(elems, celQuote(genStrings[g.r.IntN(len(genStrings))]))
	}
	return "[" + strings.Join(elems, ", ") + "]"
}

func (g *condGen) str(d int) string {
	switch n := g.r.IntN(12); {
	case len(g.vars) > 0 && n < 3:
		return g.vars[g.r.IntN(len(g.vars))]
	case n < 5:
		return g.pick("call.server", "call.tool", "call.principal", "call.origin", "call.tier",
			"cap.kind", "cap.path", "cap.path", "cap.path", "cap.scheme", "cap.host", "cap.url", "cap.program", "cap.id_kind", "cap.id")
	case n < 9 || d <= 0:
		if g.r.IntN(20) == 0 {
			return celQuote(strings.Repeat(genStrings[g.r.IntN(len(genStrings))]+"b", []int{99, 100, 101, 1000}[g.r.IntN(4)]))
		}
		return celQuote(genStrings[g.r.IntN(len(genStrings))])
	case n == 9:
		return "(" + g.boolean(d-1) + " ? " + g.str(d-1) + " : " + g.str(d-1) + ")"
	case n == 10:
		return g.pick("call.roles", "cap.argv") + "[" + g.integer(d-1) + "]"
	}
	return g.strList() + "[" + g.integer(d-1) + "]"
}

func (g *condGen) integer(d int) string {
	switch n := g.r.IntN(10); {
	case n < 3:
		return g.pick("0", "1", "-1", "2", "443", "1024", "9223372036854775807", "-9223372036854775808")
	case n < 5:
		return "cap.port"
	case d <= 0:
		return g.pick("0", "1", "5")
	case n == 5:
		return "size(" + g.str(d-1) + ")"
	case n == 6:
		return g.str(d-1) + ".size()"
	case n == 7:
		return g.pick("size(call.roles)", "cap.argv.size()", "size([1, 2])", `["a"].size()`)
	case n == 8:
		return "(" + g.boolean(d-1) + " ? " + g.integer(d-1) + " : " + g.integer(d-1) + ")"
	}
	return g.pick("[1, 2, 3]", "[0]", "[-5, 7]") + "[" + g.integer(d-1) + "]"
}

// FuzzFastCondition holds the condition's evaluation to cel-go's on
// fuzzed conditions and calls.
func FuzzFastCondition(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		f.Add(genCond(r), genString(r), genString(r), "dev", int64(443), uint8(r.IntN(256)))
	}
	f.Add(`cap.path.endsWith("/.env") || cap.path.contains("/.env.")`, "/home/a/.env.local", "", "", int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, expr, path, host, role string, port int64, bits uint8) {
		c, err := compileCondition(expr)
		if err != nil {
			return
		}
		req := &Request{Server: host, Tool: path, Principal: role, Roles: []string{role, path}, Taint: bits&1 != 0, Origin: capability.Origin(bits >> 1 & 1)}
		cp := &capability.Capability{Kind: capability.Kind(bits >> 2 & 3), Path: path, Host: host, Port: uint16(port), URL: role,
			Argv: []string{role, host}[:bits>>4&1+bits>>5&1], Shell: bits&0x40 != 0, ID: role}
		if bits&0x80 != 0 {
			cp = nil
		}
		v := testVars(req, cp)
		checkFast(t, c, v)
	})
}

// TestFastNoAlloc holds the fast evaluation to no allocation.
func TestFastNoAlloc(t *testing.T) {
	c, err := compileCondition(`cap.path.endsWith("/.env") || "dev" in call.roles && cap.argv[0].matches("^g") && size(cap.path) > cap.port`)
	if err != nil || c.fast == nil {
		t.Fatal(err, c.fast == nil)
	}
	v := testVars(&Request{Roles: []string{"ops", "dev"}}, &capability.Capability{Path: "/x/é", Argv: []string{"git"}})
	if n := testing.AllocsPerRun(100, func() { v.cost = 0; c.fast(v) }); n != 0 {
		t.Errorf("fast evaluation allocates %v times, want 0", n)
	}
	v.cost = 0
	if b, ok := c.fast(v); !b || !ok {
		t.Errorf("fast evaluation = %v, %v, want true, true", b, ok)
	}
}
