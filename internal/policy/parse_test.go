package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/strictyaml"
	"github.com/google/go-cmp/cmp"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		home string
		want string
	}{
		{name: "unknown key", in: `version: 1
rules:
  - id: a
    efect: deny
`, want: `p.yaml:4:5: unknown key "efect" in rule (want one of: id, effect, reason, mode, server, method, tool, prompt, principal, role, origin, taint, tier, unbound, capability, path_under, host, port, scheme, program, shell, id_kind, unproven, id_in, when)
p.yaml:3:5: missing key "effect" in rule`},
		{name: "unknown top-level key", in: "version: 1\nrule: []\n",
			want: `p.yaml:2:1: unknown key "rule" in policy (want one of: version, mode, rules)`},
		{name: "missing version", in: "rules: []\n", want: `p.yaml:1:1: missing key "version" in policy`},
		{name: "empty file", in: "", want: `p.yaml:1:1: missing key "version" in policy`},
		{name: "bad version", in: "version: 2\n", want: `p.yaml:1:10: unsupported policy version "2"; want 1`},
		{name: "version as a string", in: "version: \"1\"\n", want: `p.yaml:1:10: unsupported policy version "1"; want 1`},
		{name: "bad policy mode", in: "version: 1\nmode: off\n", want: `p.yaml:2:7: bad mode "off": want enforce or shadow`},
		{name: "bad effect", in: `version: 1
rules:
  - id: a
    effect: permit
`, want: `p.yaml:4:13: bad effect "permit": want allow, deny or ask`},
		{name: "bad rule mode", in: "version: 1\nrules:\n  - {id: a, effect: deny, mode: audit}\n",
			want: `p.yaml:3:33: bad mode "audit": want enforce or shadow`},
		{name: "duplicate id", in: `version: 1
rules:
  - id: a
    effect: deny
  - id: a
    effect: allow
`, want: `p.yaml:5:9: duplicate rule id "a" (first at line 3)`},
		{name: "empty id", in: "version: 1\nrules:\n  - {id: '', effect: deny}\n", want: `p.yaml:3:10: empty rule id`},
		{name: "reserved id", in: "version: 1\nrules:\n  - {id: 'aegis:undecidable', effect: allow}\n", want: `p.yaml:3:10: rule id "aegis:undecidable": ids starting with "aegis:" are reserved for aegis's own rules`},
		{name: "bad id", in: "version: 1\nrules:\n  - {id: 'a b', effect: deny}\n", want: `p.yaml:3:10: bad rule id "a b": want letters, digits and . _ : / -`},
		{name: "id as a list", in: "version: 1\nrules:\n  - {id: [a], effect: deny}\n", want: `p.yaml:3:10: want a single value, got a sequence`},
		{name: "bad glob", in: `version: 1
rules:
  - id: a
    effect: allow
    tool: [ok, "read_[a-z]*"]
`, want: `p.yaml:5:16: bad tool pattern "read_[a-z]*": character classes ([...]) are not supported; write \[ for a literal bracket`},
		{name: "glob ends in backslash", in: "version: 1\nrules:\n  - {id: a, effect: allow, server: 'x\\'}\n",
			want: `p.yaml:3:36: bad server pattern "x\\": pattern ends in "\"`},
		{name: "bad CIDR", in: `version: 1
rules:
  - id: a
    effect: deny
    host: [10.0.0.0/33]
`, want: `p.yaml:5:12: bad network "10.0.0.0/33": want an address/bits CIDR such as 10.0.0.0/8`},
		{name: "CIDR with host bits", in: "version: 1\nrules:\n  - {id: a, effect: deny, host: [10.1.2.3/8]}\n",
			want: `p.yaml:3:34: bad network "10.1.2.3/8": host bits are set; did you mean 10.0.0.0/8?`},
		{name: "bad class", in: "version: 1\nrules:\n  - {id: a, effect: deny, host: 'class:evil'}\n",
			want: `p.yaml:3:33: unknown address class "evil" (want one of loopback, private, link-local, cgnat, multicast, broadcast, unspecified, reserved, benchmarking, documentation, metadata, embedded, internal-name, public)`},
		{name: "inner wildcard", in: "version: 1\nrules:\n  - {id: a, effect: allow, host: 'api.*.com'}\n",
			want: `p.yaml:3:34: bad host pattern "api.*.com": a wildcard may only be a leading "*."`},
		{name: "relative path_under", in: `version: 1
rules:
  - id: a
    effect: allow
    path_under: [/ok, projects/x]
`, want: `p.yaml:5:23: path_under "projects/x" is relative: want an absolute path or one starting with "~/"`},
		{name: "tilde without home", in: `version: 1
rules:
  - id: a
    effect: deny
    path_under: "~/.ssh"
`, want: `p.yaml:5:17: path_under "~/.ssh" uses "~" but no home directory is set (Options.Home)`},
		{name: "tilde user", home: "/home/a", in: "version: 1\nrules:\n  - {id: a, effect: deny, path_under: '~bob/.ssh'}\n",
			want: `p.yaml:3:39: bad path_under "~bob/.ssh": `},
		{name: "NUL in path_under", in: "version: 1\nrules:\n  - {id: a, effect: deny, path_under: \"/a\\0b\"}\n",
			want: `p.yaml:3:39: bad path_under "/a\x00b": `},
		{name: "CEL type error", in: `version: 1
rules:
  - id: a
    effect: deny
    capability: net.connect
    when: cap.port == "443"
`, want: `p.yaml:6:11: bad condition: found no matching overload for '_==_' applied to '(int, string)' (at 1:10 of the condition)`},
		{name: "CEL unknown field", in: "version: 1\nrules:\n  - id: a\n    effect: deny\n    when: cap.pth == ''\n",
			want: `p.yaml:5:11: bad condition: undefined field 'pth' (at 1:4 of the condition)`},
		{name: "CEL not boolean", in: "version: 1\nrules:\n  - id: a\n    effect: deny\n    when: cap.path\n",
			want: `p.yaml:5:11: bad condition: want a boolean, got string`},
		{name: "CEL syntax", in: "version: 1\nrules:\n  - id: a\n    effect: deny\n    when: 'cap.path ==='\n",
			want: `p.yaml:5:11: bad condition: `},
		{name: "port zero", in: "version: 1\nrules:\n  - {id: a, effect: deny, port: [0]}\n", want: `p.yaml:3:34: port 0 out of range: want 1 to 65535`},
		{name: "port out of range", in: `version: 1
rules:
  - id: a
    effect: allow
    port: [443, 70000]
`, want: `p.yaml:5:17: port 70000 out of range: want 1 to 65535`},
		{name: "empty port range", in: "version: 1\nrules:\n  - {id: a, effect: allow, port: '9000-8000'}\n",
			want: `p.yaml:3:34: port range "9000-8000" is empty: 9000 > 8000`},
		{name: "negative port", in: "version: 1\nrules:\n  - {id: a, effect: allow, port: -1}\n",
			want: `p.yaml:3:34: bad port "-1": want a number from 1 to 65535 or a range such as 8000-8100`},
		{name: "port as text", in: "version: 1\nrules:\n  - {id: a, effect: allow, port: https}\n",
			want: `p.yaml:3:34: bad port "https": want a number from 1 to 65535 or a range such as 8000-8100`},
		{name: "bad scheme", in: "version: 1\nrules:\n  - {id: a, effect: allow, scheme: 'https://'}\n",
			want: `p.yaml:3:36: bad scheme "https://": want lower-case letters, digits, +, - and . (such as https)`},
		{name: "path_under with host", in: `version: 1
rules:
  - id: a
    effect: allow
    path_under: /srv
    host: example.com
`, want: `p.yaml:6:11: host (for net.connect and net.link) cannot be combined with path_under (for fs.read and fs.write) in one rule`},
		{name: "path_under with net.connect only", in: `version: 1
rules:
  - id: a
    effect: allow
    capability: [net.connect]
    path_under: /srv
`, want: `p.yaml:6:17: path_under does not apply to net.connect (it applies to fs.read and fs.write)`},
		{name: "program with fs kinds", in: "version: 1\nrules:\n  - {id: a, effect: allow, capability: [exec, fs.read], program: git}\n",
			want: `p.yaml:3:66: program does not apply to fs.read (it applies to exec)`},
		{name: "unknown kind", in: "version: 1\nrules:\n  - {id: a, effect: allow, capability: fs.delete}\n",
			want: `p.yaml:3:40: unknown capability kind "fs.delete" (want fs.read, fs.write, net.connect, net.link, exec or id)`},
		{name: "unbound with capability matchers", in: `version: 1
rules:
  - id: a
    effect: allow
    unbound: true
    path_under: /srv
`, want: `p.yaml:5:14: unbound: true cannot be combined with capability matchers: an unbound tool has no capabilities`},
		{name: "unbound not a boolean", in: "version: 1\nrules:\n  - {id: a, effect: allow, unbound: yes}\n",
			want: `p.yaml:3:37: bad unbound "yes": want true or false`},
		{name: "bad origin", in: "version: 1\nrules:\n  - {id: a, effect: allow, origin: human}\n",
			want: `p.yaml:3:36: bad origin "human": want interactive or unattended`},
		{name: "bad tier", in: "version: 1\nrules:\n  - {id: a, effect: allow, tier: [safe]}\n",
			want: `p.yaml:3:35: unknown risk tier "safe" (want read-only, data-read or mutating)`},
		{name: "unknown tier is not writable", in: "version: 1\nrules:\n  - {id: a, effect: allow, tier: unknown}\n",
			want: `p.yaml:3:34: unknown risk tier "unknown" (want read-only, data-read or mutating)`},
		{name: "empty list", in: "version: 1\nrules:\n  - {id: a, effect: deny, tool: []}\n",
			want: `p.yaml:3:33: empty list matches nothing; leave the key out to match anything`},
		{name: "null matcher", in: "version: 1\nrules:\n  - id: a\n    effect: deny\n    tool:\n",
			want: `p.yaml:5:10: want a value or a list of values, got null`},
		{name: "empty principal", in: "version: 1\nrules:\n  - {id: a, effect: deny, principal: ''}\n",
			want: `p.yaml:3:38: bad principal "": want a non-empty name`},
		{name: "several errors", in: `version: 1
rules:
  - {id: a, effect: nope}
  - {id: b, effect: allow, port: 0}
`, want: `p.yaml:3:21: bad effect "nope": want allow, deny or ask
p.yaml:4:34: port 0 out of range: want 1 to 65535`},
		{name: "alias", in: "version: 1\nrules:\n  - &r {id: a, effect: deny}\n  - *r\n",
			want: "p.yaml:3:5: anchors (&r) are not supported\np.yaml:4:5: aliases (*r) are not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.in), &Options{Home: tt.home})
			if err == nil {
				t.Fatalf("Parse succeeded, want %q", tt.want)
			}
			got := err.Error()
			if strings.HasSuffix(tt.want, ": ") {
				// The rest is another package's message.
				if !strings.HasPrefix(got, tt.want) || strings.Contains(got, "\n") {
					t.Errorf("error %q, want one starting %q", got, tt.want)
				}
			} else if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			var es strictyaml.Errors
			if !errors.As(err, &es) {
				t.Errorf("error is a %T, want strictyaml.Errors", err)
			}
		})
	}
}

