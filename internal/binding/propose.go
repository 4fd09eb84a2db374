package binding

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/aegis-mcp/aegis/internal/plaintext"
)

// This file proposes bindings for a server's tools from their pinned
// definitions (DESIGN.md R4): each argument classified from its name, its
// JSON Schema type and format, and its description, as a path, a URL, a
// host, a command, an id, or not a resource. A proposal is a bindings file
// for a person to read, edit and accept; it authorises nothing on its own
// (the configuration must name the file), and each tool's entry records
// the shape of the definition it was made for, so that a changed schema
// makes the binding stale (a tool with a stale binding is unbound) until
// a person looks again.

// A Proposal is the proposed binding of one tool, with the reasons.
type Proposal struct {
	Tool  string
	Tier  string
	Shape string // the shape hash of the definition it was made for
	Args  []ProposedArg
	// Others are the arguments proposed as no resource, with why.
	Others []string
	// Why says how the tier was chosen.
	Why string
}

// ProposedArg is one argument proposed as a resource.
type ProposedArg struct {
	Pointer, Kind, Form, IDKind string
	Why                         string
}

var (
	reURL     = regexp.MustCompile(`(?i)(^|_)(url|uri|link|href|endpoint|webhook|website)s?$`)
	reHost    = regexp.MustCompile(`(?i)(^|_)(host|hostname|host_name|domain)s?$`)
	rePath    = regexp.MustCompile(`(?i)(^|_)(path|paths|file|files|filename|file_name|filepath|dir|directory|folder|cwd|workdir|root|destination|dest|source|src)$`)
	reCommand = regexp.MustCompile(`(?i)(^|_)(command|cmd|script|shell|exec|command_line|cmdline|argv|args|code|program)$`)
	reID      = regexp.MustCompile(`(?i)^(.*?)_?(id|ids)$`)
	reWrite   = regexp.MustCompile(`(?i)(write|create|edit|delete|remove|move|rename|update|put|save|append|mkdir|rm|patch|upload|set|add|insert|commit|push|reset|checkout|apply|send|post)`)
	reRead    = regexp.MustCompile(`(?i)(^|_)(get|list|read|search|fetch|show|view|describe|find|query|status|diff|log|lookup)(_|$)`)
)

