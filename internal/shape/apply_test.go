package shape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/difftest"
)

// flatTool is a tool whose edits are all members of the arguments object.
func flatTool(t testing.TB) *Fields {
	return &Fields{
		Clear:    []args.Pointer{mustPointer(t, "/bcc"), mustPointer(t, "/cc")},
		Set:      []Assign{{Pointer: mustPointer(t, "/footer"), Value: []byte(`{"t":"via aegis","n":[1,2.50]}`)}, {Pointer: mustPointer(t, "/z"), Value: []byte(`"\u00e9\n"`)}},
		Identity: []IdentityField{{Pointer: mustPointer(t, "/from"), Source: "principal"}},
	}
}

func mustPointer(t testing.TB, s string) args.Pointer {
	t.Helper()
	p, err := args.ParsePointer(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// shapeIn is one input of the flat edit and the tree edit: arguments, and
// the template syntax of a server that neutralises templates, or nil.
type shapeIn struct {
	args      []byte
	templates *Syntax
}

// shapeOut is what an edit gives: the shaped arguments, or its error
// ("" for none).
type shapeOut struct {
	text []byte
	err  string
}

// flatTwin holds the flat edit (flat.go) to the tree edit (tree.go) on
// flatTool: the same error, and the same arguments but for whitespace.
func flatTwin(t testing.TB) *difftest.Twin[shapeIn, shapeOut] {
	return &difftest.Twin[shapeIn, shapeOut]{
		Name: "flat edit",
		Fast: func(in shapeIn) shapeOut { return shapeWith(t, in, false) },
		Ref:  func(in shapeIn) shapeOut { return shapeWith(t, in, true) },
		Same: func(flat, tree shapeOut) (bool, string) {
			return flat.err == tree.err && sameJSON(flat.text, tree.text), ""
		},
		Show: func(in shapeIn) string {
			if in.templates != nil {
				return fmt.Sprintf("%s with %v templates", in.args, *in.templates)
			}
			return string(in.args)
		},
		ShowOut: func(o shapeOut) string { return fmt.Sprintf("%q %s", o.err, o.text) },
	}
}

// shapeWith runs flatTool's edit on in, the tree edit when forceTree is
// set, else the flat one.
func shapeWith(t testing.TB, in shapeIn, forceTree bool) shapeOut {
	tool := flatTool(t)
	if err := tool.Compile(); err != nil {
		t.Fatal(err)
	}
	if !tool.flat {
		t.Fatal("the tool is not flat")
	}
	if forceTree {
		tool.flat = false
	}
	var docs [2]args.Doc
	w := &Work{Doc: &docs[0], Spare: &docs[1]}
	if err := w.Doc.Decode(in.args, nil); err != nil {
		return shapeOut{err: "decode: " + err.Error()}
	}
	out, err := tool.Apply(w, in.args, in.templates, &Principal{Name: "al\"ice"})
	if err != nil {
		return shapeOut{err: err.Error()}
	}
	// The document the pipeline goes on with must be the text it forwards.
	var ref args.Doc
	if err := ref.Decode(out, nil); err != nil {
		t.Fatalf("shaped arguments %s do not decode: %v", out, err)
	}
	if diff := sameValue(ref.Root(), w.Doc.Root()); diff != "" {
		t.Fatalf("shaped arguments %s: the document differs from their decoding: %s", out, diff)
	}
	return shapeOut{text: out}
}

// TestShapeFlatEqualsTree holds the flat edit to the tree edit on
// arguments that reach every field of flatTool, as written and in other
// cases, with and without templates neutralised.
func TestShapeFlatEqualsTree(t *testing.T) {
	cases := []string{
		`{}`,
		`{"to":"bob","bcc":"eve","body":"hi \u2028 \"q\""}`,
		`{"footer":"model's","z":1,"a":{"bcc":"kept: not top level"},"n":1.50e3}`,
		`{"list":[1,{"x":null}],"cc":[],"k\u0000ey":true}`,
		`{"from":"x"}`,
		`{"From":"x"}`,
		`{"BCC":"eve"}`,
		`{"Footer":1}`,
		`{"Z":1,"footer":2}`,
		`{"cC":1,"bcc":2}`,
		`{"to":"x","ſ":1,"fooTer":{}}`,
		`{"from":"x","BCC":1}`,
		`{"to":"{{x}}","bcc":"{{{y}}}","z":"{%a%}"}`,
	}
	mustache := Mustache
	inputs := func(yield func(shapeIn) bool) {
		for _, a := range cases {
			for _, m := range []*Syntax{nil, &mustache} {
				if !yield(shapeIn{[]byte(a), m}) {
					return
				}
			}
		}
	}
	flatTwin(t).Agree(t, inputs)
	if out := shapeWith(t, shapeIn{args: []byte(`{"to":"bob"}`)}, false); out.err != "" {
		t.Errorf("a plain call was refused: %s", out.err)
	}
}

// TestShapeFlatManyMembers: past 64 members, and after templates rewrote the
// arguments, the flat edit reads the members itself and still agrees with the
// tree edit.
func TestShapeFlatManyMembers(t *testing.T) {
	many := func(extra string) []byte {
		var b strings.Builder
		b.WriteByte('{')
		for i := range 70 {
			fmt.Fprintf(&b, `"m%d":%d,`, i, i)
		}
		b.WriteString(extra + `}`)
		return []byte(b.String())
	}
	mustache := Mustache
	for _, tt := range []struct {
		name      string
		args      []byte
		templates *Syntax
		wantErr   bool
	}{
		{"70 members, then the cleared and the pinned", many(`"bcc":"eve","footer":"x"`), nil, false},
		{"70 members, then a case variant", many(`"BCC":"eve"`), nil, true},
		{"70 members, then the identity field", many(`"from":"mallory"`), nil, true},
		{"templates rewrite a member before the cleared one", []byte(`{"to":"{{x}}","bcc":"eve","a":"b","footer":1}`), &mustache, false},
		{"templates rewrite, then a case variant", []byte(`{"to":"{{x}}","Cc":"eve"}`), &mustache, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, _, ok := flatTwin(t).Check(t, shapeIn{tt.args, tt.templates})
			if !ok {
				t.FailNow()
			}
			flat, fe := out.text, out.err
			if (fe != "") != tt.wantErr {
				t.Fatalf("error %q, want one: %v", fe, tt.wantErr)
			}
			if fe == "" && (bytes.Contains(flat, []byte(`"bcc"`)) || !bytes.Contains(flat, []byte(`"footer":{"t"`))) {
				t.Fatalf("the edit was not applied: %s", flat)
			}
		})
	}
}

// FuzzShapeFlat holds the flat edit to the tree edit on any arguments,
// with and without templates neutralised.
func FuzzShapeFlat(f *testing.F) {
	f.Add([]byte(`{"to":"bob","bcc":"eve","footer":1}`), false)
	f.Add([]byte(`{"a":{"b":[1,"\ud83d\ude00"]},"cc":null}`), false)
	f.Add([]byte(`{"to":"{{x}}","Bcc":"eve","footer":1}`), true)
	f.Fuzz(func(t *testing.T, a []byte, templates bool) {
		in := shapeIn{args: a}
		if templates {
			mustache := Mustache
			in.templates = &mustache
		}
		flatTwin(t).Check(t, in)
	})
}

// sameValue compares two values through everything the pipeline reads of
// them (kind, source text, string, members in order, elements) and says
// where they differ, or "".
func sameValue(want, got args.Value) string {
	switch {
	case want.Kind() != got.Kind():
		return "kind " + want.Kind().String() + " vs " + got.Kind().String()
	case want.Raw() != got.Raw():
		return "text " + want.Raw() + " vs " + got.Raw()
	case want.Str() != got.Str():
		return "string " + want.Str() + " vs " + got.Str()
	case want.Len() != got.Len():
		return "length of " + want.Raw()
	}
	for i := range want.Len() {
		var w, g args.Value
		if want.Kind() == args.Object {
			var wk, gk string
			wk, w = want.Member(i)
			gk, g = got.Member(i)
			if wk != gk {
				return "key " + wk + " vs " + gk
			}
			if lv, ok := got.Lookup(wk); !ok || lv != g {
				return "lookup of " + wk
			}
		} else {
			w, g = want.Index(i), got.Index(i)
		}
		if d := sameValue(w, g); d != "" {
			return d
		}
	}
	return ""
}

// sameJSON reports whether a and b are the same JSON text but for
// whitespace between tokens: the flat edit that appends to the model's
// arguments keeps the model's spacing, the tree edit writes none; member
// order and every token must agree.
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
