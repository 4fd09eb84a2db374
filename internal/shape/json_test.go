package shape

import (
	"errors"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/google/go-cmp/cmp"
)

func decode(t testing.TB, in string) *args.Doc {
	t.Helper()
	d := new(args.Doc)
	if err := d.Decode([]byte(in), nil); err != nil {
		t.Fatalf("Decode(%s): %v", in, err)
	}
	return d
}

func TestNeutraliseJSON(t *testing.T) {
	tests := []struct {
		name    string
		syntax  Syntax
		in      string
		want    string // "" when nothing changes
		changed []string
	}{
		// Nothing to rewrite: nil output, the caller forwards what it has.
		{name: "empty object", in: `{}`},
		{name: "plain values", in: `{"a":"x","b":[1,true,null,{"c":"{x}"}],"d":{"e":"f(x){return}"}}`},
		{name: "neutral already", in: `{"a":"{ {x} }"}`},
		{name: "jinja markers in mustache", in: `{"a":"{%x%}"}`},

		// String values at any depth.
		{name: "top-level value", in: `{"a":"{{x}}"}`, want: `{"a":"{ {x} }"}`, changed: []string{"/a"}},
		{name: "triple stash", in: `{"body":"Hi {{{secret}}}"}`, want: `{"body":"Hi { { {secret} } }"}`, changed: []string{"/body"}},
		{
			name:    "nested",
			in:      `{"a":["ok","{{b}}",{"c":"}}"}],"d":{"e":{"f":"{{"}}}`,
			want:    `{"a":["ok","{ {b} }",{"c":"} }"}],"d":{"e":{"f":"{ {"}}}`,
			changed: []string{"/a/1", "/a/2/c", "/d/e/f"},
		},
		{name: "jinja statement", syntax: Jinja, in: `{"q":"{% for x in y %}"}`, want: `{"q":"{ % for x in y % }"}`, changed: []string{"/q"}},

		// Escapes: the check reads the unescaped text; output escapes what it must.
		{name: "escaped braces", in: `{"a":"\u007b\u007bx\u007d\u007d"}`, want: `{"a":"{ {x} }"}`, changed: []string{"/a"}},
		{name: "half escaped", in: `{"a":"{\u007b"}`, want: `{"a":"{ {"}`, changed: []string{"/a"}},
		{name: "escaped fullwidth", in: `{"a":"\uff5b\uff5b"}`, want: `{"a":"｛ ｛"}`, changed: []string{"/a"}},
		{name: "escaped zero width", in: `{"a":"{\u200b{"}`, want: "{\"a\":\"{\u200b {\"}", changed: []string{"/a"}},
		{name: "controls re-escaped", in: `{"a":"\"{{\n\t\u0001\\"}`, want: `{"a":"\"{ {\n\t\u0001\\"}`, changed: []string{"/a"}},

		// What must survive a rewrite: order, numbers, unchanged strings as written.
		{
			name:    "source text kept",
			in:      `{ "z" : 12345678901234567890 , "a" : "\u0041\/" , "m" : 1.50E+3 , "s" : "{{" , "t" : [ true , null ] }`,
			want:    `{"z":12345678901234567890,"a":"\u0041\/","m":1.50E+3,"s":"{ {","t":[true,null]}`,
			changed: []string{"/s"},
		},

		// Keys.
		{name: "key", in: `{"{{k}}":"v"}`, want: `{"{ {k} }":"v"}`, changed: []string{"/{{k}}"}},
		{name: "key and value", in: `{"{{k}}":"}}"}`, want: `{"{ {k} }":"} }"}`, changed: []string{"/{{k}}"}},
		{name: "key then child", in: `{"{{k":{"a":"}}"}}`, want: `{"{ {k":{"a":"} }"}}`, changed: []string{"/{{k", "/{{k/a"}},
		{name: "pointer escapes", in: `{"a/b~{{":"x","c":{"~/":"}}"}}`, want: `{"a/b~{ {":"x","c":{"~/":"} }"}}`, changed: []string{"/a~1b~0{{", "/c/~0~1"}},
		{name: "empty key", in: `{"":"{{"}`, want: `{"":"{ {"}`, changed: []string{"/"}},
		{name: "unchanged key re-escaped", in: `{"\u0041":"{{"}`, want: `{"A":"{ {"}`, changed: []string{"/A"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decode(t, tt.in)
			out, changed, err := tt.syntax.NeutraliseJSON(d.Root())
			if err != nil {
				t.Fatalf("NeutraliseJSON: %v", err)
			}
			if diff := cmp.Diff(tt.want, string(out)); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.changed, changed); diff != "" {
				t.Errorf("changed (-want +got):\n%s", diff)
			}
			if out == nil {
				return
			}
			// The output is strict JSON that needs no further rewriting.
			d2 := decode(t, string(out))
			out2, changed2, err := tt.syntax.NeutraliseJSON(d2.Root())
			if out2 != nil || changed2 != nil || err != nil {
				t.Errorf("second pass = %s, %q, %v; want nothing", out2, changed2, err)
			}
			// Each reported pointer selects a string (or member) in the input.
			for _, c := range changed {
				p, err := args.ParsePointer(c)
				if err != nil {
					t.Fatalf("reported pointer %q: %v", c, err)
				}
				n := 0
				p.Select(d.Root(), func(args.Value, args.Loc) { n++ })
				if n != 1 {
					t.Errorf("reported pointer %q selects %d values in the input", c, n)
				}
			}
		})
	}
}

