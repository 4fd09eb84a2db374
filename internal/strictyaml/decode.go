package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// Unmarshaler is implemented by types that parse their own node. The node
// has passed the checks Decode makes on the whole document (no aliases,
// anchors, merge keys or unknown tags), and may be null. An implementation
// SHOULD return an [*Error] or [Errors] so that the position is its own;
// any other error is reported at the position of n. It can decode parts of
// n with [DecodeNode]. A field of pointer type is set to nil for a null
// node without calling its Unmarshaler.
type Unmarshaler interface {
	UnmarshalYAMLNode(file string, n *yaml.Node) error
}

// Namer is implemented by struct types that want a name in error messages
// (`unknown key "efect" in rule`). Without it, errors name the key path
// (`in rules[2]`).
type Namer interface {
	YAMLName() string
}

// StringList is a list of strings written either as one scalar or as a
// sequence of scalars: `tool: read_file` or `tool: [read_file, write_file]`.
type StringList []string

// maxDepth bounds how deeply Decode follows nested values, so that a
// recursive Go type cannot be driven into a deep recursion by its input.
const maxDepth = 64

// Decode decodes the single YAML document in data into v, which must be a
// non-nil pointer. file names the document in error messages.
//
// Decoding is strict: a key with no matching field, a duplicate key, a value
// of the wrong type, an integer out of range, a second document, an alias,
// an anchor, a merge key (<<) or a tag other than YAML's own scalar,
// sequence and mapping tags is an error. Struct fields are matched by their
// `yaml:"name"` tag (the lower-cased field name without one); a tag of
// `yaml:"name,required"` makes a key required, and `yaml:"-"` skips a field
// unless its type is [Pos]. An empty document decodes as an empty mapping.
//
// The error, if any, is of type [Errors]; each says file:line:col: message.
// A syntax error carries the line the YAML parser reported and column 1.
// On error, v may be partly filled.
func Decode(file string, data []byte, v any) (err error) {
	root, err := parse(file, data)
	if err != nil {
		return err
	}
	var l List
	check(file, root, &l)
	if err := l.Err(); err != nil {
		return err
	}
	return DecodeNode(file, root, v)
}

// DecodeNode decodes n into v, which must be a non-nil pointer, with the
// rules of [Decode]. It is meant for [Unmarshaler] implementations that
// decode part of their node, and does not check n for aliases, anchors or
// tags: Decode has already done so.
func DecodeNode(file string, n *yaml.Node, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return Errorf(file, n, "strictyaml: decoding into %T, want a non-nil pointer", v)
	}
	d := decoder{file: file}
	d.value(n, rv.Elem(), "the document", 0)
	return d.errs.Err()
}

var lineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parse returns the content of the one document in data: a null node at
// 1:1 when data holds no document.
func parse(file string, data []byte) (root *yaml.Node, err error) {
	defer func() {
		// The YAML parser reports errors by panicking internally; it
		// recovers its own, and any other panic is a bug in it that an
		// input must not turn into a crash.
		if r := recover(); r != nil {
			root, err = nil, Errors{{File: file, Line: 1, Col: 1, Msg: fmt.Sprintf("YAML parser failed: %v", r)}}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: 1, Column: 1}, nil
		}
		return nil, syntaxError(file, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxError(file, err)
	default:
		at := &next
		if len(next.Content) > 0 {
			at = next.Content[0]
		}
		return nil, Errors{Errorf(file, at, "a second YAML document; want exactly one")}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, Errors{Errorf(file, &doc, "want one YAML document")}
	}
	return doc.Content[0], nil
}

func syntaxError(file string, err error) error {
	msg := err.Error()
	line := 1
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			line = n
		}
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return Errors{{File: file, Line: line, Col: 1, Msg: "YAML syntax: " + msg}}
}

// check rejects what strict decoding never accepts, anywhere in the tree:
// aliases and anchors (no sharing, no billion laughs), merge keys, and tags
// other than YAML's core ones.
func check(file string, n *yaml.Node, l *List) {
	if l.Full() {
		return
	}
	switch {
	case n.Kind == yaml.AliasNode:
		l.AddError(Errorf(file, n, "aliases (*%s) are not supported", n.Value))
		return
	case n.Anchor != "":
		l.AddError(Errorf(file, n, "anchors (&%s) are not supported", n.Anchor))
	case n.Tag == "!!merge":
		l.AddError(Errorf(file, n, "merge keys (<<) are not supported"))
	}
	switch n.Tag {
	case "", "!!str", "!!int", "!!bool", "!!float", "!!null", "!!timestamp", "!!map", "!!seq", "!!merge":
	default:
		l.AddError(Errorf(file, n, "unsupported tag %q", n.Tag))
	}
	for _, c := range n.Content {
		check(file, c, l)
	}
}

