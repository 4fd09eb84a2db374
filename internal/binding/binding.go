// Package binding owns per-tool bindings: which argument of a tool is a
// resource, and of which capability kind (DESIGN.md R2, R20). From a binding
// and a call's decoded arguments it derives the call's capabilities in
// canonical form; the policy then speaks only of those.
//
// A binding says which argument is the path. It cannot say which paths are
// allowed: the types here have no field that could hold a limit, a scope or a
// path prefix, so a wrong binding can misidentify a resource but never widen
// a grant. Authority lives in the policy alone.
//
// Bindings come from the curated table compiled into aegis ([Builtin]) or from
// a bindings file ([Parse]). Proposals from a tool's schema (R4) are later work.
package binding

import (
	"fmt"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
)

// Form says how an argument's value names its resource.
type Form uint8

// The forms. The zero Form is the default of the argument's kind: Path for
// fs.read and fs.write, URL for net.connect, Command for exec, Plain for id.
const (
	FormDefault Form = iota
	FormPath         // an absolute path, or "~/..." against the server's home
	FormURL          // a URL; a file: URL derives fs.read
	FormHost         // a bare host or host:port
	FormCommand      // a command line (string) or an argv array
	FormPlain        // an opaque id string
	// FormURLOrPath is a URL or a local path (git's remote): a URL with
	// a scheme derives as FormURL, anything else as a path to read
	// (fs.read); scp-like host:path syntax is refused as ambiguous.
	FormURLOrPath
	// FormText is free text (a message's body) for kind net.link: every
	// URL written in it derives a net.link, every e-mail address an id of
	// kind email. The text's other words derive nothing.
	FormText
)

var formNames = [...]string{FormDefault: "", FormPath: "path", FormURL: "url", FormHost: "host", FormCommand: "command", FormPlain: "plain", FormURLOrPath: "url-or-path", FormText: "text"}

// String returns the form's name as written in bindings files.
func (f Form) String() string {
	if int(f) < len(formNames) {
		return formNames[f]
	}
	return fmt.Sprintf("form(%d)", uint8(f))
}

// Arg binds the values one JSON Pointer selects to a capability kind.
type Arg struct {
	Pointer args.Pointer
	Kind    capability.Kind
	Form    Form
	// IDKind names the kind of object an id argument refers to
	// (mail.message). It is a type label for provenance, not a scope.
	IDKind string
	// Subtree marks an fs.read or fs.write argument whose tool acts on
	// everything under the path, not on the path alone: a move or delete
	// of a directory, a recursive listing or search. Its capabilities
	// carry [capability.Capability].Subtree. Like the other fields it can
	// only make a call need more authority, never less.
	Subtree bool
	// RelativeTo, when set, points at another argument, a directory path,
	// that a relative path of this one is resolved against, as the server
	// resolves it (git's files against its repository path); an absolute
	// path stays as it is. Only for a path of kind fs.read or fs.write.
	RelativeTo *args.Pointer
	// FlagUnproven says what an id argument the server did not return in
	// the session does (R16): false (provenance required, the default)
	// refuses the call; true (provenance flag) marks the capability
	// [capability.Capability].Unproven and lets the policy decide,
	// typically ask (a new payee or recipient). Only for kind id.
	FlagUnproven bool
}

// Binding is the binding of one tool.
type Binding struct {
	Tool string
	Tier capability.Tier
	Args []Arg
	// Values are the arguments named as typed values for the policy's
	// conditions (value.NAME); they derive nothing.
	Values []ValueArg
	// Shape, when set, is the shape hash (hex) of the tool definition a
	// person reviewed the binding for (a proposal's, `aegis bindings
	// propose`): a tool whose pinned shape differs is refused until the
	// binding is reviewed again. Empty: not tied to a shape.
	Shape string
}

// Table is the set of bindings of one server, by tool name.
type Table map[string]*Binding

// form returns the effective form of a.
func (a *Arg) form() Form {
	if a.Form != FormDefault {
		return a.Form
	}
	switch a.Kind {
	case capability.FSRead, capability.FSWrite:
		return FormPath
	case capability.NetConnect:
		return FormURL
	case capability.NetLink:
		return FormText
	case capability.Exec:
		return FormCommand
	default:
		return FormPlain
	}
}

// validForms lists the forms each kind accepts.
func validForm(k capability.Kind, f Form) bool {
	switch k {
	case capability.FSRead, capability.FSWrite:
		return f == FormPath
	case capability.NetConnect:
		return f == FormURL || f == FormHost || f == FormURLOrPath
	case capability.Exec:
		return f == FormCommand
	case capability.ID:
		return f == FormPlain
	case capability.NetLink:
		return f == FormText
	}
	return false
}
