package policy

import (
	"github.com/aegis-mcp/aegis/internal/strictyaml"
	"go.yaml.in/yaml/v3"
)

// fileSpec is a policy file as written, before compilation.
type fileSpec struct {
	Version scalar     `yaml:"version,required"`
	Mode    scalar     `yaml:"mode"`
	Rules   []ruleSpec `yaml:"rules"`
}

func (*fileSpec) YAMLName() string { return "policy" }

// ruleSpec is one rule as written. Every value keeps its position, so that
// compile errors point at the value that is wrong.
type ruleSpec struct {
	Pos    strictyaml.Pos `yaml:"-"`
	ID     scalar         `yaml:"id,required"`
	Effect scalar         `yaml:"effect,required"`
	Reason scalar         `yaml:"reason"`
	Mode   scalar         `yaml:"mode"`

	Server    scalars `yaml:"server"`
	Method    scalars `yaml:"method"`
	Tool      scalars `yaml:"tool"`
	Prompt    scalars `yaml:"prompt"`
	Principal scalars `yaml:"principal"`
	Role      scalars `yaml:"role"`
	Origin    scalar  `yaml:"origin"`
	Taint     scalar  `yaml:"taint"`
	Tier      scalars `yaml:"tier"`
	Unbound   scalar  `yaml:"unbound"`

	Capability scalars `yaml:"capability"`
	PathUnder  scalars `yaml:"path_under"`
	Host       scalars `yaml:"host"`
	Port       scalars `yaml:"port"`
	Scheme     scalars `yaml:"scheme"`
	Program    scalars `yaml:"program"`
	Shell      scalar  `yaml:"shell"`
	IDKind     scalars `yaml:"id_kind"`
	Unproven   scalar  `yaml:"unproven"`
	IDIn       scalars `yaml:"id_in"`

	When scalar `yaml:"when"`
}

func (*ruleSpec) YAMLName() string { return "rule" }

// scalar is one non-null scalar value with its position.
type scalar struct {
	set   bool
	value string
	tag   string // resolved YAML tag: !!str, !!int, !!bool, ...
	pos   strictyaml.Pos
}

func (s *scalar) UnmarshalYAMLNode(file string, n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return strictyaml.Errorf(file, n, "want a single value, got %s", describe(n))
	}
	*s = scalar{set: true, value: n.Value, tag: n.Tag, pos: strictyaml.PosOf(file, n)}
	return nil
}

// isBool reports whether s was written as a YAML boolean.
func (s scalar) boolean() (v, ok bool) {
	if s.tag != "!!bool" {
		return false, false
	}
	switch s.value {
	case "true", "True", "TRUE":
		return true, true
	case "false", "False", "FALSE":
		return false, true
	}
	return false, false
}

// scalars is a list of scalars, written as one scalar or a sequence; a
// list means any of its values.
type scalars struct {
	set   bool
	items []scalar
	pos   strictyaml.Pos
}

func (s *scalars) UnmarshalYAMLNode(file string, n *yaml.Node) error {
	*s = scalars{set: true, pos: strictyaml.PosOf(file, n)}
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag != "!!null":
		s.items = []scalar{{set: true, value: n.Value, tag: n.Tag, pos: s.pos}}
		return nil
	case n.Kind == yaml.SequenceNode:
		if len(n.Content) == 0 {
			return strictyaml.Errorf(file, n, "empty list matches nothing; leave the key out to match anything")
		}
		var errs strictyaml.List
		for _, c := range n.Content {
			var v scalar
			if err := v.UnmarshalYAMLNode(file, c); err != nil {
				errs.Add(file, c, err)
				continue
			}
			s.items = append(s.items, v)
		}
		return errs.Err()
	}
	return strictyaml.Errorf(file, n, "want a value or a list of values, got %s", describe(n))
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	}
	if n.Tag == "!!null" {
		return "null"
	}
	return "a scalar"
}
