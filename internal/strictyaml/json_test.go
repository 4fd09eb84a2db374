package strictyaml

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// toJSONOf parses one YAML document with parse (as Decode does) and
// converts it.
func toJSONOf(src string) (string, error) {
	root, err := parse("t.yaml", []byte(src))
	if err != nil {
		return "", err
	}
	b, err := ToJSON("t.yaml", root)
	return string(b), err
}

func TestToJSON(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"true spellings", "[true, True, TRUE]", "[true,true,true]"},
		{"false spellings", "[false, False, FALSE]", "[false,false,false]"},
		{"yes is a string in YAML 1.2", "[yes, on, y]", `["yes","on","y"]`},
		{"null spellings", "[~, null, Null, NULL, ]", "[null,null,null,null]"},
		{"hex", "0x10", "16"},
		{"octal 1.2", "0o17", "15"},
		{"binary", "0b101", "5"},
		{"underscores", "1_000", "1000"},
		{"signs", "[+12, -12, -0x10]", "[12,-12,-16]"},
		{"beyond int64", "12345678901234567890", "12345678901234567890"},
		{"float", "[1.5, 1e3, -0.25, 1.0]", "[1.5,1000,-0.25,1]"},
		{"quoted number stays a string", `["0x10", '16']`, `["0x10","16"]`},
		{"tagged string", "!!str 0x10", `"0x10"`},
		{"tagged float", "!!float 1", "1"},
		{"timestamp stays text", "2001-12-14", `"2001-12-14"`},
		{"escapes", `"a\"b\\c\nd\te\u0001é"`, `"a\"b\\c\nd\te\u0001é"`},
		{"html left alone", `"<a&b>"`, `"<a&b>"`},
		{"key order kept", "{b: 1, a: 2}", `{"b":1,"a":2}`},
		{"keys are their text", "{1: a, True: b, 0x10: c}", `{"1":"a","True":"b","0x10":"c"}`},
		{"nested", "{a: [1, {b: [true]}], c: {}}", `{"a":[1,{"b":[true]}],"c":{}}`},
		{"block style", "a:\n  - x\n  - y\nb: |\n  line\n", `{"a":["x","y"],"b":"line\n"}`},
		{"empty document is null", "", "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := toJSONOf(tt.yaml)
			if err != nil {
				t.Fatalf("ToJSON(%q): %v", tt.yaml, err)
			}
			if got != tt.want {
				t.Errorf("ToJSON(%q) = %s, want %s", tt.yaml, got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("ToJSON(%q) = %s: not JSON", tt.yaml, got)
			}
		})
	}
}

func TestToJSONRefuses(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // a substring of the error, which starts with its position
	}{
		{"inf", "{a: .inf}", "t.yaml:1:5: number .inf has no JSON form"},
		{"negative inf", "[-.Inf]", "t.yaml:1:2: number -.Inf has no JSON form"},
		{"nan", "[.nan]", "t.yaml:1:2: number .nan has no JSON form"},
		{"duplicate key", "a: 1\nb: 2\na: 3\n", `t.yaml:3:1: duplicate key "a" (first at line 1)`},
		{"duplicate by text", "{1: a, '1': b}", `t.yaml:1:8: duplicate key "1"`},
		{"null key", "{~: a}", "t.yaml:1:2: want a string key"},
		{"sequence key", "{[a]: b}", "t.yaml:1:2: want a string key"},
		{"alias", "a: &x 1\nb: *x\n", "t.yaml:2:4: aliases (*x) are not supported"},
		{"merge key", "a: {x: 1}\nb: {<<: {y: 2}}\n", "t.yaml:2:5: merge keys (<<) are not supported"},
		{"binary tag", "!!binary aGk=", `unsupported tag "!!binary"`},
		{"custom tag", "!foo 1", `unsupported tag "!foo"`},
		{"bad tagged int", "!!int abc", `want an integer, got "abc"`},
		{"bad tagged bool", "!!bool yes", `want a boolean, got "yes"`},
		{"too deep", strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2), "nesting deeper than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := toJSONOf(tt.yaml)
			if err == nil {
				t.Fatalf("ToJSON(%q) = %s, want an error", tt.yaml, got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ToJSON(%q) error = %q, want it to contain %q", tt.yaml, err, tt.want)
			}
		})
	}
}

// FuzzToJSON checks ToJSON against a naive reference: yaml.v3 decoding
// into any, then encoding/json. Where both succeed they must mean the same
// JSON value. The reference differs on purpose where it has no JSON answer
// (aliases expand, duplicate keys) and reads timestamps as times, so inputs
// with a timestamp are skipped.
func FuzzToJSON(f *testing.F) {
	for _, s := range []string{
		"{confirm: True, depth: 0x10}", "[0o17, 0b11, 1_000, -0x1f, +5]",
		"{a: [1, 2.5, ~, 'x'], b: {c: FALSE}}", "12345678901234567890",
		"-12345678901234567890", "[.inf, .nan]", "{a: 1, a: 2}", `"\u0000\x7f"`,
		"a: |\n  text\n", "{1: a, 2: b}", "2001-12-14", "1e400", "0x_1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(src), &n); err != nil || n.Kind == 0 {
			return
		}
		got, err := ToJSON("f.yaml", &n)
		if err != nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("ToJSON(%q) = %q: not JSON", src, got)
		}
		if hasTimestamp(&n) {
			return
		}
		var ref any
		if err := yaml.Unmarshal([]byte(src), &ref); err != nil {
			return
		}
		refJSON, err := json.Marshal(ref)
		if err != nil {
			return
		}
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("ToJSON(%q) = %q: %v", src, got, err)
		}
		if err := json.Unmarshal(refJSON, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("ToJSON(%q) = %s, reference %s", src, got, refJSON)
		}
		if bytes.Contains(got, []byte("\n")) {
			t.Fatalf("ToJSON(%q) = %q: a raw newline", src, got)
		}
	})
}

func hasTimestamp(n *yaml.Node) bool {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!timestamp" {
		return true
	}
	for _, c := range n.Content {
		if hasTimestamp(c) {
			return true
		}
	}
	return false
}
