package schema

import (
	"slices"
	"strconv"
	"sync"

	"github.com/aegis-mcp/aegis/internal/args"
)

var docs = sync.Pool{New: func() any { return new(args.Doc) }}

// Check decodes a call's arguments strictly (package args: duplicate keys, keys
// differing only in case, lone surrogates and the like are refused, and the limits of
// [Options.Limits] apply) and checks them as [Schema.CheckValue] does.
func (s *Schema) Check(arguments []byte) (out []byte, clamped []string, err error) {
	d := docs.Get().(*args.Doc)
	defer docs.Put(d)
	var lim *args.Limits
	if s != nil {
		lim = s.limits
	}
	if err := d.Decode(arguments, lim); err != nil {
		return nil, nil, &Violation{Keyword: "json", Message: truncate(err.Error(), MaxMessage), err: err}
	}
	return s.CheckValue(d.Root())
}

// CheckValue clamps and validates the arguments object root, which the caller decoded
// with package args.
//
// On success, out is nil when nothing was clamped: the caller forwards the arguments
// it holds. Otherwise out is the arguments with the clamped numbers rewritten (other
// values keep their source text, object keys are re-escaped minimally, whitespace is
// dropped), and clamped lists the JSON Pointers of the rewritten numbers, in document
// order per clamp, for the audit record.
//
// On failure, err is a *[Violation] and out and clamped are nil. The nil *Schema
// returns a Violation for every call.
func (s *Schema) CheckValue(root args.Value) (out []byte, clamped []string, err error) {
	if s == nil || s.sch == nil {
		return nil, nil, &Violation{Keyword: "schema", Message: "the tool has no compiled input schema"}
	}
	if root.Kind() != args.Object {
		return nil, nil, &Violation{Keyword: "json", Message: "arguments must be a JSON object"}
	}
	if s.clampInWalk && s.fast != nil {
		if out, clamped, ok := s.checkClampingInWalk(root); ok {
			return out, clamped, nil
		}
		// The walk met something it does not decide: the full path below decides,
		// and explains.
	}
	var repl map[args.Value]string
	if len(s.clamps) > 0 {
		if repl, clamped, err = s.clamp(root); err != nil {
			return nil, nil, err
		}
	}
	if s.fast == nil || !s.fast.valid(root, repl) {
		if v := s.validate(root, repl); v != nil {
			return nil, nil, v
		}
	}
	if len(repl) == 0 {
		return nil, nil, nil
	}
	return encode(make([]byte, 0, len(root.Raw())+8), root, repl), clamped, nil
}

// checkClampingInWalk is CheckValue for a schema with clampInWalk, made in one walk:
// the fast walk clamps each clamped member of root as it meets it, before checking
// it. ok is false when the walk does not pass root, a clamp refuses its member, or a
// clamped member the walk did not meet is present or has a case variant: then the
// full path decides. When ok, the result is the full path's: the clamps touch
// distinct members, so the order in which they are applied changes nothing, and the
// fast walk reads a member's clamped text only for that member.
func (s *Schema) checkClampingInWalk(root args.Value) (out []byte, clamped []string, ok bool) {
	w := walker{budget: equalBudget, clamps: s, root: root}
	if !w.valid(s.fast, root) || w.refused {
		return nil, nil, false
	}
	for k := range s.clamps {
		if w.met&(1<<k) != 0 {
			continue
		}
		if _, variant, found := topMember(root, s.clamps[k].member); found || variant >= 0 {
			return nil, nil, false
		}
	}
	if len(w.repl) == 0 {
		return nil, nil, true
	}
	for k := range s.clamps {
		if w.changed&(1<<k) != 0 {
			clamped = append(clamped, s.clamps[k].pointer())
		}
	}
	return encode(make([]byte, 0, len(root.Raw())+8), root, w.repl), clamped, true
}

// clampMember applies the clamps on the member of the arguments object declared as
// props[p], whose value is v, for a walk that clamps (Schema.clampInWalk). It
// reports false when a clamp refuses v.
func (w *walker) clampMember(p int, v args.Value) bool {
	for k := range w.clamps.clamps {
		c := &w.clamps.clamps[k]
		if c.prop != p {
			continue
		}
		var at []string
		if c.apply(v, c.pointer, &w.repl, &at) != nil {
			w.refused = true
			return false
		}
		w.met |= 1 << k
		if len(at) > 0 {
			w.changed |= 1 << k
		}
	}
	return true
}

// validate is the slow path: the validator decides, on the arguments converted to
// its tree, and the violation is explained. It decides every call the fast path does
// not pass.
func (s *Schema) validate(root args.Value, repl map[args.Value]string) *Violation {
	tree, v := toTree(root, repl)
	if v != nil {
		return v.settle()
	}
	if err := s.sch.Validate(tree); err != nil {
		return s.explain(tree, err)
	}
	return nil
}

