package schema

import (
	"encoding/json"
	"strconv"

	"github.com/aegis-mcp/aegis/internal/args"
)

// toTree converts v into the form the validator reads: map[string]any, []any, string,
// bool, nil, and json.Number holding the number's canonical (ECMAScript) text. A number
// without an exact double value is refused with a *[Violation] at its pointer: the
// validator compares exact decimals, and a server reading doubles would see another
// value. Handing the validator short canonical text also keeps its big.Rat arithmetic
// cheap whatever exponent the input wrote ("1e-999999" would cost it seconds).
//
// repl replaces the numbers that a clamp rewrote; it may be nil.
func toTree(v args.Value, repl map[args.Value]string) (any, *Violation) {
	switch v.Kind() {
	case args.Null:
		return nil, nil
	case args.Bool:
		return v.Raw() == "true", nil
	case args.String:
		return v.Str(), nil
	case args.Number:
		if t, ok := repl[v]; ok {
			return json.Number(t), nil
		}
		t, err := canonicalNumber(v)
		if err != nil {
			return nil, &Violation{Keyword: "number", Message: err.Error()}
		}
		return json.Number(t), nil
	case args.Array:
		a := make([]any, v.Len())
		for i := range a {
			var err *Violation
			if a[i], err = toTree(v.Index(i), repl); err != nil {
				err.toks = append(err.toks, strconv.Itoa(i))
				return nil, err
			}
		}
		return a, nil
	case args.Object:
		m := make(map[string]any, v.Len())
		for i := range v.Len() {
			k, e := v.Member(i)
			var err *Violation
			if m[k], err = toTree(e, repl); err != nil {
				err.toks = append(err.toks, k)
				return nil, err
			}
		}
		return m, nil
	}
	return nil, &Violation{Keyword: "json", Message: "invalid JSON value"}
}

type numberError string

func (e numberError) Error() string { return string(e) }

const errInexact = numberError("number has no exact IEEE 754 double value (out of range, or too many digits)")

// canonicalNumber returns the canonical text of a number, or errInexact.
func canonicalNumber(v args.Value) (string, error) {
	raw := v.Raw()
	if isPlainInt(raw) {
		return raw, nil // its own canonical form; no allocation
	}
	var buf [32]byte
	b, err := v.AppendCanonical(buf[:0])
	if err != nil {
		return "", errInexact
	}
	return string(b), nil
}

// isPlainInt reports whether raw is an integer of 1 to 15 digits, other than -0.
func isPlainInt(raw string) bool {
	d := raw
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
		if d == "0" {
			return false
		}
	}
	if len(d) == 0 || len(d) > 15 {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// numberText writes a finite bound as a JSON number with the fewest digits that read
// back as the same double.
func numberText(f float64) string {
	if f == 0 {
		return "0" // not "-0"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// encode writes v as JSON with the numbers in repl replaced. Everything else keeps its
// source text except object keys, which are re-escaped minimally, and whitespace
// between tokens, which is dropped. Recursion is bounded by the decoder's MaxDepth.
func encode(dst []byte, v args.Value, repl map[args.Value]string) []byte {
	switch v.Kind() {
	case args.Number:
		if t, ok := repl[v]; ok {
			return append(dst, t...)
		}
		return append(dst, v.Raw()...)
	case args.Array:
		dst = append(dst, '[')
		for i := range v.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = encode(dst, v.Index(i), repl)
		}
		return append(dst, ']')
	case args.Object:
		dst = append(dst, '{')
		for i := range v.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			k, e := v.Member(i)
			dst = append(args.AppendString(dst, k), ':')
			dst = encode(dst, e, repl)
		}
		return append(dst, '}')
	default:
		return append(dst, v.Raw()...)
	}
}
