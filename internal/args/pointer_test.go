package args

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type hit struct {
	At  string
	Raw string
}

func selectAll(p Pointer, root Value) []hit {
	var got []hit
	p.Select(root, func(v Value, at Loc) {
		got = append(got, hit{at.String(), v.Raw()})
	})
	return got
}

func TestPointerSelect(t *testing.T) {
	const doc = `{"a":[10,20,30],"a/b":1,"a~b":2,"a~1":3,"":0,"paths":["/x","/y"],"s":"str","e":[],"o":{"01":"x","-":"dash"},"m":{"p":1,"q":{"x":5}},"esc":{"a/b":1,"c~d":2}}`
	tests := []struct {
		name string
		doc  string // defaults to doc
		ptr  string
		want []hit
	}{
		{name: "empty pointer is the root", doc: `{"k":1}`, ptr: "", want: []hit{{"", `{"k":1}`}}},
		{name: "slash is the empty key", ptr: "/", want: []hit{{"/", "0"}}},
		{name: "plain key", ptr: "/a", want: []hit{{"/a", "[10,20,30]"}}},
		{name: "escaped slash", ptr: "/a~1b", want: []hit{{"/a~1b", "1"}}},
		{name: "escaped tilde", ptr: "/a~0b", want: []hit{{"/a~0b", "2"}}},
		{name: "tilde zero then one is a literal ~1", ptr: "/a~01", want: []hit{{"/a~01", "3"}}},
		{name: "array index zero", ptr: "/a/0", want: []hit{{"/a/0", "10"}}},
		{name: "array last index", ptr: "/a/2", want: []hit{{"/a/2", "30"}}},
		{name: "array index past end", ptr: "/a/3"},
		{name: "leading zero index is not an index", ptr: "/a/01"},
		{name: "dash is past the end", ptr: "/a/-"},
		{name: "negative index", ptr: "/a/-1"},
		{name: "plus index", ptr: "/a/+1"},
		{name: "exponent index", ptr: "/a/1e0"},
		{name: "space index", ptr: "/a/ 1"},
		{name: "overflowing index", ptr: "/a/99999999999999999999999999"},
		{name: "leading zero is a fine object key", ptr: "/o/01", want: []hit{{"/o/01", `"x"`}}},
		{name: "dash is a fine object key", ptr: "/o/-", want: []hit{{"/o/-", `"dash"`}}},
		{name: "wildcard over array", ptr: "/paths/*", want: []hit{{"/paths/0", `"/x"`}, {"/paths/1", `"/y"`}}},
		{name: "wildcard over object members", ptr: "/m/*", want: []hit{{"/m/p", "1"}, {"/m/q", `{"x":5}`}}},
		{name: "wildcard escapes keys in at", ptr: "/esc/*", want: []hit{{"/esc/a~1b", "1"}, {"/esc/c~0d", "2"}}},
		{name: "wildcard over empty array", ptr: "/e/*"},
		{
			name: "wildcard then key",
			doc:  `{"a":{"x":1},"b":{"y":2},"c":{"x":3},"d":[4],"e":"x"}`,
			ptr:  "/*/x",
			want: []hit{{"/a/x", "1"}, {"/c/x", "3"}},
		},
		{
			name: "two wildcards",
			doc:  `{"a":[1,2],"b":{"c":3},"d":4}`,
			ptr:  "/*/*",
			want: []hit{{"/a/0", "1"}, {"/a/1", "2"}, {"/b/c", "3"}},
		},
		{
			name: "wildcard deep in arrays of objects",
			doc:  `{"edits":[{"path":"/p1"},{"old":"x"},{"path":"/p2"}]}`,
			ptr:  "/edits/*/path",
			want: []hit{{"/edits/0/path", `"/p1"`}, {"/edits/2/path", `"/p2"`}},
		},
		{
			name: "star selects a literal star key too",
			doc:  `{"*":1,"b":2}`,
			ptr:  "/*",
			want: []hit{{"/*", "1"}, {"/b", "2"}},
		},
		{name: "into a string", ptr: "/s/x"},
		{name: "index into a string", ptr: "/s/0"},
		{name: "wildcard into a string", ptr: "/s/*"},
		{name: "into a number", ptr: "/a/0/x"},
		{name: "missing key", ptr: "/missing"},
		{name: "missing key below", ptr: "/m/zz/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.doc
			if src == "" {
				src = doc
			}
			d := mustDecode(t, src)
			p, err := ParsePointer(tt.ptr)
			if err != nil {
				t.Fatalf("ParsePointer(%q): %v", tt.ptr, err)
			}
			if got := p.String(); got != tt.ptr {
				t.Errorf("String() = %q, want %q", got, tt.ptr)
			}
			if diff := cmp.Diff(tt.want, selectAll(p, d.Root())); diff != "" {
				t.Errorf("Select(%q) (-want +got):\n%s", tt.ptr, diff)
			}
		})
	}
}

func TestParsePointerRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"no leading slash", "a"},
		{"relative", "0/a"},
		{"bad escape", "/~2"},
		{"tilde at end", "/a~"},
		{"tilde then letter", "/~a"},
		{"tilde in a later token", "/a/b~"},
		{"URI fragment form", "#/a"},
		{"invalid UTF-8", "/\xff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePointer(tt.in)
			if err == nil {
				t.Fatalf("ParsePointer(%q) = %q, want an error", tt.in, p)
			}
			if !strings.Contains(err.Error(), "pointer") {
				t.Errorf("error %q does not say it is about a pointer", err)
			}
		})
	}
}

// TestSelectRelativeRoot checks that at is relative to the root passed to Select.
func TestSelectRelativeRoot(t *testing.T) {
	d := mustDecode(t, `{"req":{"files":["a","b"]}}`)
	req, _ := d.Root().Lookup("req")
	p, err := ParsePointer("/files/*")
	if err != nil {
		t.Fatal(err)
	}
	want := []hit{{"/files/0", `"a"`}, {"/files/1", `"b"`}}
	if diff := cmp.Diff(want, selectAll(p, req)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSelectInvalidRoot(t *testing.T) {
	p, err := ParsePointer("")
	if err != nil {
		t.Fatal(err)
	}
	if got := selectAll(p, Value{}); got != nil {
		t.Errorf("Select on the zero Value = %v, want nothing", got)
	}
}

func TestZeroPointer(t *testing.T) {
	var p Pointer
	if got := p.String(); got != "" {
		t.Errorf("zero Pointer String() = %q, want the root pointer", got)
	}
	d := mustDecode(t, `{"a":1}`)
	if diff := cmp.Diff([]hit{{"", `{"a":1}`}}, selectAll(p, d.Root())); diff != "" {
		t.Errorf("zero Pointer selects (-want +got):\n%s", diff)
	}
}

// caseVariantRef is CaseVariant as first written: look the token up, and only when it
// is absent look for a key equal to it under case folding.
func caseVariantRef(p Pointer, v Value, k int) (string, bool) {
	if k == len(p.toks) {
		return "", false
	}
	t := &p.toks[k]
	switch v.Kind() {
	case Object:
		if t.wild {
			for m := range v.Len() {
				_, e := v.Member(m)
				if key, ok := caseVariantRef(p, e, k+1); ok {
					return key, true
				}
			}
			return "", false
		}
		if e, ok := v.Lookup(t.name); ok {
			return caseVariantRef(p, e, k+1)
		}
		for m := range v.Len() {
			if name, _ := v.Member(m); strings.EqualFold(name, t.name) {
				return name, true
			}
		}
	case Array:
		if t.wild {
			for m := range v.Len() {
				if key, ok := caseVariantRef(p, v.Index(m), k+1); ok {
					return key, true
				}
			}
		} else if t.index >= 0 && t.index < v.Len() {
			return caseVariantRef(p, v.Index(t.index), k+1)
		}
	}
	return "", false
}

func TestCaseVariant(t *testing.T) {
	doc := `{"Path":1,"head":{"X":[{"k":1},{"K":2}]},"ſ":3,"list":[{"Id":1}]}`
	tests := []struct {
		name, ptr string
		want      string // the variant key, "" for none
	}{
		{name: "variant at the top", ptr: "/path", want: "Path"},
		{name: "exact", ptr: "/head"},
		{name: "variant below an exact key", ptr: "/head/x", want: "X"},
		{name: "through a wildcard", ptr: "/head/X/*/k", want: "K"},
		{name: "long s folds to s", ptr: "/s", want: "ſ"},
		{name: "array index", ptr: "/list/0/id", want: "Id"},
		{name: "absent", ptr: "/nothing"},
		{name: "into a scalar", ptr: "/Path/x"},
	}
	d := mustDecode(t, doc)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePointer(tt.ptr)
			if err != nil {
				t.Fatal(err)
			}
			key, found := p.CaseVariant(d.Root())
			if key != tt.want || found != (tt.want != "") {
				t.Fatalf("CaseVariant(%s) = %q, %v; want %q", tt.ptr, key, found, tt.want)
			}
		})
	}
}

