package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Violation is why [Schema.Check] refused a call's arguments. Its fields are safe to
// show the model and to log: the message never quotes a value the model wrote (it may
// quote the schema's own values, such as an enum, capped), and is at most
// [MaxMessage] bytes. Pointer is the one part the model wrote: it names the offending
// key, and [Violation.Error] caps and quotes it.
type Violation struct {
	// Pointer is the JSON Pointer (RFC 6901) of the offending value in the arguments;
	// for a missing required property, of where it should be. "" is the whole
	// arguments object.
	Pointer string
	// Keyword is the JSON Schema keyword that failed ("type", "enum", "maxLength",
	// "additionalProperties" for a key the closed schema does not declare), or one of
	// aegis's own: "json" (not strict JSON, or over a decoding limit), "number" (no
	// exact double value), "clamp" (a clamped field that is not a number), "schema"
	// (no schema).
	Keyword string
	// Message says what was wrong, such as "got string, want integer".
	Message string

	toks []string // Pointer's tokens in reverse, while a violation travels up toTree
	err  error    // the decoder's error, for errors.Is
}

// MaxMessage caps [Violation.Message].
const MaxMessage = 100

// maxPointer caps the pointer that [Violation.Error] shows.
const maxPointer = 64

// Error returns "arguments at /path: type: got string, want integer".
func (v *Violation) Error() string {
	p := v.Pointer
	if p == "" {
		p = "(root)"
	} else {
		p = truncate(p, maxPointer)
		if !strconv.CanBackquote(p) || strings.ContainsAny(p, " \"`") {
			p = strconv.Quote(p)
		}
	}
	return "arguments at " + p + ": " + v.Keyword + ": " + v.Message
}

// Unwrap returns the decoder's error for a Keyword "json" violation, so that
// errors.Is(err, args.ErrLimit) tells an oversized call from a malformed one.
func (v *Violation) Unwrap() error { return v.err }

// settle builds Pointer from the reversed tokens collected on the way up.
func (v *Violation) settle() *Violation {
	if len(v.toks) > 0 {
		slices.Reverse(v.toks)
		v.Pointer = pointer(v.toks)
		v.toks = nil
	}
	v.Message = truncate(v.Message, MaxMessage)
	return v
}

// pointer builds an RFC 6901 pointer from unescaped tokens.
func pointer(toks []string) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// explain picks the violation to report for arguments the closed schema refused.
// Closing echoes errors: a member whose value fails its schema is not evaluated, so
// unevaluatedProperties refuses its key too, and a failing $ref or branch leaves every
// key it declared unevaluated, up to the root. So when the schema as declared also
// refuses the arguments, its error is the reason; when only closing does, a key that
// the schema declares nowhere is, else the deepest refused key (the shallower ones are
// its echoes).
func (s *Schema) explain(tree any, err error) *Violation {
	if s.unclosed == nil {
		return violationOf(err, nil)
	}
	if uerr := s.unclosed.Validate(tree); uerr != nil {
		return violationOf(uerr, nil)
	}
	return violationOf(err, s.unclosed)
}

