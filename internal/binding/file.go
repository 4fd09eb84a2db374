package binding

import (
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/strictyaml"
)

// fileDoc is a bindings file:
//
//	version: 1
//	tools:
//	  send_mail:
//	    tier: mutating
//	    args:
//	      - {pointer: /to/*, kind: id, id_kind: mail.contact}
//	      - {pointer: /attachments/*/path, kind: fs.read}
//	  move_folder:
//	    tier: mutating
//	    args:
//	      - {pointer: /from, kind: fs.write, subtree: true}
//
//	prompts:
//	  run_command:
//	    tier: mutating
//	    args:
//	      - {pointer: /command, kind: exec}
//
// An arg has exactly these five keys; none can hold a limit, a scope or a
// path prefix, by construction. A prompt's arguments (prompts/get, and the
// completion of one of them) bind as a tool's do; a file has tools,
// prompts or both.
type fileDoc struct {
	Version int                  `yaml:"version,required"`
	Tools   map[string]*fileTool `yaml:"tools"`
	Prompts map[string]*fileTool `yaml:"prompts"`
}

type fileTool struct {
	Pos  strictyaml.Pos `yaml:"-"`
	Tier tierValue      `yaml:"tier,required"`
	Args []*fileArg     `yaml:"args"`
	// Values name arguments as typed values: {pointer: /amount, name:
	// amount}, which conditions read as value.amount.
	Values []*fileValue `yaml:"values"`
	// Shape is the shape hash of the definition the binding was reviewed
	// for (64 hex digits), as `aegis bindings propose` writes it.
	Shape string `yaml:"shape"`
}

type fileValue struct {
	Pos     strictyaml.Pos `yaml:"-"`
	Pointer pointerValue   `yaml:"pointer,required"`
	Name    string         `yaml:"name,required"`
}

func (*fileValue) YAMLName() string { return "value" }

func (*fileTool) YAMLName() string { return "tool" }

type fileArg struct {
	Pos     strictyaml.Pos `yaml:"-"`
	Pointer pointerValue   `yaml:"pointer,required"`
	Kind    kindValue      `yaml:"kind,required"`
	Form    formValue      `yaml:"form"`
	IDKind  idKindValue    `yaml:"id_kind"`
	Subtree subtreeValue   `yaml:"subtree"`
	// RelativeTo points at the directory argument a relative path of
	// this one resolves against.
	RelativeTo *pointerValue `yaml:"relative_to"`
	// Provenance is required (the default: an id the server never
	// returned refuses the call) or flag (it marks the id unproven, and
	// the policy decides).
	Provenance provenanceValue `yaml:"provenance"`
}

func (*fileArg) YAMLName() string { return "arg" }

// provenanceValue is the provenance key of an id argument.
type provenanceValue struct {
	flag bool
	pos  strictyaml.Pos
}

func (v *provenanceValue) UnmarshalYAMLNode(file string, n *yaml.Node) error {
	s, err := scalar(file, n)
	if err != nil {
		return err
	}
	switch s {
	case "required":
	case "flag":
		v.flag = true
	default:
		return strictyaml.Errorf(file, n, "provenance %q: want required or flag", s)
	}
	v.pos = strictyaml.PosOf(file, n)
	return nil
}

type tierValue struct{ capability.Tier }

func (t *tierValue) UnmarshalYAMLNode(file string, n *yaml.Node) error {
	s, err := scalar(file, n)
	if err != nil {
		return err
	}
	t.Tier, err = capability.ParseTier(s)
	if err != nil {
		return strictyaml.Errorf(file, n, "%v", err)
	}
	return nil
}

type pointerValue struct{ args.Pointer }

func (p *pointerValue) UnmarshalYAMLNode(file string, n *yaml.Node) error {
	s, err := scalar(file, n)
	if err != nil {
		return err
	}
	p.Pointer, err = args.ParsePointer(s)
	if err != nil {
		return strictyaml.Errorf(file, n, "pointer %q: %v", s, err)
	}
	return nil
}

type kindValue struct{ capability.Kind }

