package policy

import (
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// TestDecideMethods holds rules to the methods they name: a tool matcher
// applies to tools/call only, a prompt matcher to prompts/get only, a
// method matcher to its methods, and a rule with none of them to every
// method; capability rules reach the capabilities of every method.
func TestDecideMethods(t *testing.T) {
	const A, D = Allow, Deny
	m := func(method, name string, cs ...capability.Capability) *Request {
		r := req("s", name, cs...)
		r.Method = method
		return r
	}
	ops := func(r *Request) *Request { r.Roles = []string{"ops"}; return r }
	tests := []decideCase{
		{"tool rule, tools/call", m("", "read_file"), outcome{Effect: A, Would: A, Action: "read-tools"}},
		{"tool rule, tools/call spelled out", m("tools/call", "read_file"), outcome{Effect: A, Would: A, Action: "read-tools"}},
		{"tool rule does not reach a prompt of the same name", m("prompts/get", "read_file"), outcome{Effect: D, Would: D}},
		{"tool rule does not reach a completion", m("completion/complete", "read_file"), outcome{Effect: A, Would: A, Action: "completions"}},
		{"prompt rule", m("prompts/get", "summarize"), outcome{Effect: A, Would: A, Action: "prompt-summarize"}},
		{"prompt rule does not reach a tool of the same name", m("", "summarize"), outcome{Effect: D, Would: D}},
		{"other prompt", m("prompts/get", "run"), outcome{Effect: D, Would: D}},
		{"a tool named like a method is a tool", m("", "resources/read"), outcome{Effect: D, Would: D, Action: "tool-named-like-a-method"}},
		{"the method is not that tool", m("resources/read", "file:///home/a/x", fsRead("/home/a/x")),
			outcome{Effect: A, Would: A, Action: "resources", Caps: []string{"home-read"}}},
		{"capability rules reach resources/read", m("resources/read", "file:///home/a/.ssh/id_rsa", fsRead("/home/a/.ssh/id_rsa")),
			outcome{Effect: D, Would: D, Action: "resources", Caps: []string{"no-ssh"}}},
		{"capability rules reach prompts", m("prompts/get", "summarize", fsRead("/home/a/.ssh/id_rsa")),
			outcome{Effect: D, Would: D, Action: "prompt-summarize", Caps: []string{"no-ssh"}}},
		{"method glob deny", m("sampling/createMessage", ""), outcome{Effect: D, Would: D, Action: "no-sampling"}},
		{"deny beats a rule with no method matcher", ops(m("sampling/createMessage", "")), outcome{Effect: D, Would: D, Action: "no-sampling"}},
		{"method literal allow", m("roots/list", ""), outcome{Effect: A, Would: A, Action: "roots"}},
		{"no rule names the method", m("elicitation/create", ""), outcome{Effect: D, Would: D}},
		{"a rule with no method matcher reaches every method", ops(m("elicitation/create", "")), outcome{Effect: A, Would: A, Action: "ops-anything"}},
		{"condition over call.tool of a method", m("completion/complete", "secret-prompt"), outcome{Effect: D, Would: D, Action: "no-secret-completion"}},
		{"method rule naming tools/call", with(m("", "write_file"), func(r *Request) { r.Server = "any" }),
			outcome{Effect: A, Would: A, Action: "explicit-tools-call"}},
		{"method rule naming tools/call, other method", with(m("prompts/get", "write_file"), func(r *Request) { r.Server = "any" }),
			outcome{Effect: D, Would: D}},
	}
	checkDecide(t, fixture(t, "methods.yaml"), tests)
}

// TestMethodReasons: a reason names the method and what it names.
func TestMethodReasons(t *testing.T) {
	s := fixture(t, "methods.yaml")
	for _, tt := range []struct {
		req  *Request
		want string
	}{
		{&Request{Server: "s", Method: "prompts/get", Tool: "run", Bound: true}, `no rule allows prompts/get "run" on server "s"`},
		{&Request{Server: "s", Method: "elicitation/create", Bound: true}, `no rule allows elicitation/create on server "s"`},
		{&Request{Server: "s", Tool: "x", Bound: true}, `no rule allows tool "x" on server "s"`},
	} {
		if got := s.Decide(tt.req).Reason(); !strings.Contains(got, tt.want) {
			t.Errorf("reason %q, want it to say %q", got, tt.want)
		}
	}
}

func TestParseMethodMatchers(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"version: 1\nrules:\n  - id: a\n    effect: allow\n    tool: [x]\n    prompt: [y]\n", `p.yaml:6:13: a rule cannot have both tool and prompt`},
		{"version: 1\nrules:\n  - id: a\n    effect: allow\n    method: [resources/read]\n    tool: [x]\n", `p.yaml:6:11: tool matches tools/call only`},
		{"version: 1\nrules:\n  - id: a\n    effect: allow\n    method: [resources/read]\n    prompt: [x]\n", `p.yaml:6:13: prompt matches prompts/get only`},
		{"version: 1\nrules:\n  - id: a\n    effect: allow\n    method: [\"tools/*\"]\n    tool: [x]\n", ``},
	} {
		_, err := Parse("p.yaml", []byte(tt.yaml), nil)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.yaml, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: error %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

// TestMayAllowMethods: hiding a tool looks at the rules that can reach a
// tool, not those of prompts.
func TestMayAllowMethods(t *testing.T) {
	s, err := Parse("p.yaml", []byte("version: 1\nrules:\n  - id: a\n    effect: allow\n    prompt: [x]\n  - id: b\n    effect: allow\n    method: [resources/read]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.MayAllow(&Request{Server: "s", Tool: "x", Bound: true}) {
		t.Error("a prompt rule makes tool x allowable")
	}
}