func TestParseRules(t *testing.T) {
	in := `version: 1
rules:
  - id: a
    effect: allow
    reason: because
    tool: x
  - id: b
    effect: ask
    mode: shadow
    path_under: "~/docs"
  - id: c
    effect: deny
    host: example.com
    when: cap.port == 22
  - id: d
    effect: allow
    server: legacy
    unbound: true
  - id: e
    effect: deny
    shell: false
`
	s, err := Parse("p.yaml", []byte(in), &Options{Home: "/home/a"})
	if err != nil {
		t.Fatal(err)
	}
	want := []*Rule{
		{ID: "a", Reason: "because", File: "p.yaml", Line: 3, Col: 5, Effect: Allow},
		{ID: "b", File: "p.yaml", Line: 7, Col: 5, Effect: Ask, Mode: Shadow, Kinds: []capability.Kind{capability.FSRead, capability.FSWrite}, PathUnder: []string{"/home/a/docs"}},
		{ID: "c", File: "p.yaml", Line: 11, Col: 5, Effect: Deny, Kinds: []capability.Kind{capability.NetConnect, capability.NetLink}, When: "cap.port == 22"},
		{ID: "d", File: "p.yaml", Line: 15, Col: 5, Effect: Allow, Unbound: true},
		{ID: "e", File: "p.yaml", Line: 19, Col: 5, Effect: Deny, Kinds: []capability.Kind{capability.Exec}},
	}
	if diff := cmp.Diff(want, s.Rules()); diff != "" {
		t.Errorf("Rules() (-want +got)\n%s", diff)
	}
	if s.Mode() != Enforce {
		t.Errorf("Mode() = %s", s.Mode())
	}
	// "~" expanded against Home, component-wise.
	d := s.Decide(&Request{Tool: "x", Bound: true, Caps: caps(fsRead("/home/a/docs/x"))})
	if d.Effect() != Deny || d.Would() != Ask {
		t.Errorf("~/docs: %s, would %s; want deny, would ask (rule b is shadow)", d.Effect(), d.Would())
	}
	// Rules returns a copy of the list.
	s.Rules()[0] = nil
	if s.Rules()[0] == nil {
		t.Error("Rules() exposes the set's slice")
	}
}