// violationOf picks one violation out of the validator's error tree. Normally: the
// leaf errors under the wrappers (the root, allOf, $ref), with anyOf, oneOf and not
// taken as a whole, first by pointer then keyword, so that the choice does not depend
// on map order. For closing (declared is the unclosed schema): the keys closing
// refused, at any depth, undeclared first, then the deepest.
func violationOf(err error, declared *jsonschema.Schema) *Violation {
	closing := declared != nil
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &Violation{Keyword: "schema", Message: "validation failed"}
	}
	var leaves []*Violation
	if closing {
		collectClosing(ve, &leaves)
	}
	if len(leaves) == 0 {
		collect(ve, &leaves)
	}
	if len(leaves) == 0 {
		return &Violation{Keyword: "schema", Message: "validation failed"}
	}
	var echo map[*Violation]bool
	if closing {
		echo = map[*Violation]bool{}
		for _, l := range leaves {
			echo[l] = len(reach(declared, tokens(l.toks))) > 0
		}
	}
	slices.SortFunc(leaves, func(a, b *Violation) int {
		if closing && echo[a] != echo[b] {
			if echo[a] {
				return 1
			}
			return -1
		}
		if closing && len(a.toks) != len(b.toks) {
			return len(b.toks) - len(a.toks)
		}
		if c := slices.Compare(a.toks, b.toks); c != 0 {
			return c
		}
		if c := strings.Compare(a.Keyword, b.Keyword); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	v := leaves[0]
	v.Pointer = pointer(v.toks)
	v.toks = nil
	v.Message = truncate(v.Message, MaxMessage)
	return v
}

// tokens turns unescaped pointer tokens into reach's tokens.
func tokens(toks []string) []token {
	out := make([]token, len(toks))
	for i, t := range toks {
		out[i] = token{name: t, index: arrayIndex(t)}
	}
	return out
}

func collect(e *jsonschema.ValidationError, out *[]*Violation) {
	switch e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		for _, c := range e.Causes {
			collect(c, out)
		}
		return
	}
	if v := describe(e); v != nil {
		*out = append(*out, v)
	}
}

// collectClosing gathers the keys refused as not in the schema, anywhere in the tree.
func collectClosing(e *jsonschema.ValidationError, out *[]*Violation) {
	switch e.ErrorKind.(type) {
	case *kind.FalseSchema, *kind.AdditionalProperties:
		if v := describe(e); v.Keyword == "additionalProperties" {
			*out = append(*out, v)
		}
	}
	for _, c := range e.Causes {
		collectClosing(c, out)
	}
}

