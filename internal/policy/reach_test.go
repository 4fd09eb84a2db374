package policy

import "testing"

func TestMayAllow(t *testing.T) {
	const src = `version: 1
rules:
  - id: read-fs
    effect: allow
    server: fs
    tool: "read_*"
  - id: ask-write
    effect: ask
    server: fs
    tool: write_file
    role: [dev]
  - id: any-cap
    effect: allow
    capability: fs.read
    path_under: /srv
  - id: deny-all-move
    effect: deny
    tool: move_file
  - id: odd-unbound
    effect: allow
    server: fs
    tool: mystery
    unbound: true
  - id: later-only
    effect: allow
    server: fs
    tool: list_directory
    origin: unattended
    when: call.principal == "nobody"
`
	set, err := Parse("p.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  Request
		want bool
	}{
		{"glob tool", Request{Server: "fs", Tool: "read_file", Bound: true}, true},
		{"other server", Request{Server: "web", Tool: "read_file", Bound: true}, false},
		{"ask counts", Request{Server: "fs", Tool: "write_file", Bound: true, Roles: []string{"dev"}}, true},
		{"ask needs the role", Request{Server: "fs", Tool: "write_file", Bound: true, Roles: []string{"ops"}}, false},
		{"a capability rule is not an action grant", Request{Server: "fs", Tool: "edit_file", Bound: true}, false},
		{"only denied", Request{Server: "fs", Tool: "move_file", Bound: true}, false},
		{"unbound needs unbound: true", Request{Server: "fs", Tool: "read_x", Bound: false}, false},
		{"unbound rule", Request{Server: "fs", Tool: "mystery", Bound: false}, true},
		{"unbound rule does not reach a bound tool", Request{Server: "fs", Tool: "mystery", Bound: true}, false},
		{"origin and when are assumed to match", Request{Server: "fs", Tool: "list_directory", Bound: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := set.MayAllow(&tc.req); got != tc.want {
				t.Errorf("MayAllow = %v, want %v", got, tc.want)
			}
		})
	}
}