// FuzzCaseVariant holds CaseVariant's one pass to the reference's lookup and search.
func FuzzCaseVariant(f *testing.F) {
	f.Add([]byte(`{"Path":1,"head":{"X":[{"k":1},{"K":2}]},"ſ":3}`), "/path")
	f.Add([]byte(`{"a":{"B":1}}`), "/a/b")
	f.Add([]byte(`{"a":[{"B":1},{"b":2}]}`), "/a/*/b")
	f.Fuzz(func(t *testing.T, data []byte, ptr string) {
		var d Doc
		if d.Decode(data, nil) != nil {
			return
		}
		p, err := ParsePointer(ptr)
		if err != nil {
			return
		}
		key, found := p.CaseVariant(d.Root())
		wantKey, wantFound := caseVariantRef(p, d.Root(), 0)
		if key != wantKey || found != wantFound {
			t.Fatalf("CaseVariant(%q) in %s = %q, %v; reference %q, %v", ptr, data, key, found, wantKey, wantFound)
		}
	})
}

// FuzzSelectExact holds SelectExact to its definition: CaseVariant, then Select.
func FuzzSelectExact(f *testing.F) {
	f.Add([]byte(`{"Path":1,"head":{"X":[{"k":1},{"K":2}]},"ſ":3,"path":{"a":[5,6]}}`), "/path/a/1")
	f.Add([]byte(`{"a":{"B":1}}`), "/a/b")
	f.Add([]byte(`{"a":{"b":1,"C":2}}`), "/a/c")
	f.Add([]byte(`{"a":[{"B":1},{"b":2}]}`), "/a/*/b")
	f.Add([]byte(`{"a":[0,{"b":2}]}`), "/a/1/b")
	f.Fuzz(func(t *testing.T, data []byte, ptr string) {
		var d Doc
		if d.Decode(data, nil) != nil {
			return
		}
		p, err := ParsePointer(ptr)
		if err != nil {
			return
		}
		var got, want []string
		key, found := p.SelectExact(d.Root(), func(v Value, at Loc) { got = append(got, at.String()+"="+v.Raw()) })
		wantKey, wantFound := p.CaseVariant(d.Root())
		if !wantFound {
			p.Select(d.Root(), func(v Value, at Loc) { want = append(want, at.String()+"="+v.Raw()) })
		}
		if key != wantKey || found != wantFound || !slices.Equal(got, want) {
			t.Fatalf("SelectExact(%q) in %s = %q, %v, %q; want %q, %v, %q", ptr, data, key, found, got, wantKey, wantFound, want)
		}
	})
}
