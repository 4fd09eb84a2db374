package binding

import (
	"math"
	"regexp"
	"strconv"

	"github.com/aegis-mcp/aegis/internal/args"
)

// A ValueArg names an argument as a typed value (DESIGN.md R35): the
// policy's conditions read it as value.NAME (`value.amount > 1000`),
// whatever the tool calls its argument. A value is not a resource: it
// derives no capability and grants nothing by itself.
type ValueArg struct {
	Pointer args.Pointer
	Name    string
}

// validValueName accepts names a CEL condition can select: value.NAME.
var validValueName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`).MatchString

// ValuesOf returns the values b names in the arguments root: by name, a
// string, a bool, an integer (int64) when the number is one exactly, else
// a float64 (±Inf past its range); several when a pointer with * selects
// several (a list). A name whose argument is absent is absent. One that is
// present but is no scalar (an object, an array, null) is its raw JSON
// text: present, so has() is true, and no number, so a comparison with
// one fails, closed (a deny or ask rule meets the call).
func (b *Binding) ValuesOf(root args.Value) map[string]any {
	if len(b.Values) == 0 {
		return nil
	}
	out := make(map[string]any, len(b.Values))
	for _, va := range b.Values {
		var got []any
		va.Pointer.Select(root, func(v args.Value, _ args.Loc) {
			got = append(got, scalarOf(v))
		})
		switch {
		case len(got) == 0:
		case va.Pointer.Wild():
			out[va.Name] = got
		default:
			out[va.Name] = got[0]
		}
	}
	return out
}

func scalarOf(v args.Value) any {
	switch v.Kind() {
	case args.String:
		return v.Str()
	case args.Bool:
		return v.Raw() == "true"
	case args.Number:
		raw := v.Raw()
		if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
			return n
		}
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil && !math.IsInf(f, 0) {
			return raw // no number a condition can compare: closed
		}
		if !math.IsInf(f, 0) && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f)
		}
		return f // ±Inf past float64's range: above every limit
	}
	return string(v.AppendJSON(nil))
}
