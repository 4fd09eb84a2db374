package binding

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPropose: each argument of a set of real-looking tools classified
// from its name, type, format and description, and each tier from the
// annotations or the tool's name; and the proposal is a bindings file
// that parses, with each tool's shape.
func TestPropose(t *testing.T) {
	data, err := os.ReadFile("testdata/propose/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var defs map[string]json.RawMessage
	if err := json.Unmarshal(data, &defs); err != nil {
		t.Fatal(err)
	}
	shapes := map[string]string{}
	for n := range defs {
		shapes[n] = strings.Repeat("a", 64)
	}
	ps, err := Propose("fs", defs, shapes)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range ps {
		s := p.Tier
		for _, a := range p.Args {
			s += " " + a.Pointer + "=" + a.Kind
			if a.Form != "" {
				s += "(" + a.Form + ")"
			}
			if a.IDKind != "" {
				s += "(" + a.IDKind + ")"
			}
		}
		got[p.Tool] = s
	}
	for tool, want := range map[string]string{
		"read_text_file":           "data-read /path=fs.read",
		"write_file":               "mutating /path=fs.write",
		"read_multiple_files":      "data-read /paths/*=fs.read",
		"fetch":                    "data-read /url=net.connect",
		"ping_host":                "mutating /hostname=net.connect(host)",
		"git_log":                  "data-read /repo_path=fs.read",
		"git_checkout":             "mutating /repo_path=fs.write",
		"run_command":              "mutating /command=exec /workdir=fs.write",
		"delete_entities":          "mutating /entity_ids/*=id(fs.entity)",
		"list_allowed_directories": "read-only",
	} {
		if got[tool] != want {
			t.Errorf("%s: %q, want %q", tool, got[tool], want)
		}
	}
	file := ProposalFile("fs", ps)
	tools, _, err := ParseFile("proposal.yaml", file)
	if err != nil {
		t.Fatalf("the proposal does not parse: %v\n%s", err, file)
	}
	if b := tools["write_file"]; b == nil || b.Shape != strings.Repeat("a", 64) || len(b.Args) != 1 {
		t.Errorf("write_file from the file: %+v", b)
	}
	if !strings.Contains(string(file), "# not a resource: content (a value)") {
		t.Errorf("the proposal does not say what it left out:\n%s", file)
	}
}

// TestProposalFileComments: the names a proposal's comments quote are the
// server's; one with a newline or an escape sequence must not end its
// comment and add YAML of its own (a binding) to the file a person
// reviews, nor reach their terminal raw.
func TestProposalFileComments(t *testing.T) {
	ps := []Proposal{{
		Tool: "note", Tier: "read-only", Why: "no argument names a resource\n  evil:\n    tier: read-only",
		Others: []string{"text (a value)\n  run_command:\n    tier: read-only", "title\x1b[1A\x1b[2K (a value)", "bad \xff (a value)"},
	}}
	file := ProposalFile("srv", ps)
	tools, _, err := ParseFile("proposal.yaml", file)
	if err != nil {
		t.Fatalf("the proposal does not parse: %v\n%s", err, file)
	}
	if len(tools) != 1 || tools["note"] == nil {
		t.Errorf("the proposal binds %d tools, want note alone:\n%s", len(tools), file)
	}
	for _, c := range string(file) {
		if c != '\n' && (c < ' ' || c == 0x7f || c == utf8.RuneError) {
			t.Errorf("the file holds %U:\n%q", c, file)
		}
	}
}