// Propose returns the proposed bindings of the tools defs holds (name →
// its definition as listed, with its shape hash in shapes), sorted by
// tool, for server.
func Propose(server string, defs map[string]json.RawMessage, shapes map[string]string) ([]Proposal, error) {
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []Proposal
	for _, name := range names {
		var d struct {
			Description string `json:"description"`
			InputSchema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"inputSchema"`
			Annotations struct {
				ReadOnly    *bool `json:"readOnlyHint"`
				Destructive *bool `json:"destructiveHint"`
			} `json:"annotations"`
		}
		if err := json.Unmarshal(defs[name], &d); err != nil {
			return nil, fmt.Errorf("tool %q: %w", name, err)
		}
		p := Proposal{Tool: name, Shape: shapes[name]}
		// A path of a tool that may change things is proposed as written
		// (a clone, an init, a merge write their directory), of one that
		// only reads as read.
		ro := d.Annotations.ReadOnly != nil && *d.Annotations.ReadOnly
		writes := !ro && (reWrite.MatchString(name) || d.Annotations.Destructive != nil && *d.Annotations.Destructive || !reRead.MatchString(name))
		props := make([]string, 0, len(d.InputSchema.Properties))
		for k := range d.InputSchema.Properties {
			props = append(props, k)
		}
		slices.Sort(props)
		for _, k := range props {
			a, why, ok := classify(server, name, k, d.InputSchema.Properties[k], writes)
			if ok {
				p.Args = append(p.Args, a)
			} else {
				p.Others = append(p.Others, k+" ("+why+")")
			}
		}
		switch {
		case d.Annotations.ReadOnly != nil && *d.Annotations.ReadOnly && len(p.Args) == 0:
			p.Tier, p.Why = "read-only", "annotated read-only, and it names no resource"
		case d.Annotations.ReadOnly != nil && *d.Annotations.ReadOnly:
			p.Tier, p.Why = "data-read", "annotated read-only"
		case d.Annotations.Destructive != nil && *d.Annotations.Destructive:
			p.Tier, p.Why = "mutating", "annotated destructive"
		case reRead.MatchString(name) && !writes:
			p.Tier, p.Why = "data-read", "its name reads (annotations say nothing): check"
		default:
			p.Tier, p.Why = "mutating", "nothing says it only reads"
		}
		out = append(out, p)
	}
	return out, nil
}

// classify proposes what argument k of tool is.
func classify(server, tool, k string, raw json.RawMessage, writes bool) (ProposedArg, string, bool) {
	name := words(k)
	var s struct {
		Type        any    `json:"type"`
		Format      string `json:"format"`
		Description string `json:"description"`
		Items       *struct {
			Type   any    `json:"type"`
			Format string `json:"format"`
		} `json:"items"`
	}
	json.Unmarshal(raw, &s)
	ptr := "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
	format, typ := s.Format, typeName(s.Type)
	if typ == "array" && s.Items != nil {
		ptr += "/*"
		format, typ = s.Items.Format, typeName(s.Items.Type)
	}
	if typ != "string" && typ != "" {
		return ProposedArg{}, typ + ", not a string", false
	}
	desc := strings.ToLower(s.Description)
	fsKind := "fs.read"
	if writes {
		fsKind = "fs.write"
	}
	switch {
	case format == "uri" || format == "url" || format == "iri" || reURL.MatchString(name):
		return ProposedArg{Pointer: ptr, Kind: "net.connect", Why: "its name or format says URL"}, "", true
	case reHost.MatchString(name) || format == "hostname":
		return ProposedArg{Pointer: ptr, Kind: "net.connect", Form: "host", Why: "its name says host"}, "", true
	case reCommand.MatchString(name):
		return ProposedArg{Pointer: ptr, Kind: "exec", Why: "its name says command"}, "", true
	case rePath.MatchString(name) || strings.Contains(desc, "path to") || strings.Contains(desc, "file path") || strings.Contains(desc, "directory"):
		why := "its name or description says path"
		if writes {
			why += "; the tool may change things, so it is proposed as written (add an fs.read if it reads it too)"
		}
		return ProposedArg{Pointer: ptr, Kind: fsKind, Why: why}, "", true
	case reID.MatchString(name):
		m := reID.FindStringSubmatch(name)
		stem := strings.ToLower(strings.Trim(m[1], "_"))
		if stem == "" {
			stem = "object"
		}
		return ProposedArg{Pointer: ptr, Kind: "id", IDKind: idKindName(server) + "." + idKindName(stem), Why: "its name says id"}, "", true
	}
	return ProposedArg{}, "a value", false
}

func typeName(t any) string {
	switch v := t.(type) {
	case string:
		return v
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok && s != "null" {
				return s
			}
		}
	}
	return ""
}

// idKindName makes s a word of an id kind: lower-case letters and digits.
func idKindName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 || b.String()[0] >= '0' && b.String()[0] <= '9' {
		return "x" + b.String()
	}
	return b.String()
}

// ProposalFile renders proposals as a bindings file, each guess with its
// reason, for a person to review.
func ProposalFile(server string, ps []Proposal) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Bindings PROPOSED by aegis for server %q from its pinned tool definitions.\n", server)
	b.WriteString("# Nothing here authorises a call: review every tool (is each argument what it\n")
	b.WriteString("# says? is a missed one a path, a URL, a command?), edit, then name this file\n")
	b.WriteString("# under the server's bindings: in the configuration. Each tool's shape is the\n")
	b.WriteString("# schema it was made for: if the server changes it, the binding goes stale\n")
	b.WriteString("# (the tool is unbound) until it is proposed and reviewed again.\n")
	b.WriteString("version: 1\ntools:\n")
	// The names in the comments are the server's: one with a newline would
	// end its comment and write YAML of the server's choosing into the file
	// a person reviews (an escape sequence would hide it from them).
	for _, p := range ps {
		fmt.Fprintf(&b, "  %s:\n", yamlKey(p.Tool))
		fmt.Fprintf(&b, "    tier: %s   # %s\n", p.Tier, plaintext.Quote(p.Why))
		if p.Shape != "" {
			fmt.Fprintf(&b, "    shape: %q\n", p.Shape)
		}
		if len(p.Args) > 0 {
			b.WriteString("    args:\n")
			for _, a := range p.Args {
				fmt.Fprintf(&b, "      - {pointer: %q, kind: %s", a.Pointer, a.Kind)
				if a.Form != "" {
					fmt.Fprintf(&b, ", form: %s", a.Form)
				}
				if a.IDKind != "" {
					fmt.Fprintf(&b, ", id_kind: %s", a.IDKind)
				}
				fmt.Fprintf(&b, "}   # %s\n", plaintext.Quote(a.Why))
			}
		}
		for _, o := range p.Others {
			fmt.Fprintf(&b, "    # not a resource: %s\n", plaintext.Quote(o))
		}
	}
	return []byte(b.String())
}

// yamlKey quotes a tool name unless it is a plain word.
func yamlKey(s string) string {
	if regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`).MatchString(s) {
		return s
	}
	q, _ := json.Marshal(s)
	return string(q)
}

// words returns an argument's name as lower-case words joined by _, so
// that camelCase, kebab-case and snake_case names meet the same patterns:
// "repoURL" → "repo_url", "outputDir" → "output_dir", "file-path" →
// "file_path".
func words(k string) string {
	var b strings.Builder
	rs := []rune(k)
	for i, r := range rs {
		switch {
		case r == '-' || r == '.' || r == ' ':
			b.WriteByte('_')
			continue
		case r >= 'A' && r <= 'Z':
			prevLower := i > 0 && (rs[i-1] >= 'a' && rs[i-1] <= 'z' || rs[i-1] >= '0' && rs[i-1] <= '9')
			nextLower := i+1 < len(rs) && rs[i+1] >= 'a' && rs[i+1] <= 'z'
			prevUpper := i > 0 && rs[i-1] >= 'A' && rs[i-1] <= 'Z'
			if prevLower || prevUpper && nextLower {
				b.WriteByte('_')
			}
			b.WriteRune(r + ('a' - 'A'))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