type decoder struct {
	file string
	errs List
}

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	d.errs.AddError(Errorf(d.file, n, format, args...))
}

var (
	posType        = reflect.TypeFor[Pos]()
	stringListType = reflect.TypeFor[StringList]()
	durationType   = reflect.TypeFor[time.Duration]()
	unmarshalType  = reflect.TypeFor[Unmarshaler]()
)

// value decodes n into v; where names the value for error messages.
func (d *decoder) value(n *yaml.Node, v reflect.Value, where string, depth int) {
	if d.errs.Full() {
		return
	}
	if depth > maxDepth {
		d.errorf(n, "nesting deeper than %d levels", maxDepth)
		return
	}
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		if isNull(n) {
			v.SetZero()
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.value(n, v.Elem(), where, depth+1)
		return
	}
	if reflect.PointerTo(t).Implements(unmarshalType) && v.CanAddr() {
		d.errs.Add(d.file, n, v.Addr().Interface().(Unmarshaler).UnmarshalYAMLNode(d.file, n))
		return
	}
	switch t {
	case posType:
		v.Set(reflect.ValueOf(PosOf(d.file, n)))
		return
	case stringListType:
		d.stringList(n, v)
		return
	case durationType:
		s, ok := d.scalar(n, "a duration")
		if !ok {
			return
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			d.errorf(n, "want a duration such as 90s or 1h30m, got %q", s)
			return
		}
		v.SetInt(int64(dur))
		return
	}
	switch t.Kind() {
	case reflect.String:
		if s, ok := d.scalar(n, "a string"); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			d.errorf(n, "want a boolean (true or false), got %s", describe(n))
			return
		}
		switch strings.ToLower(n.Value) {
		case "true":
			v.SetBool(true)
		case "false":
			v.SetBool(false)
		default:
			d.errorf(n, "want a boolean (true or false), got %q", n.Value)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		lo, hi := intRange(t)
		if i, ok := d.integer(n, lo, hi); ok {
			v.SetInt(i)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		hi := uint64(math.MaxUint64) >> (64 - 8*t.Size())
		if u, ok := d.unsigned(n, hi); ok {
			v.SetUint(u)
		}
	case reflect.Float32, reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") {
			d.errorf(n, "want a number, got %s", describe(n))
			return
		}
		var f float64
		if err := n.Decode(&f); err != nil {
			d.errorf(n, "want a number, got %q", n.Value)
			return
		}
		v.SetFloat(f)
	case reflect.Slice:
		d.slice(n, v, where, depth)
	case reflect.Map:
		d.mapping(n, v, where, depth)
	case reflect.Struct:
		d.structure(n, v, where, depth)
	default:
		d.errorf(n, "strictyaml: cannot decode into a Go %s", t)
	}
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// scalar returns the text of a non-null scalar.
func (d *decoder) scalar(n *yaml.Node, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.errorf(n, "want %s, got %s", want, describe(n))
		return "", false
	}
	return n.Value, true
}

func intRange(t reflect.Type) (lo, hi int64) {
	bits := 8 * t.Size()
	return -1 << (bits - 1), 1<<(bits-1) - 1
}

func (d *decoder) integer(n *yaml.Node, lo, hi int64) (int64, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		d.errorf(n, "want an integer, got %s", describe(n))
		return 0, false
	}
	var i int64
	if err := n.Decode(&i); err != nil || i < lo || i > hi {
		d.errorf(n, "want an integer from %d to %d, got %s", lo, hi, n.Value)
		return 0, false
	}
	return i, true
}

func (d *decoder) unsigned(n *yaml.Node, hi uint64) (uint64, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		d.errorf(n, "want an integer, got %s", describe(n))
		return 0, false
	}
	var u uint64
	if strings.HasPrefix(n.Value, "-") || n.Decode(&u) != nil || u > hi {
		d.errorf(n, "want an integer from 0 to %d, got %s", hi, n.Value)
		return 0, false
	}
	return u, true
}