func (k *kindValue) UnmarshalYAMLNode(file string, n *yaml.Node) error {
	s, err := scalar(file, n)
	if err != nil {
		return err
	}
	if s == "text" {
		s = "net.link" // free text: its links and e-mail addresses
	}
	k.Kind, err = capability.ParseKind(s)
	if err != nil {
		return strictyaml.Errorf(file, n, "%v", err)
	}
	return nil
}

type formValue struct {
	Form
	pos strictyaml.Pos
}

func (f *formValue) UnmarshalYAMLNode(file string, n *yaml.Node) error {
	s, err := scalar(file, n)
	if err != nil {
		return err
	}
	f.pos = strictyaml.PosOf(file, n)
	for i, name := range formNames {
		if name != "" && name == s {
			f.Form = Form(i)
			return nil
		}
	}
	return strictyaml.Errorf(file, n, "unknown form %q (want path, url, host, command or plain)", s)
}

// subtreeValue is the subtree key: true marks an fs argument whose tool
// acts on everything under the path.
type subtreeValue struct {
	set bool
	pos strictyaml.Pos
}

func (v *subtreeValue) UnmarshalYAMLNode(file string, n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		return strictyaml.Errorf(file, n, "subtree: want true or false")
	}
	switch n.Value {
	case "true":
		v.set = true
	case "false":
	default:
		return strictyaml.Errorf(file, n, "subtree: want true or false, not %q", n.Value)
	}
	v.pos = strictyaml.PosOf(file, n)
	return nil
}

type idKindValue struct {
	name string
	pos  strictyaml.Pos
}

func (v *idKindValue) UnmarshalYAMLNode(file string, n *yaml.Node) error {
	s, err := scalar(file, n)
	if err != nil {
		return err
	}
	if !validIDKind(s) {
		return strictyaml.Errorf(file, n, "id_kind %q: want dotted lower-case words, like mail.message", s)
	}
	v.name, v.pos = s, strictyaml.PosOf(file, n)
	return nil
}

// validIDKind accepts names like mail.message: lower-case letters, digits,
// '_' and '-', in dot-separated words. A narrow alphabet keeps the label a
// label; it cannot smuggle a path or a pattern.
func validIDKind(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	word := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '-':
			word++
		case c == '.' && word > 0:
			word = 0
		default:
			return false
		}
	}
	return word > 0
}

func scalar(file string, n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", strictyaml.Errorf(file, n, "want a string")
	}
	return n.Value, nil
}

// Parse reads a bindings file's tools. Errors name file:line:col.
func Parse(file string, data []byte) (Table, error) {
	tools, _, err := ParseFile(file, data)
	return tools, err
}

// ParseFile reads a bindings file: the bindings of its tools and of its
// prompts. Errors name file:line:col.
func ParseFile(file string, data []byte) (tools, prompts Table, err error) {
	var doc fileDoc
	if err := strictyaml.Decode(file, data, &doc); err != nil {
		return nil, nil, err
	}
	var errs strictyaml.List
	top := strictyaml.Pos{File: file, Line: 1, Col: 1}
	if doc.Version != 1 {
		errs.AddError(strictyaml.ErrorAt(top, "version %d: want 1", doc.Version))
	}
	if doc.Tools == nil && doc.Prompts == nil {
		errs.AddError(strictyaml.ErrorAt(top, "a bindings file binds tools, prompts or both: missing key \"tools\""))
	}
	tools = tableOf(&errs, top, "tool", doc.Tools)
	prompts = tableOf(&errs, top, "prompt", doc.Prompts)
	if err := errs.Err(); err != nil {
		return nil, nil, err
	}
	return tools, prompts, nil
}