func TestParseTooManyErrors(t *testing.T) {
	in := "version: 1\nrules:\n" + strings.Repeat("  - {id: a, effect: nope}\n", 30)
	_, err := Parse("p.yaml", []byte(in), nil)
	var es strictyaml.Errors
	if !errors.As(err, &es) || len(es) != strictyaml.MaxErrors+1 {
		t.Fatalf("got %d errors (%v), want %d", len(es), err, strictyaml.MaxErrors+1)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"matchers.yaml", "cel.yaml", "shadow.yaml", "shadow-policy.yaml"} {
		f.Add(mustRead(f, name))
	}
	f.Add([]byte("version: 1\nrules:\n  - {id: a, effect: deny, host: ['*.x', 10.0.0.0/8, 'class:private'], port: [1, '2-3']}\n"))
	f.Add([]byte("version: 1\nrules:\n  - {id: a, effect: allow, program: ['/usr/bin/*', git], shell: true, when: 'cap.argv.size() > 1'}\n"))
	f.Add([]byte("version: 1\nmode: shadow\nrules:\n  - {id: a, effect: ask, mode: enforce, path_under: ['~/x', /], unbound: false, taint: true, origin: unattended, tier: [mutating]}\n"))
	f.Add([]byte("version: 1\nrules:\n  - {id: a, effect: deny, capability: [id, exec], when: 'call.roles.exists(r, r == \"x\")'}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f.yaml", data, &Options{Home: "/home/a"})
		if err != nil {
			var es strictyaml.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %T %v, want strictyaml.Errors", err, err)
			}
			for _, e := range es {
				if e.Line < 1 || e.Col < 1 || e.File != "f.yaml" {
					t.Fatalf("error without position: %+v", e)
				}
			}
			return
		}
		// A policy that parses decides without panicking.
		for _, r := range fuzzRequests {
			s.Decide(r)
		}
	})
}

