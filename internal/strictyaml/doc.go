// Package strictyaml owns strict decoding of aegis's YAML files (the policy,
// bindings files and the configuration file) into Go structs, with errors
// that point at file:line:col.
//
// It decodes through the node tree of go.yaml.in/yaml/v3 and accepts less
// than YAML does, on purpose: an unknown or duplicate key, a value of the
// wrong type, a second document, an alias, an anchor, a merge key or an
// unusual tag is an error, never a silently different configuration. What a
// decoded value means is left to its owner (package policy validates rules);
// a type can parse its own node by implementing [Unmarshaler].
//
// # Example
//
//	type rule struct {
//		Pos    strictyaml.Pos        `yaml:"-"`
//		ID     string                `yaml:"id,required"`
//		Tools  strictyaml.StringList `yaml:"tool"`
//	}
//	var f struct {
//		Rules []rule `yaml:"rules"`
//	}
//	err := strictyaml.Decode("policy.yaml", data, &f)
//	// policy.yaml:3:5: unknown key "tols" in the document.rules[0] (want one of: id, tool)
package strictyaml