// clamp finds the numbers outside their clamp's range and the text that replaces
// each. Later clamps see the values earlier ones wrote.
func (s *Schema) clamp(root args.Value) (map[args.Value]string, []string, error) {
	var repl map[args.Value]string
	var at []string
	for i := range s.clamps {
		c := &s.clamps[i]
		if c.isTopMember {
			// One member of root, which is an object: the pointer's walk is one
			// pass over root's members, made here without it.
			v, variant, found := topMember(root, c.member)
			if variant >= 0 {
				return nil, nil, c.caseVariant(variant)
			}
			if found {
				if err := c.apply(v, c.pointer, &repl, &at); err != nil {
					return nil, nil, err
				}
			}
			continue
		}
		var viol *Violation
		key, found := c.ptr.SelectExact(root, func(v args.Value, loc args.Loc) {
			if viol == nil {
				viol = c.apply(v, loc.String, &repl, &at)
			}
		})
		if found {
			return nil, nil, c.caseVariant(len(key))
		}
		if viol != nil {
			return nil, nil, viol
		}
	}
	return repl, at, nil
}

// topMember returns the member of the object root whose key is name, as
// [args.Pointer.SelectExact] selects the one-token pointer to it: found is false when
// there is none, and variant is the length of the first key that differs from name
// only in case ([args.SameKey]) when name itself is absent, or -1. A present name
// wins over its case variants, so these are looked for only in its absence.
func topMember(root args.Value, name string) (v args.Value, variant int, found bool) {
	if v, ok := root.Lookup(name); ok {
		return v, -1, true
	}
	for key := range root.Members() {
		if args.SameKey(key, name) {
			return args.Value{}, len(key), false
		}
	}
	return args.Value{}, -1, false
}

// pointer is the clamp's pointer as text, for a clamp on one member: its location.
func (c *clamp) pointer() string { return c.ptr.String() }

// caseVariant is the violation of arguments in which a member whose key, n bytes long,
// differs from the clamped one only in case stands for the clamped field.
func (c *clamp) caseVariant(n int) *Violation {
	// A server matching keys without case would read this member as the clamped
	// field, unclamped.
	return &Violation{Pointer: c.ptr.String(), Keyword: "clamp",
		Message: "a member whose key differs only in case (" + strconv.Itoa(n) + " bytes) stands for the clamped field"}
}

// apply clamps v, the value at the location loc names: a number outside c's range
// gets the text of the nearest bound in *repl, and its location joins *at. null is
// left to the schema; any other value that is not a number, or a number without an
// exact double value, is a violation.
func (c *clamp) apply(v args.Value, loc func() string, repl *map[args.Value]string, at *[]string) *Violation {
	switch v.Kind() {
	case args.Null:
		return nil // left to the schema, like an absent field
	case args.Number:
	default:
		return &Violation{Pointer: loc(), Keyword: "clamp", Message: "a clamped field must be a number, got " + v.Kind().String()}
	}
	text, inRepl := "", false
	if *repl != nil {
		text, inRepl = (*repl)[v]
	}
	var f float64
	read := false
	if !inRepl {
		// A plain integer is its own canonical text (canonicalNumber), and
		// plainIntValue reads only plain integers: the common number is read once.
		if f, read = plainIntValue(v.Raw()); !read {
			var err error
			if text, err = canonicalNumber(v); err != nil {
				return &Violation{Pointer: loc(), Keyword: "number", Message: err.Error()}
			}
		}
	}
	if !read {
		if f, read = plainIntValue(text); !read {
			var err error
			if f, err = strconv.ParseFloat(text, 64); err != nil {
				return &Violation{Pointer: loc(), Keyword: "number", Message: errInexact.Error()}
			}
		}
	}
	var to string
	switch {
	case f > c.max:
		to = c.maxText
	case f < c.min:
		to = c.minText
	default:
		return nil
	}
	if *repl == nil {
		*repl = map[args.Value]string{}
	}
	(*repl)[v] = to
	if p := loc(); !slices.Contains(*at, p) {
		*at = append(*at, p)
	}
	return nil
}

// plainIntValue returns the value of raw when it is a plain integer of at most 15
// digits ([isPlainInt]): exactly what strconv.ParseFloat returns for it, since every
// such integer is below 2^53, without its general parse.
func plainIntValue(raw string) (float64, bool) {
	if !isPlainInt(raw) {
		return 0, false
	}
	d, neg := raw, false
	if d[0] == '-' {
		d, neg = d[1:], true
	}
	var n int64
	for i := 0; i < len(d); i++ {
		n = n*10 + int64(d[i]-'0')
	}
	if neg {
		if n == 0 {
			return 0, false // "-00" and the like: ParseFloat says -0
		}
		n = -n
	}
	return float64(n), true
}