var fuzzRequests = []*Request{
	req("fs", "read_file", fsRead("/home/a/.ssh/x"), fsWrite("/tmp/x"), netTo("https", "a.example.com", 443, capability.Public), execOf("git")),
	req("x", "y", shellOf("a|b"), idOf("mail.message", "1"), netTo("http", "10.0.0.1", 80, capability.Private)),
	{Server: "legacy", Tool: "t"},
}

// TestResolvedPatterns: with Resolve, a rule matches under a pattern and
// under its resolved form, so a deny on a path behind a symbolic link still
// matches a local server's resolved capabilities.
func TestResolvedPatterns(t *testing.T) {
	src := "version: 1\nrules:\n  - {id: tools, effect: allow, tool: '*'}\n  - {id: no-tmp, effect: deny, path_under: /tmp/secret}\n  - {id: home, effect: allow, path_under: '~/p'}\n"
	resolve := func(dir string) (string, error) {
		switch {
		case strings.HasPrefix(dir, "/tmp/"):
			return "/private" + dir, nil
		case strings.HasPrefix(dir, "/home/u/"):
			return "/usr/home/u/" + strings.TrimPrefix(dir, "/home/u/"), nil
		}
		return dir, nil
	}
	tests := []struct {
		name    string
		resolve func(string) (string, error)
		path    string
		want    Effect
	}{
		{"lexical form", resolve, "/tmp/secret/a", Deny},
		{"resolved form is denied too", resolve, "/private/tmp/secret/a", Deny},
		{"resolved home is allowed", resolve, "/usr/home/u/p/x", Allow},
		{"without Resolve the resolved form is unknown", nil, "/usr/home/u/p/x", Deny},
		{"without Resolve the lexical form still works", nil, "/home/u/p/x", Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("p.yaml", []byte(src), &Options{Home: "/home/u", Resolve: tt.resolve})
			if err != nil {
				t.Fatal(err)
			}
			d := s.Decide(&Request{Server: "fs", Tool: "read_file", Origin: capability.Interactive, Bound: true,
				Caps: []capability.Capability{{Kind: capability.FSRead, Path: tt.path}}})
			if d.Effect() != tt.want {
				t.Fatalf("%s: %s, want %s (%s)", tt.path, d.Effect(), tt.want, d.Reason())
			}
		})
	}
}