// describe turns one validator error into a violation whose toks hold the pointer's
// tokens in order. Messages name types, counts and the schema's values, never the
// instance's.
func describe(e *jsonschema.ValidationError) *Violation {
	toks := slices.Clone(e.InstanceLocation)
	v := &Violation{toks: toks}
	kw := e.ErrorKind.KeywordPath()
	if len(kw) > 0 {
		v.Keyword = kw[len(kw)-1]
	}
	switch k := e.ErrorKind.(type) {
	case *kind.FalseSchema:
		if strings.HasSuffix(e.SchemaURL, "/unevaluatedProperties") || strings.HasSuffix(e.SchemaURL, "/additionalProperties") {
			v.Keyword, v.Message = "additionalProperties", "property is not in the tool's input schema"
		} else {
			v.Keyword, v.Message = "false", "the schema allows no value here"
		}
	case *kind.AdditionalProperties:
		names := slices.Clone(k.Properties)
		slices.Sort(names)
		if len(names) > 0 {
			v.toks = append(v.toks, names[0])
		}
		v.Message = "property is not in the tool's input schema"
	case *kind.Required:
		if len(k.Missing) > 0 {
			v.toks = append(v.toks, slices.Min(k.Missing))
		}
		v.Message = "required property is missing"
	case *kind.DependentRequired:
		v.Keyword = "dependentRequired"
		v.Message = "property " + quoteShort(k.Prop) + " requires " + quoteList(k.Missing)
	case *kind.Dependency:
		v.Keyword = "dependencies"
		v.Message = "property " + quoteShort(k.Prop) + " requires " + quoteList(k.Missing)
	case *kind.Type:
		v.Message = "got " + k.Got + ", want " + strings.Join(k.Want, " or ")
	case *kind.Enum:
		v.Message = "value is not one of the allowed values"
		if s := jsonShort(k.Want); s != "" {
			v.Message += " " + s
		}
	case *kind.Const:
		v.Message = "value is not the allowed constant"
		if s := jsonShort(k.Want); s != "" {
			v.Message += " " + s
		}
	case *kind.Format:
		v.Message = "value is not a valid " + truncate(k.Want, 40)
	case *kind.MinLength:
		v.Message = fmt.Sprintf("string is shorter than %d characters", k.Want)
	case *kind.MaxLength:
		v.Message = fmt.Sprintf("string is longer than %d characters", k.Want)
	case *kind.Pattern:
		v.Message = "string does not match the pattern"
		if len(k.Want) <= 48 {
			v.Message += " " + strconv.Quote(k.Want)
		}
	case *kind.Minimum:
		v.Message = "value is below the minimum " + ratText(k.Want)
	case *kind.Maximum:
		v.Message = "value is above the maximum " + ratText(k.Want)
	case *kind.ExclusiveMinimum:
		v.Message = "value must be above " + ratText(k.Want)
	case *kind.ExclusiveMaximum:
		v.Message = "value must be below " + ratText(k.Want)
	case *kind.MultipleOf:
		v.Message = "value is not a multiple of " + ratText(k.Want)
	case *kind.MinItems:
		v.Message = fmt.Sprintf("array has fewer than %d items", k.Want)
	case *kind.MaxItems:
		v.Message = fmt.Sprintf("array has more than %d items", k.Want)
	case *kind.UniqueItems:
		v.Message = fmt.Sprintf("items %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.MinProperties:
		v.Message = fmt.Sprintf("object has fewer than %d properties", k.Want)
	case *kind.MaxProperties:
		v.Message = fmt.Sprintf("object has more than %d properties", k.Want)
	case *kind.Contains:
		v.Message = "no item matches the contains schema"
	case *kind.MinContains:
		v.Message = fmt.Sprintf("fewer than %d items match the contains schema", k.Want)
	case *kind.MaxContains:
		v.Message = fmt.Sprintf("more than %d items match the contains schema", k.Want)
	case *kind.PropertyNames:
		v.toks = append(v.toks, k.Property)
		v.Message = "property name is not allowed by propertyNames"
	case *kind.AdditionalItems:
		v.Message = fmt.Sprintf("array has more than %d items", k.Count)
	case *kind.Not:
		v.Keyword = "not"
		v.Message = "value matches a schema it must not match"
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			v.Message = "value matches more than one alternative"
		} else {
			v.Message = alternatives(e)
		}
	case *kind.AnyOf:
		v.Message = alternatives(e)
	case *kind.RefCycle:
		v.Keyword, v.Message = "$ref", "the schema's references form a cycle"
	default:
		if v.Keyword == "" {
			v.Keyword = "schema"
		}
		v.Message = "value fails the " + v.Keyword + " keyword"
	}
	return v
}

// alternatives describes an anyOf or oneOf that matched nothing; "got string, want
// integer or null" when every alternative failed on its type alone.
func alternatives(e *jsonschema.ValidationError) string {
	var got string
	var want []string
	for _, c := range e.Causes {
		for c != nil {
			if _, ok := c.ErrorKind.(*kind.Reference); ok && len(c.Causes) == 1 {
				c = c.Causes[0]
				continue
			}
			break
		}
		t, ok := c.ErrorKind.(*kind.Type)
		if !ok || len(c.Causes) > 0 || !slices.Equal(c.InstanceLocation, e.InstanceLocation) {
			return "value matches none of the allowed alternatives"
		}
		got = t.Got
		want = append(want, t.Want...)
	}
	if len(want) == 0 {
		return "value matches none of the allowed alternatives"
	}
	return "got " + got + ", want " + strings.Join(want, " or ")
}

// jsonShort renders a schema value as JSON if it is short, else "".
func jsonShort(v any) string {
	b, err := json.Marshal(v)
	if err != nil || len(b) > 60 {
		return ""
	}
	return string(b)
}

func quoteShort(s string) string { return strconv.Quote(truncate(s, 32)) }

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteShort(n)
	}
	return truncate(strings.Join(q, ", "), 60)
}

// ratText writes a schema bound as a short decimal.
func ratText(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return truncate(r.Num().String(), 32)
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