func TestNeutraliseJSONNonObject(t *testing.T) {
	d := decode(t, `{"a":"{{x}}","b":["}}",2]}`)
	a, _ := d.Root().Lookup("a")
	out, changed, err := Mustache.NeutraliseJSON(a)
	if err != nil || string(out) != `"{ {x} }"` || !cmp.Equal(changed, []string{""}) {
		t.Errorf("string value: %s, %q, %v", out, changed, err)
	}
	b, _ := d.Root().Lookup("b")
	out, changed, err = Mustache.NeutraliseJSON(b)
	if err != nil || string(out) != `["} }",2]` || !cmp.Equal(changed, []string{"/0"}) {
		t.Errorf("array value: %s, %q, %v", out, changed, err)
	}
}

func TestNeutraliseJSONRefuses(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"rewritten key equals a later key", `{"{{a":1,"{ {a":2}`, ErrKeyCollision},
		{"rewritten key equals an earlier key", `{"{ {a":1,"{{a":2}`, ErrKeyCollision},
		{"two keys become one", `{"x":{"b":0,"{{a}}":1,"{ {a}}":2}}`, ErrKeyCollision},
		{"two keys become one but for case", `{"{{A":0,"{ {a":0}`, ErrKeyCollision},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decode(t, tt.in)
			out, changed, err := Mustache.NeutraliseJSON(d.Root())
			if !errors.Is(err, tt.want) || out != nil || changed != nil {
				t.Errorf("NeutraliseJSON = %s, %q, %v; want error %v", out, changed, err, tt.want)
			}
		})
	}
	t.Run("zero value", func(t *testing.T) {
		if _, _, err := Mustache.NeutraliseJSON(args.Value{}); err == nil {
			t.Error("NeutraliseJSON(zero Value) succeeded")
		}
	})
	t.Run("stale value", func(t *testing.T) {
		d := decode(t, `{"a":"{{"}`)
		root := d.Root()
		if err := d.Decode([]byte(`{}`), nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Mustache.NeutraliseJSON(root); err == nil {
			t.Error("NeutraliseJSON(stale Value) succeeded")
		}
	})
}

func TestNeutraliseJSONCollisionNamesNoKey(t *testing.T) {
	d := decode(t, `{"{{secret-key":1,"{ {secret-key":2}`)
	_, _, err := Mustache.NeutraliseJSON(d.Root())
	if err == nil {
		t.Fatal("no error")
	}
	const want = `neutralising templates makes two keys equal: members 0 and 1 of the object at ""`
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestNeutraliseJSONUnchangedDoesNotAllocate(t *testing.T) {
	d := decode(t, `{"to":"a@example.com","body":"Hi {name}, see f(x){return}","tags":["x","y"],"n":{"k":[1,2,{"z":"{ {"}]}}`)
	root := d.Root()
	allocs := testing.AllocsPerRun(100, func() {
		out, changed, err := Jinja.NeutraliseJSON(root)
		if out != nil || changed != nil || err != nil {
			t.Fatal("changed")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations, want 0", allocs)
	}
}
