package strictyaml

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

type item struct {
	Pos    Pos    `yaml:"-"`
	ID     string `yaml:"id,required"`
	Effect string `yaml:"effect"`
	Count  int    `yaml:"count"`
}

func (*item) YAMLName() string { return "rule" }

type inner struct {
	Name string `yaml:"name"`
}

// upper is a custom type: a non-empty string, stored upper-cased.
type upper string

func (u *upper) UnmarshalYAMLNode(file string, n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		return Errorf(file, n, "want a non-empty word")
	}
	*u = upper(strings.ToUpper(n.Value))
	return nil
}

type config struct {
	Version  int               `yaml:"version"`
	Name     string            `yaml:"name"`
	On       bool              `yaml:"on"`
	Port     uint16            `yaml:"port"`
	Small    int8              `yaml:"small"`
	Ratio    float64           `yaml:"ratio"`
	Wait     time.Duration     `yaml:"wait"`
	Tools    StringList        `yaml:"tools"`
	Items    []item            `yaml:"items"`
	Labels   map[string]string `yaml:"labels"`
	Inner    *inner            `yaml:"inner"`
	Nested   inner             `yaml:"nested"`
	Word     upper             `yaml:"word"`
	WordPtr  *upper            `yaml:"word_ptr"`
	Untagged string
	Skipped  string `yaml:"-"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want config
	}{
		{name: "empty", in: ""},
		{name: "comment only", in: "# nothing\n"},
		{name: "explicit null document", in: "~\n"},
		{
			name: "everything",
			in: `version: 1
name: aegis
on: true
port: 65535
small: -128
ratio: 0.5
wait: 1m30s
tools: [read_*, write_file]
items:
  - id: a
    effect: deny
    count: 0x10
labels: {x: "1", y: two}
inner: {name: in}
nested:
  name: n
word: hello
word_ptr: bye
untagged: u
`,
			want: config{
				Version: 1, Name: "aegis", On: true, Port: 65535, Small: -128, Ratio: 0.5,
				Wait:   90 * time.Second,
				Tools:  StringList{"read_*", "write_file"},
				Items:  []item{{Pos: Pos{"f.yaml", 10, 5}, ID: "a", Effect: "deny", Count: 16}},
				Labels: map[string]string{"x": "1", "y": "two"},
				Inner:  &inner{Name: "in"}, Nested: inner{Name: "n"},
				Word: "HELLO", WordPtr: ptr(upper("BYE")), Untagged: "u",
			},
		},
		{name: "string list from a scalar", in: "tools: read_file\n", want: config{Tools: StringList{"read_file"}}},
		{name: "empty string list", in: "tools: []\n", want: config{Tools: StringList{}}},
		{name: "plain scalars of other types are strings", in: "name: 123\nlabels: {a: true, b: 1.5, c: 2001-01-01}\n",
			want: config{Name: "123", Labels: map[string]string{"a": "true", "b": "1.5", "c": "2001-01-01"}}},
		{name: "explicit str tag", in: "name: !!str 5\n", want: config{Name: "5"}},
		{name: "null pointer stays nil", in: "inner: ~\nword_ptr:\n"},
		{name: "null list is nil", in: "items:\n"},
		{name: "quoted key", in: `"name": x` + "\n", want: config{Name: "x"}},
		{name: "bool spellings", in: "on: TRUE\n", want: config{On: true}},
		{name: "underscore int", in: "version: 1_000\n", want: config{Version: 1000}},
		{name: "byte order mark", in: "\ufeffname: x\n", want: config{Name: "x"}},
		{name: "explicit end of document", in: "---\nname: x\n...\n", want: config{Name: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got config
			if err := Decode("f.yaml", []byte(tt.in), &got); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "unknown key", in: "items:\n  - id: a\n    efect: deny\n",
			want: `f.yaml:3:5: unknown key "efect" in rule (want one of: id, effect, count)`},
		{name: "unknown top-level key", in: "nme: x\n",
			want: `f.yaml:1:1: unknown key "nme" in the document (want one of: version, name, on, port, small, ratio, wait, tools, items, labels, inner, nested, word, word_ptr, untagged)`},
		{name: "unknown key in unnamed struct names the path", in: "nested: {nam: x}\n",
			want: `f.yaml:1:10: unknown key "nam" in the document.nested (want one of: name)`},
		{name: "skipped field is not a key", in: "skipped: x\n",
			want: `f.yaml:1:1: unknown key "skipped" in the document (want one of: version, name, on, port, small, ratio, wait, tools, items, labels, inner, nested, word, word_ptr, untagged)`},
		{name: "string wants a scalar", in: "name: [a, b]\n", want: `f.yaml:1:7: want a string, got a sequence`},
		{name: "string wants non-null", in: "name:\n", want: `f.yaml:1:6: want a string, got null`},
		{name: "string from mapping", in: "name: {a: b}\n", want: `f.yaml:1:7: want a string, got a mapping`},
		{name: "bool from yes", in: "on: yes\n", want: `f.yaml:1:5: want a boolean (true or false), got a string "yes"`},
		{name: "bool from quoted true", in: "on: \"true\"\n", want: `f.yaml:1:5: want a boolean (true or false), got a string "true"`},
		{name: "uint16 overflow", in: "port: 65536\n", want: `f.yaml:1:7: want an integer from 0 to 65535, got 65536`},
		{name: "uint16 hex overflow", in: "port: 0x10000\n", want: `f.yaml:1:7: want an integer from 0 to 65535, got 0x10000`},
		{name: "uint16 negative", in: "port: -1\n", want: `f.yaml:1:7: want an integer from 0 to 65535, got -1`},
		{name: "uint16 float", in: "port: 443.0\n", want: `f.yaml:1:7: want an integer, got a number 443.0`},
		{name: "uint16 string", in: "port: \"443\"\n", want: `f.yaml:1:7: want an integer, got a string "443"`},
		{name: "int8 underflow", in: "small: -129\n", want: `f.yaml:1:8: want an integer from -128 to 127, got -129`},
		{name: "int huge", in: "version: 99999999999999999999999\n", want: `f.yaml:1:10: want an integer, got a number 99999999999999999999999`},
		{name: "bad duration", in: "wait: soon\n", want: `f.yaml:1:7: want a duration such as 90s or 1h30m, got "soon"`},
		{name: "list wants a sequence", in: "items: {id: a}\n", want: `f.yaml:1:8: want a sequence, got a mapping`},
		{name: "string list of mappings", in: "tools: [{a: b}]\n", want: `f.yaml:1:9: want a string, got a mapping`},
		{name: "string list from mapping", in: "tools: {a: b}\n", want: `f.yaml:1:8: want a string or a sequence of strings, got a mapping`},
		{name: "string list from null", in: "tools:\n", want: `f.yaml:1:7: want a string or a sequence of strings, got null`},
		{name: "struct from scalar", in: "nested: x\n", want: `f.yaml:1:9: want a mapping, got a string "x"`},
		{name: "document is a sequence", in: "- a\n", want: `f.yaml:1:1: want a mapping, got a sequence`},
		{name: "missing required key", in: "items:\n  - effect: deny\n", want: `f.yaml:2:5: missing key "id" in rule`},
		{name: "missing required key in null item", in: "items:\n  -\n", want: `f.yaml:2:4: missing key "id" in rule`},
		{name: "duplicate key", in: "name: a\nname: b\n", want: `f.yaml:2:1: duplicate key "name" (first at line 1)`},
		{name: "duplicate key in other quoting", in: "name: a\n'name': b\n", want: `f.yaml:2:1: duplicate key "name" (first at line 1)`},
		{name: "duplicate map key", in: "labels:\n  a: x\n  a: y\n", want: `f.yaml:3:3: duplicate key "a" (first at line 2)`},
		{name: "complex key", in: "? [a]\n: b\n", want: `f.yaml:1:3: want a string key, got a sequence`},
		{name: "null key", in: "~: b\n", want: `f.yaml:1:1: want a string key, got null`},
		{name: "custom type error", in: "word: ''\n", want: `f.yaml:1:7: want a non-empty word`},
		{name: "second document", in: "name: a\n---\nname: b\n", want: `f.yaml:3:1: a second YAML document; want exactly one`},
		{name: "second empty document", in: "name: a\n---\n", want: `f.yaml:3:1: a second YAML document; want exactly one`},
		{name: "alias", in: "name: &n x\nword: *n\n", want: "f.yaml:1:7: anchors (&n) are not supported\nf.yaml:2:7: aliases (*n) are not supported"},
		{name: "merge key", in: "nested:\n  <<: {name: x}\n", want: `f.yaml:2:3: merge keys (<<) are not supported`},
		{name: "custom tag", in: "name: !env HOME\n", want: `f.yaml:1:7: unsupported tag "!env"`},
		{name: "binary tag", in: "name: !!binary aGk=\n", want: `f.yaml:1:7: unsupported tag "!!binary"`},
		{name: "set tag", in: "labels: !!set {a}\n", want: `f.yaml:1:9: unsupported tag "!!set"`},
		{name: "int tag on text", in: "version: !!int x\n", want: `f.yaml:1:10: want an integer from -9223372036854775808 to 9223372036854775807, got x`},
		{name: "syntax error", in: "name: a\nitems: [a,\n", want: `f.yaml:2:1: YAML syntax: did not find expected node content`},
		{name: "tab indentation", in: "nested:\n\tname: x\n", want: `f.yaml:2:1: YAML syntax: found character that cannot start any token`},
		{name: "several errors are all reported", in: "name: []\non: 1\nport: x\n",
			want: "f.yaml:1:7: want a string, got a sequence\nf.yaml:2:5: want a boolean (true or false), got an integer 1\nf.yaml:3:7: want an integer, got a string \"x\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got config
			err := Decode("f.yaml", []byte(tt.in), &got)
			if err == nil {
				t.Fatalf("Decode succeeded, want %q", tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Errorf("error is a %T, want Errors", err)
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "f.yaml" || e.Line == 0 || e.Col == 0 {
				t.Errorf("errors.As(*Error) = %+v, want one with a position", e)
			}
		})
	}
}

func TestErrorCap(t *testing.T) {
	var got struct {
		Items []item `yaml:"items"`
	}
	err := Decode("f.yaml", []byte("items:\n"+strings.Repeat("  - {x: 1}\n", 30)), &got)
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("Decode = %v, want Errors", err)
	}
	if len(es) != MaxErrors+1 || es[MaxErrors].Msg != "too many errors" {
		t.Errorf("got %d errors ending in %q, want %d and \"too many errors\"", len(es), es[len(es)-1].Msg, MaxErrors+1)
	}
}

func TestBillionLaughs(t *testing.T) {
	in := "a: &a [x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		in += name + ": &" + name + " [" + strings.Repeat("*"+prev+", ", 8) + "*" + prev + "]\n"
		prev = name
	}
	var got map[string]any
	err := Decode("f.yaml", []byte(in), &got)
	if err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("Decode = %v, want anchors refused", err)
	}
}

func TestDecodeMisuse(t *testing.T) {
	var c config
	for _, v := range []any{c, (*config)(nil), nil} {
		if err := Decode("f.yaml", []byte("name: x\n"), v); err == nil {
			t.Errorf("Decode(%T) succeeded, want an error", v)
		}
	}
	var unsupported struct {
		F any `yaml:"f"`
	}
	if err := Decode("f.yaml", []byte("f: x\n"), &unsupported); err == nil || !strings.Contains(err.Error(), "cannot decode into") {
		t.Errorf("Decode into any = %v, want an error", err)
	}
}

// recursive is a type whose nesting only the input bounds.
type recursive struct {
	Next *recursive `yaml:"next"`
}

func TestDepthLimit(t *testing.T) {
	in := strings.Repeat("{next: ", 200) + "~" + strings.Repeat("}", 200)
	var r recursive
	err := Decode("f.yaml", []byte(in), &r)
	if err == nil || !strings.Contains(err.Error(), "nesting deeper than") {
		t.Fatalf("Decode = %v, want a nesting error", err)
	}
}

func TestPos(t *testing.T) {
	if got, want := (Pos{"p.yaml", 3, 5}).String(), "p.yaml:3:5"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	e := ErrorAt(Pos{"p.yaml", 3, 5}, "bad %s", "thing")
	if got, want := e.Error(), "p.yaml:3:5: bad thing"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if e.Pos() != (Pos{"p.yaml", 3, 5}) {
		t.Errorf("Pos() = %v", e.Pos())
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"", "version: 1\nitems: [{id: a, effect: deny}]\n", "a: &a [*a]\n", "<<: {}\n", "--- a\n--- b\n",
		"tools: x\nlabels: {a: b}\nport: 0x1\nwait: 1s\n", "word: !!str 1\n", "? [a]\n: b\n",
		"inner: {name: [x]}\n", "\ufeff{}", "items:\n  -\n  - id: 1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c config
		err := Decode("f.yaml", data, &c)
		if err == nil {
			return
		}
		var es Errors
		if !errors.As(err, &es) || len(es) == 0 || len(es) > MaxErrors+1 {
			t.Fatalf("error %T %v, want 1..%d Errors", err, err, MaxErrors+1)
		}
		for _, e := range es {
			if e.File != "f.yaml" || e.Line < 1 || e.Col < 1 {
				t.Fatalf("error without a position: %+v", e)
			}
		}
	})
}