func (d *decoder) stringList(n *yaml.Node, v reflect.Value) {
	const want = "a string or a sequence of strings"
	switch {
	case n.Kind == yaml.ScalarNode && !isNull(n):
		v.Set(reflect.ValueOf(StringList{n.Value}))
	case n.Kind == yaml.SequenceNode:
		list := make(StringList, 0, len(n.Content))
		for _, c := range n.Content {
			if s, ok := d.scalar(c, "a string"); ok {
				list = append(list, s)
			}
		}
		v.Set(reflect.ValueOf(list))
	default:
		d.errorf(n, "want %s, got %s", want, describe(n))
	}
}

func (d *decoder) slice(n *yaml.Node, v reflect.Value, where string, depth int) {
	if isNull(n) {
		v.SetZero()
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "want a sequence, got %s", describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		d.value(c, s.Index(i), fmt.Sprintf("%s[%d]", where, i), depth+1)
	}
	v.Set(s)
}

// keys walks the key/value pairs of a mapping, reporting non-string and
// duplicate keys, and calls f for the others.
func (d *decoder) keys(n *yaml.Node, f func(key string, k, val *yaml.Node)) {
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || isNull(k) {
			d.errorf(k, "want a string key, got %s", describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.errorf(k, "duplicate key %q (first at line %d)", k.Value, first.Line)
			continue
		}
		seen[k.Value] = k
		f(k.Value, k, val)
	}
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, where string, depth int) {
	if isNull(n) {
		v.SetZero()
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "want a mapping, got %s", describe(n))
		return
	}
	t := v.Type()
	if t.Key().Kind() != reflect.String {
		d.errorf(n, "strictyaml: cannot decode into a Go %s", t)
		return
	}
	m := reflect.MakeMapWithSize(t, len(n.Content)/2)
	d.keys(n, func(key string, _, val *yaml.Node) {
		e := reflect.New(t.Elem()).Elem()
		d.value(val, e, where+"."+key, depth+1)
		m.SetMapIndex(reflect.ValueOf(key).Convert(t.Key()), e)
	})
	v.Set(m)
}

// field is a struct field that a key can set.
type field struct {
	name     string
	index    int
	required bool
}

type structInfo struct {
	fields []field
	pos    []int // fields of type Pos tagged "-"
	names  string
}

var structInfos sync.Map // reflect.Type → *structInfo

func infoOf(t reflect.Type) *structInfo {
	if si, ok := structInfos.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			if f.Type == posType {
				si.pos = append(si.pos, i)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		si.fields = append(si.fields, field{name: name, index: i, required: slices.Contains(strings.Split(opts, ","), "required")})
		names = append(names, name)
	}
	si.names = strings.Join(names, ", ")
	structInfos.Store(t, si)
	return si
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, where string, depth int) {
	if !isNull(n) && n.Kind != yaml.MappingNode {
		d.errorf(n, "want a mapping, got %s", describe(n))
		return
	}
	si := infoOf(v.Type())
	for _, i := range si.pos {
		v.Field(i).Set(reflect.ValueOf(PosOf(d.file, n)))
	}
	if v.CanAddr() {
		if nm, ok := v.Addr().Interface().(Namer); ok {
			where = nm.YAMLName()
		}
	}
	var set []bool
	d.keys(n, func(key string, k, val *yaml.Node) {
		for j, f := range si.fields {
			if f.name == key {
				if set == nil {
					set = make([]bool, len(si.fields))
				}
				set[j] = true
				d.value(val, v.Field(f.index), where+"."+key, depth+1)
				return
			}
		}
		d.errorf(k, "unknown key %q in %s (want one of: %s)", key, where, si.names)
	})
	for j, f := range si.fields {
		if f.required && (set == nil || !set[j]) {
			d.errorf(n, "missing key %q in %s", f.name, where)
		}
	}
}

// describe names what n is, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	switch n.Tag {
	case "!!null":
		return "null"
	case "!!bool":
		return "a boolean " + strconv.Quote(n.Value)
	case "!!int":
		return "an integer " + n.Value
	case "!!float":
		return "a number " + n.Value
	case "!!timestamp":
		return "a timestamp " + n.Value
	default:
		return "a string " + strconv.Quote(short(n.Value))
	}
}

func short(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	for i := range s {
		if i > max {
			return s[:i] + "…"
		}
	}
	return s
}
