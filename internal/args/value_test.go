package args

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustDecode(t testing.TB, in string) *Doc {
	t.Helper()
	d := new(Doc)
	if err := d.Decode([]byte(in), nil); err != nil {
		t.Fatalf("Decode(%q): %v", in, err)
	}
	return d
}

func TestValueAccessors(t *testing.T) {
	d := mustDecode(t, `{"s":"a\nb","n":-1.50e+3,"t":true,"f":false,"z":null,"a":[10,"x",[]],"o":{"k":"v"}}`)
	root := d.Root()

	type view struct {
		Kind Kind
		Str  string
		Raw  string
		Len  int
	}
	get := func(key string) view {
		v, ok := root.Lookup(key)
		if !ok {
			t.Fatalf("Lookup(%q) found nothing", key)
		}
		return view{v.Kind(), v.Str(), v.Raw(), v.Len()}
	}
	tests := []struct {
		key  string
		want view
	}{
		{"s", view{String, "a\nb", `"a\nb"`, 0}},
		{"n", view{Number, "", `-1.50e+3`, 0}},
		{"t", view{Bool, "", `true`, 0}},
		{"f", view{Bool, "", `false`, 0}},
		{"z", view{Null, "", `null`, 0}},
		{"a", view{Array, "", `[10,"x",[]]`, 3}},
		{"o", view{Object, "", `{"k":"v"}`, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, get(tt.key)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	if got, want := root.Len(), 7; got != want {
		t.Errorf("root Len() = %d, want %d", got, want)
	}
	var keys []string
	for i := range root.Len() {
		k, _ := root.Member(i)
		keys = append(keys, k)
	}
	if diff := cmp.Diff([]string{"s", "n", "t", "f", "z", "a", "o"}, keys); diff != "" {
		t.Errorf("members not in document order (-want +got):\n%s", diff)
	}
	a, _ := root.Lookup("a")
	if got := a.Index(1).Str(); got != "x" {
		t.Errorf(`a.Index(1).Str() = %q, want "x"`, got)
	}
	if _, ok := root.Lookup("missing"); ok {
		t.Error(`Lookup("missing") reported a member`)
	}
}

// TestValueMisuse checks that out-of-range and wrong-kind accessors return the Invalid
// value or zero results instead of panicking, so a caller's mistake fails closed.
func TestValueMisuse(t *testing.T) {
	d := mustDecode(t, `{"a":[1],"s":"x"}`)
	root := d.Root()
	a, _ := root.Lookup("a")
	s, _ := root.Lookup("s")
	var zero Value

	tests := []struct {
		name string
		got  Value
	}{
		{"index past end", a.Index(1)},
		{"negative index", a.Index(-1)},
		{"index into object", root.Index(0)},
		{"index into string", s.Index(0)},
		{"index into zero value", zero.Index(0)},
		{"member past end", member(root, 2)},
		{"negative member", member(root, -1)},
		{"member of array", member(a, 0)},
		{"member of zero value", member(zero, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if k := tt.got.Kind(); k != Invalid {
				t.Errorf("Kind() = %v, want Invalid", k)
			}
			if tt.got.Str() != "" || tt.got.Raw() != "" || tt.got.Len() != 0 {
				t.Errorf("invalid value has Str %q, Raw %q, Len %d; want zero results", tt.got.Str(), tt.got.Raw(), tt.got.Len())
			}
		})
	}
	if _, ok := a.Lookup("0"); ok {
		t.Error("Lookup on an array found a member")
	}
	if _, ok := zero.Lookup("a"); ok {
		t.Error("Lookup on the zero Value found a member")
	}
	if k, _ := a.Member(0); k != "" {
		t.Errorf("Member on an array returned key %q", k)
	}
}

func member(v Value, i int) Value {
	_, e := v.Member(i)
	return e
}

func TestKindString(t *testing.T) {
	got := []string{Invalid.String(), Null.String(), Bool.String(), Number.String(), String.String(), Array.String(), Object.String(), Kind(200).String()}
	want := []string{"invalid", "null", "bool", "number", "string", "array", "object", "Kind(200)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestMembers(t *testing.T) {
	d := mustDecode(t, `{"a":1,"b\u0041":[2],"c":{"d":null}}`)
	var got []string
	for k, v := range d.Root().Members() {
		got = append(got, k+"="+v.Raw())
	}
	if diff := cmp.Diff([]string{"a=1", "bA=[2]", `c={"d":null}`}, got); diff != "" {
		t.Errorf("Members (-want +got):\n%s", diff)
	}
	// The same as Member, for every object of a document.
	n := 0
	for _, v := range d.Root().Members() {
		if n++; n == 2 {
			break // stopping early is fine
		}
		_ = v
	}
	if n != 2 {
		t.Errorf("stopped after %d members, want 2", n)
	}
	arr, _ := d.Root().Lookup("b\u0041")
	for range arr.Members() {
		t.Error("an array has members")
	}
	// A Doc decoded again ends the iteration.
	n = 0
	for range d.Root().Members() {
		n++
		if err := d.Decode([]byte(`{"x":1,"y":2,"z":3}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n != 1 {
		t.Errorf("a stale iteration went on for %d members", n)
	}
}

// holds reports whether some string or key under v holds a byte of set: the
// reference for StringsMayHold.
func holds(v Value, set string) bool {
	switch v.Kind() {
	case String:
		return strings.ContainsAny(v.Str(), set) || containsByte(v.Str(), set)
	case Array:
		for i := range v.Len() {
			if holds(v.Index(i), set) {
				return true
			}
		}
	case Object:
		for k, e := range v.Members() {
			if containsByte(k, set) || holds(e, set) {
				return true
			}
		}
	}
	return false
}

// containsByte is strings.ContainsAny by bytes, for sets that are not UTF-8.
func containsByte(s, set string) bool {
	for i := 0; i < len(set); i++ {
		if strings.IndexByte(s, set[i]) >= 0 {
			return true
		}
	}
	return false
}

func TestStringsMayHold(t *testing.T) {
	tests := []struct {
		name, doc, set string
		want           bool
	}{
		{name: "braces only structural", doc: `{"a":{"b":[{}]},"c":"x"}`, set: "{}\xef", want: false},
		{name: "brace in a value", doc: `{"a":"{{x}}"}`, set: "{}", want: true},
		{name: "brace in a key", doc: `{"}":1}`, set: "{}", want: true},
		{name: "escaped brace", doc: `{"a":"\u007b"}`, set: "{", want: true},
		{name: "any escape", doc: `{"a":"\n"}`, set: "{", want: true},
		{name: "non-ASCII byte", doc: `{"a":"\uff5b"}`, set: "\xef", want: true},
		{name: "non-ASCII byte raw", doc: "{\"a\":\"\xef\xbd\x9b\"}", set: "\xef", want: true},
		{name: "colons structural", doc: `{"a":{"b":1,"c":2}}`, set: ":", want: false},
		{name: "colon in a string", doc: `{"a":"x:y"}`, set: ":", want: true},
		{name: "brackets", doc: `{"a":[[1],[]]}`, set: "[]", want: false},
		{name: "bracket in a string", doc: `{"a":[1],"b":"]"}`, set: "]", want: true},
		{name: "other byte outside strings is a maybe", doc: `{"a":true}`, set: "e", want: true},
		{name: "absent", doc: `{"path":"/home/u/x.go","head":40}`, set: "{}\xef%#", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustDecode(t, tt.doc)
			if got := d.Root().StringsMayHold(tt.set); got != tt.want {
				t.Errorf("StringsMayHold(%q) = %v, want %v", tt.set, got, tt.want)
			}
			if !tt.want && holds(d.Root(), tt.set) {
				t.Error("the table says no string holds the set, but one does")
			}
		})
	}
}

// FuzzStringsMayHold: a false answer is certain, for the document and for each of
// its members' values.
func FuzzStringsMayHold(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), "{}\xef")
	}
	f.Add([]byte(`{"a":{"b":[{}]},"c":"x:y"}`), ":[]")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		var d Doc
		if d.Decode(data, nil) != nil {
			return
		}
		check := func(v Value) {
			if !v.StringsMayHold(set) && holds(v, set) {
				t.Fatalf("StringsMayHold(%q) is false for %s, but a string holds one", set, v.Raw())
			}
		}
		check(d.Root())
		for _, e := range d.Root().Members() {
			check(e)
		}
		// Whether any brace: a decoded document without escapes is answered
		// from what Decode saw, exactly.
		exact := len(d.buf) == 0 && strings.Contains(set, "{") && strings.Contains(set, "}")
		for i := 0; i < len(set); i++ {
			exact = exact && (set[i] == '{' || set[i] == '}')
		}
		if exact {
			if got, want := d.Root().StringsMayHold(set), holds(d.Root(), set); got != want {
				t.Fatalf("StringsMayHold(%q) of %s = %v, want exactly %v", set, data, got, want)
			}
		}
	})
}

// TestStringsMayHoldDecoded: the answer Decode's notes give, in every place a
// brace or a non-ASCII byte can hide, and where an escape sends it to the count.
func TestStringsMayHoldDecoded(t *testing.T) {
	tests := []struct {
		name, doc string
		want      bool
	}{
		{"no string holds one", `{"a":"x","b":[1,{"c":"d"}],"e":{}}`, false},
		{"structural braces only", `{"a":{"b":{"c":[{}]}}}`, false},
		{"a brace in a value", `{"a":"x{y"}`, true},
		{"a closing brace in a value", `{"a":"}"}`, true},
		{"a brace in a key", `{"{{k":1}`, true},
		{"a brace deep down", `{"a":[1,[2,{"b":"c}}"}]]}`, true},
		{"a brace after eight plain bytes", `{"a":"01234567{"}`, true},
		{"a brace among eight plain bytes", `{"a":"0123{4567890123"}`, true},
		{"a closing brace at a word's end", `{"a":"0123456}0123"}`, true},
		{"no brace, long strings", `{"a":"0123456789abcdefghij","b":"klmnopqrstuvwxyz"}`, false},
		{"a non-ASCII byte", `{"a":"\uff5b"}`, true},
		{"a non-ASCII byte written raw", "{\"a\":\"\xef\xbd\x9b\"}", true},
		{"a non-ASCII key", "{\"\xc3\xa9\":1}", true},
		{"an escaped brace", `{"a":"\u007b"}`, true},
		{"an escape, which may hide one", `{"a":"\n"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Doc
			if err := d.Decode([]byte(tt.doc), nil); err != nil {
				t.Fatal(err)
			}
			if got := d.Root().StringsMayHold("{}\xef"); got != tt.want {
				t.Fatalf("StringsMayHold = %v, want %v", got, tt.want)
			}
		})
	}
}
