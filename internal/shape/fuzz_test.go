package shape

import (
	"errors"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
)

// FuzzNeutralise checks, for every input and both syntaxes, that the result holds no
// delimiter (as written, and after folding compatibility forms and deleting ignorable
// characters), that Neutralise is idempotent, that it only inserts spaces, and that it
// agrees with the naive reference.
func FuzzNeutralise(f *testing.F) {
	for _, tt := range neutraliseTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, x := range []Syntax{Mustache, Jinja} {
			got := x.Neutralise(s)
			if d, ok := delimiter(x, got); ok {
				t.Fatalf("%v.Neutralise(%q) = %q holds %q", x, s, got, d)
			}
			if again := x.Neutralise(got); again != got {
				t.Fatalf("%v.Neutralise not idempotent on %q: %q then %q", x, s, got, again)
			}
			if strings.ReplaceAll(got, " ", "") != strings.ReplaceAll(s, " ", "") {
				t.Fatalf("%v.Neutralise(%q) = %q changed more than spaces", x, s, got)
			}
			if (got == s) == x.needs(s) {
				t.Fatalf("%v.needs(%q) = %v but the result is %q", x, s, x.needs(s), got)
			}
			if len(s) > 256 {
				continue // the reference is quadratic
			}
			if ref := reference(x, s); got != ref {
				t.Fatalf("%v.Neutralise(%q) = %q, reference %q", x, s, got, ref)
			}
		}
	})
}

// FuzzNeutraliseJSON checks that NeutraliseJSON's output is strict JSON of the same
// shape in which every string is the input's string neutralised, numbers and unchanged
// strings keep their source text, and that nil output means nothing needed rewriting.
func FuzzNeutraliseJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":"{{x}}"}`, `{"a":["{{{",1.5e3,{"}}":null}],"b":true}`,
		`{"{{a":1,"{ {a":2}`, `{"a":"\u007b\u007b","b/~":"%}"}`, `{"a":{"b":{"c":"{#"}}}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, jinja bool) {
		x := Mustache
		if jinja {
			x = Jinja
		}
		var in args.Doc
		if in.Decode(data, nil) != nil {
			return
		}
		out, changed, err := x.NeutraliseJSON(in.Root())
		if err != nil {
			if !errors.Is(err, ErrKeyCollision) {
				t.Fatalf("NeutraliseJSON(%s): %v", data, err)
			}
			return
		}
		if out == nil {
			if changed != nil || x.anyNeeds(in.Root()) {
				t.Fatalf("NeutraliseJSON(%s) changed nothing but reports %q", data, changed)
			}
			out = data // compare the input with itself below
		} else if len(changed) == 0 {
			t.Fatalf("NeutraliseJSON(%s) = %s with no pointer", data, out)
		}
		var got args.Doc
		if err := got.Decode(out, nil); err != nil {
			t.Fatalf("NeutraliseJSON(%s) = %s, not strict JSON: %v", data, out, err)
		}
		sameShape(t, x, in.Root(), got.Root())
		for _, c := range changed {
			if _, err := args.ParsePointer(c); err != nil {
				t.Fatalf("pointer %q: %v", c, err)
			}
		}
	})
}

// sameShape fails unless b is a neutralised with its source text kept where nothing
// changed.
func sameShape(t *testing.T, x Syntax, a, b args.Value) {
	t.Helper()
	if a.Kind() != b.Kind() || a.Len() != b.Len() {
		t.Fatalf("%s became %s", a.Raw(), b.Raw())
	}
	switch a.Kind() {
	case args.String:
		if x.Neutralise(a.Str()) != b.Str() {
			t.Fatalf("string %s became %s", a.Raw(), b.Raw())
		}
		if !x.needs(a.Str()) && a.Raw() != b.Raw() {
			t.Fatalf("unchanged string %s re-encoded as %s", a.Raw(), b.Raw())
		}
	case args.Array:
		for i := range a.Len() {
			sameShape(t, x, a.Index(i), b.Index(i))
		}
	case args.Object:
		for i := range a.Len() {
			ka, va := a.Member(i)
			kb, vb := b.Member(i)
			if x.Neutralise(ka) != kb {
				t.Fatalf("key %q became %q", ka, kb)
			}
			sameShape(t, x, va, vb)
		}
	default:
		if a.Raw() != b.Raw() {
			t.Fatalf("%s became %s", a.Raw(), b.Raw())
		}
	}
}

// FuzzMayHoldBrace holds the word-at-a-time test to a byte loop.
func FuzzMayHoldBrace(f *testing.F) {
	for _, s := range []string{"", "{", "abcdefgh}", "abcdefghijklmnop\xef", "/home/u/projects/app/x.go", "12345678{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := strings.ContainsAny(s, "{}") || strings.IndexByte(s, 0xEF) >= 0
		if got := mayHoldBrace(s); got != want {
			t.Fatalf("mayHoldBrace(%q) = %v, want %v", s, got, want)
		}
	})
}