// tableOf compiles the bindings of a file's tools or prompts (what),
// adding its errors to errs.
func tableOf(errs *strictyaml.List, top strictyaml.Pos, what string, m map[string]*fileTool) Table {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	t := make(Table, len(m))
	for _, name := range names {
		ft := m[name]
		if ft == nil {
			errs.AddError(strictyaml.ErrorAt(top, "%s %q has no binding", what, name))
			continue
		}
		b := &Binding{Tool: name, Tier: ft.Tier.Tier, Shape: ft.Shape}
		if ft.Shape != "" && (len(ft.Shape) != 64 || strings.Trim(ft.Shape, "0123456789abcdef") != "") {
			errs.AddError(strictyaml.ErrorAt(ft.Pos, "%s %q: shape %q: want the 64 hex digits of a shape hash", what, name, ft.Shape))
		}
		for _, fa := range ft.Args {
			if fa == nil {
				errs.AddError(strictyaml.ErrorAt(ft.Pos, "%s %q: an empty arg", what, name))
				continue
			}
			a := Arg{Pointer: fa.Pointer.Pointer, Kind: fa.Kind.Kind, Form: fa.Form.Form, IDKind: fa.IDKind.name, Subtree: fa.Subtree.set, FlagUnproven: fa.Provenance.flag}
			if a.Form != FormDefault && !validForm(a.Kind, a.Form) {
				errs.AddError(strictyaml.ErrorAt(fa.Form.pos, "form %s does not apply to %s", a.Form, a.Kind))
			}
			switch {
			case a.Kind == capability.ID && a.IDKind == "":
				errs.AddError(strictyaml.ErrorAt(fa.Pos, "an id argument needs id_kind"))
			case a.Kind != capability.ID && a.IDKind != "":
				errs.AddError(strictyaml.ErrorAt(fa.IDKind.pos, "id_kind applies only to kind id, not %s", a.Kind))
			}
			if fa.RelativeTo != nil {
				switch {
				case a.Kind != capability.FSRead && a.Kind != capability.FSWrite || a.form() != FormPath:
					errs.AddError(strictyaml.ErrorAt(fa.Pos, "relative_to applies only to a path of kind fs.read or fs.write, not %s", a.Kind))
				case fa.RelativeTo.Pointer.Wild():
					errs.AddError(strictyaml.ErrorAt(fa.Pos, "relative_to %s: want one argument, not a pattern with *", fa.RelativeTo.Pointer))
				default:
					rp := fa.RelativeTo.Pointer
					a.RelativeTo = &rp
				}
			}
			if fa.Provenance.pos.Line > 0 && a.Kind != capability.ID {
				errs.AddError(strictyaml.ErrorAt(fa.Provenance.pos, "provenance applies only to kind id, not %s", a.Kind))
			}
			if a.Subtree && (a.Kind != capability.FSRead && a.Kind != capability.FSWrite || a.form() != FormPath) {
				errs.AddError(strictyaml.ErrorAt(fa.Subtree.pos, "subtree applies only to a path of kind fs.read or fs.write, not %s", a.Kind))
			}
			b.Args = append(b.Args, a)
		}
		seen := map[string]bool{}
		for _, fv := range ft.Values {
			switch {
			case fv == nil:
				errs.AddError(strictyaml.ErrorAt(ft.Pos, "%s %q: an empty value", what, name))
				continue
			case !validValueName(fv.Name):
				errs.AddError(strictyaml.ErrorAt(fv.Pos, "value name %q: want lower-case letters, digits and _, starting with a letter (conditions read value.NAME)", fv.Name))
				continue
			case seen[fv.Name]:
				errs.AddError(strictyaml.ErrorAt(fv.Pos, "value name %q is given twice", fv.Name))
				continue
			}
			seen[fv.Name] = true
			b.Values = append(b.Values, ValueArg{Pointer: fv.Pointer.Pointer, Name: fv.Name})
		}
		t[name] = b
	}
	return t
}

// Merge returns a table holding the bindings of base, with those of over
// replacing them tool by tool.
func Merge(base, over Table) Table {
	t := make(Table, len(base)+len(over))
	for k, v := range base {
		t[k] = v
	}
	for k, v := range over {
		t[k] = v
	}
	return t
}

// String describes b for explanations: "read_file (data-read): /path fs.read".
func (b *Binding) String() string {
	s := fmt.Sprintf("%s (%s):", b.Tool, b.Tier)
	if len(b.Args) == 0 {
		s += " no resource arguments"
	}
	for _, a := range b.Args {
		s += fmt.Sprintf(" %s %s", a.Pointer, a.Kind)
		if a.IDKind != "" {
			s += "(" + a.IDKind + ")"
		}
		if a.Subtree {
			s += "(subtree)"
		}
		if a.FlagUnproven {
			s += "(provenance flag)"
		}
	}
	for _, v := range b.Values {
		s += fmt.Sprintf(" %s value.%s", v.Pointer, v.Name)
	}
	return s
}
