package policy

import (
	"crypto/sha256"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/google/go-cmp/cmp"
)

// req returns a bound, interactive call of tool on server by alice.
func req(server, tool string, cs ...capability.Capability) *Request {
	return &Request{Server: server, Tool: tool, Principal: "alice", Origin: capability.Interactive, Bound: true, Tier: capability.TierDataRead, Caps: cs}
}

func with(r *Request, f func(*Request)) *Request { f(r); return r }

func TestDecideMatchers(t *testing.T) {
	const A, D, K = Allow, Deny, Ask
	tests := []decideCase{
		// Action rules.
		{"tool glob", req("fs", "read_file"), outcome{Effect: A, Would: A, Action: "fs-read-tools"}},
		{"tool literal in list", req("fs", "list_directory"), outcome{Effect: A, Would: A, Action: "fs-read-tools"}},
		{"tool glob needs the prefix", req("fs", "readfile"), outcome{Effect: D, Would: D}},
		{"server mismatch", req("other", "read_file"), outcome{Effect: D, Would: D}},
		{"tool on any server", req("web", "fetch"), outcome{Effect: A, Would: A, Action: "any-server-fetch"}},
		{"ask beats nothing", req("fs", "write_file"), outcome{Effect: K, Would: K, Action: "fs-write-tool"}},
		{"deny rule names its tool", req("fs", "delete_file"), outcome{Effect: D, Would: D, Action: "no-delete"}},
		{"principal matches", req("x", "admin_users"), outcome{Effect: A, Would: A, Action: "admin-alice"}},
		{"principal mismatch", with(req("x", "admin_users"), func(r *Request) { r.Principal = "bob" }), outcome{Effect: D, Would: D}},
		{"role, origin and taint match", with(req("x", "deploy"), func(r *Request) { r.Roles = []string{"qa", "ops"} }),
			outcome{Effect: A, Would: A, Action: "deploy-dev"}},
		{"no matching role", with(req("x", "deploy"), func(r *Request) { r.Roles = []string{"qa"} }), outcome{Effect: D, Would: D}},
		{"tainted", with(req("x", "deploy"), func(r *Request) { r.Roles = []string{"dev"}; r.Taint = true }), outcome{Effect: D, Would: D}},
		{"unattended", with(req("x", "deploy"), func(r *Request) { r.Roles = []string{"dev"}; r.Origin = capability.Unattended }), outcome{Effect: D, Would: D}},
		{"unknown origin grants nothing", with(req("x", "deploy"), func(r *Request) { r.Roles = []string{"dev"}; r.Origin = capability.OriginUnknown }),
			outcome{Effect: D, Would: D}},
		{"out-of-range origin grants nothing", with(req("x", "deploy"), func(r *Request) { r.Roles = []string{"dev"}; r.Origin = 9 }),
			outcome{Effect: D, Would: D}},
		{"tier read-only", with(req("misc", "time"), func(r *Request) { r.Tier = capability.TierReadOnly }),
			outcome{Effect: A, Would: A, Action: "misc-read-only"}},
		{"tier unknown is mutating", with(req("misc", "time"), func(r *Request) { r.Tier = capability.TierUnknown }),
			outcome{Effect: D, Would: D}},
		{"unattended mutation denied by rule", with(req("misc", "send"), func(r *Request) { r.Tier = capability.TierMutating; r.Origin = capability.Unattended }),
			outcome{Effect: D, Would: D, Action: "misc-no-unattended-mutation"}},
		{"unknown tier matches the mutating deny", with(req("misc", "send"), func(r *Request) { r.Tier = capability.TierUnknown; r.Origin = capability.Unattended }),
			outcome{Effect: D, Would: D, Action: "misc-no-unattended-mutation"}},
		{"unknown origin matches the unattended deny", with(req("misc", "x"), func(r *Request) { r.Tier = capability.TierMutating; r.Origin = capability.OriginUnknown }),
			outcome{Effect: D, Would: D, Action: "misc-no-unattended-mutation"}},

		// Unbound tools.
		{"unbound rule reaches unbound tool", with(req("legacy", "anything"), func(r *Request) { r.Bound = false }),
			outcome{Effect: A, Would: A, Action: "legacy-unbound"}},
		{"unbound rule skips bound tool", req("legacy", "anything"), outcome{Effect: D, Would: D}},
		{"allow rule skips unbound tool", with(req("fs", "read_file"), func(r *Request) { r.Bound = false }), outcome{Effect: D, Would: D}},
		{"ask rule skips unbound tool", with(req("fs", "write_file"), func(r *Request) { r.Bound = false }), outcome{Effect: D, Would: D}},
		{"deny rule reaches unbound tool", with(req("legacy", "delete_x"), func(r *Request) { r.Bound = false }),
			outcome{Effect: D, Would: D, Action: "no-delete"}},
		{"unbound tool gets no capability", with(req("legacy", "x", fsRead("/home/a/notes")), func(r *Request) { r.Bound = false }),
			outcome{Effect: D, Would: D, Action: "legacy-unbound", Caps: []string{""}}},
		{"deny capability rule reaches unbound tool", with(req("legacy", "x", fsRead("/home/a/.ssh/id_rsa")), func(r *Request) { r.Bound = false }),
			outcome{Effect: D, Would: D, Action: "legacy-unbound", Caps: []string{"no-ssh"}}},

		// fs.
		{"read under home", req("fs", "read_file", fsRead("/home/a/notes.txt")),
			outcome{Effect: A, Would: A, Action: "fs-read-tools", Caps: []string{"home-read"}}},
		{"home itself", req("fs", "list_directory", fsRead("/home/a")),
			outcome{Effect: A, Would: A, Action: "fs-read-tools", Caps: []string{"home-read"}}},
		{"deny wins over allow in the same call", req("fs", "read_file", fsRead("/home/a/.ssh/id_rsa")),
			outcome{Effect: D, Would: D, Action: "fs-read-tools", Caps: []string{"no-ssh"}}},
		{".ssh directory itself", req("fs", "list_directory", fsRead("/home/a/.ssh")),
			outcome{Effect: D, Would: D, Action: "fs-read-tools", Caps: []string{"no-ssh"}}},
		{".sshx is not under .ssh", req("fs", "read_file", fsRead("/home/a/.sshx/config")),
			outcome{Effect: A, Would: A, Action: "fs-read-tools", Caps: []string{"home-read"}}},
		{"second path_under of a rule", req("fs", "read_file", fsRead("/etc/ssh/sshd_config")),
			outcome{Effect: D, Would: D, Action: "fs-read-tools", Caps: []string{"no-ssh"}}},
		{"home rule is fs.read only", req("fs", "write_file", fsWrite("/home/a/x")),
			outcome{Effect: D, Would: D, Action: "fs-write-tool", Caps: []string{""}}},
		{"ask beats allow", req("fs", "write_file", fsWrite("/tmp/out")),
			outcome{Effect: K, Would: K, Action: "fs-write-tool", Caps: []string{"tmp-write"}}},
		{"ask capability, allowed action", req("fs", "read_file", fsWrite("/tmp/out")),
			outcome{Effect: K, Would: K, Action: "fs-read-tools", Caps: []string{"tmp-write"}}},
		{"deny beats ask across targets", req("fs", "write_file", fsWrite("/tmp/out"), fsRead("/etc/passwd")),
			outcome{Effect: D, Would: D, Action: "fs-write-tool", Caps: []string{"tmp-write", ""}}},
		{"role-scoped path, role present", with(req("fs", "read_file", fsWrite("/srv/projects/team-1/a"), fsRead("/srv/projects/team-1")),
			func(r *Request) { r.Roles = []string{"team-1"} }),
			outcome{Effect: A, Would: A, Action: "fs-read-tools", Caps: []string{"team-1", "team-1"}}},
		{"role-scoped path, role absent", req("fs", "read_file", fsRead("/srv/projects/team-1/a")),
			outcome{Effect: D, Would: D, Action: "fs-read-tools", Caps: []string{""}}},
		{"sibling of a scoped path", with(req("fs", "read_file", fsRead("/srv/projects/team-10/a")), func(r *Request) { r.Roles = []string{"team-1"} }),
			outcome{Effect: D, Would: D, Action: "fs-read-tools", Caps: []string{""}}},
		{"action allowed, one of three capabilities unmatched", req("fs", "read_file", fsRead("/home/a/a"), fsRead("/var/log/syslog"), fsRead("/home/a/b")),
			outcome{Effect: D, Would: D, Action: "fs-read-tools", Caps: []string{"home-read", "", "home-read"}}},
		{"relative path is invalid", req("fs", "read_file", fsRead("home/a/x")),
			outcome{Effect: D, Would: D, Action: "fs-read-tools", Caps: []string{"!"}}},
		{"unclean path is invalid", req("fs", "read_file", fsRead("/home/a/../../etc/passwd")),
			outcome{Effect: D, Would: D, Action: "fs-read-tools", Caps: []string{"!"}}},
		{"trailing slash is invalid", req("fs", "read_file", fsRead("/home/a/")),
			outcome{Effect: D, Would: D, Action: "fs-read-tools", Caps: []string{"!"}}},
		{"unknown kind is invalid", req("fs", "read_file", capability.Capability{Kind: 9, Path: "/home/a"}),
			outcome{Effect: D, Would: D, Action: "fs-read-tools", Caps: []string{"!"}}},

		// net.connect.
		{"exact host from a non-canonical pattern", req("web", "fetch", netTo("https", "api.github.com", 443, capability.Public)),
			outcome{Effect: A, Would: A, Action: "any-server-fetch", Caps: []string{"github"}}},
		{"wrong port", req("web", "fetch", netTo("https", "api.github.com", 8443, capability.Public)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{""}}},
		{"unknown port grants nothing", req("web", "fetch", netTo("https", "api.github.com", 0, capability.Public)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{"no-telnet"}}},
		{"wrong scheme", req("web", "fetch", netTo("http", "api.github.com", 443, capability.Public)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{""}}},
		{"no scheme grants nothing", req("web", "fetch", netTo("", "api.github.com", 443, capability.Public)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{"no-plain-ftp"}}},
		{"suffix matches a subdomain", req("web", "fetch", netTo("https", "raw.githubusercontent.com", 443, capability.Public)),
			outcome{Effect: A, Would: A, Action: "any-server-fetch", Caps: []string{"github"}}},
		{"suffix does not match the apex", req("web", "fetch", netTo("https", "githubusercontent.com", 443, capability.Public)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{""}}},
		{"suffix matches deep subdomains", req("web", "fetch", netTo("http", "a.b.example.com", 80, capability.Public)),
			outcome{Effect: A, Would: A, Action: "any-server-fetch", Caps: []string{"example"}}},
		{"suffix needs a label boundary", req("web", "fetch", netTo("http", "notexample.com", 80, capability.Public)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{""}}},
		{"CIDR matches an address", req("web", "fetch", netTo("http", "10.1.2.3", 8080, capability.Private)),
			outcome{Effect: A, Would: A, Action: "any-server-fetch", Caps: []string{"internal-services"}}},
		{"CIDR from a mapped pattern", req("web", "fetch", netTo("http", "172.20.0.1", 8000, capability.Private)),
			outcome{Effect: A, Would: A, Action: "any-server-fetch", Caps: []string{"internal-services"}}},
		{"CIDR port range end", req("web", "fetch", netTo("http", "10.1.2.3", 8101, capability.Private)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{""}}},
		{"a name never matches a CIDR", req("web", "fetch", netTo("http", "10.1.2.3.nip.io", 8080, capability.Public)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{""}}},
		{"class:metadata beats an allowed network", req("web", "fetch", netTo("http", "169.254.169.254", 80, capability.LinkLocal|capability.Metadata)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{"no-metadata"}}},
		{"class:metadata matches a name", req("web", "fetch", netTo("http", "metadata.google.internal", 80, capability.Metadata|capability.InternalName)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{"no-metadata"}}},
		{"link-local allowed", req("web", "fetch", netTo("http", "169.254.1.1", 80, capability.LinkLocal)),
			outcome{Effect: A, Would: A, Action: "any-server-fetch", Caps: []string{"link-local"}}},
		{"deny CIDR matches NAT64 embedding", req("web", "fetch", netTo("http", "64:ff9b::c0a8:101", 80, capability.Embedded)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{"no-home-lan"}}},
		{"deny CIDR matches 6to4 embedding", req("web", "fetch", netTo("http", "2002:c0a8:101::1", 80, capability.Embedded)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{"no-home-lan"}}},
		{"allow CIDR does not match an embedding", req("web", "fetch", netTo("http", "64:ff9b::a01:203", 8080, capability.Embedded)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{""}}},
		{"port-only deny", req("web", "fetch", netTo("telnet", "a.example.com", 23, capability.Public)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{"no-telnet"}}},
		{"port deny matches an unknown port", req("web", "fetch", netTo("gopher", "a.example.com", 0, capability.Public)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{"no-telnet"}}},
		{"scheme deny matches a missing scheme", req("web", "fetch", netTo("", "a.example.com", 80, capability.Public)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{"no-plain-ftp"}}},
		{"empty host is invalid", req("web", "fetch", netTo("https", "", 443, 0)),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{"!"}}},

		// exec.
		{"program by path", req("sh", "run", execOf("/usr/bin/git", "status")),
			outcome{Effect: A, Would: A, Action: "shell-tool", Caps: []string{"git"}}},
		{"program by name", req("sh", "run", execOf("git", "status")),
			outcome{Effect: A, Would: A, Action: "shell-tool", Caps: []string{"git"}}},
		{"allowed name does not allow another path", req("sh", "run", execOf("/tmp/evil/git")),
			outcome{Effect: D, Would: D, Action: "shell-tool", Caps: []string{""}}},
		{"program glob", req("sh", "run", execOf("/usr/local/bin/node")),
			outcome{Effect: A, Would: A, Action: "shell-tool", Caps: []string{"usr-local"}}},
		{"program glob does not cross /", req("sh", "run", execOf("/usr/local/bin/sub/node")),
			outcome{Effect: D, Would: D, Action: "shell-tool", Caps: []string{""}}},
		{"denied name", req("sh", "run", execOf("curl", "x")),
			outcome{Effect: D, Would: D, Action: "shell-tool", Caps: []string{"no-curl"}}},
		{"denied name matches its path", req("sh", "run", execOf("/usr/local/bin/curl", "x")),
			outcome{Effect: D, Would: D, Action: "shell-tool", Caps: []string{"no-curl"}}},
		{"tainted exec denied", with(req("sh", "run", execOf("git")), func(r *Request) { r.Taint = true }),
			outcome{Effect: D, Would: D, Action: "shell-tool", Caps: []string{"tainted-exec"}}},
		{"shell allowed only by a shell rule", with(req("sh", "run", shellOf("ls | wc -l")), func(r *Request) { r.Roles = []string{"ops"} }),
			outcome{Effect: A, Would: A, Action: "shell-tool", Caps: []string{"ops-shell"}}},
		{"shell without the role", req("sh", "run", shellOf("ls | wc -l")),
			outcome{Effect: D, Would: D, Action: "shell-tool", Caps: []string{""}}},
		{"a program allow does not allow shell", req("sh", "run", shellOf("git status; rm -rf /")),
			outcome{Effect: D, Would: D, Action: "shell-tool", Caps: []string{""}}},
		{"deny about exec covers shell", with(req("sh", "run", shellOf("ls | wc -l")), func(r *Request) { r.Roles = []string{"ops"}; r.Taint = true }),
			outcome{Effect: D, Would: D, Action: "shell-tool", Caps: []string{"tainted-exec"}}},
		{"deny naming a program does not cover shell", with(req("sh", "run", shellOf("curl x | sh")), func(r *Request) { r.Roles = []string{"ops"} }),
			outcome{Effect: A, Would: A, Action: "shell-tool", Caps: []string{"ops-shell"}}},
		{"program-and-shell rule, program", with(req("sh", "run", execOf("make")), func(r *Request) { r.Principal = "carol" }),
			outcome{Effect: K, Would: K, Action: "shell-tool", Caps: []string{"make-or-shell"}}},
		{"program-and-shell rule, shell", with(req("sh", "run", shellOf("make && make install")), func(r *Request) { r.Principal = "carol" }),
			outcome{Effect: K, Would: K, Action: "shell-tool", Caps: []string{"make-or-shell"}}},
		{"empty program is invalid", req("sh", "run", capability.Capability{Kind: capability.Exec}),
			outcome{Effect: D, Would: D, Action: "shell-tool", Caps: []string{"!"}}},

		// id.
		{"id kind", req("mail", "fetch", idOf("mail.message", "m1")),
			outcome{Effect: A, Would: A, Action: "any-server-fetch", Caps: []string{"mail"}}},
		{"other id kind", req("mail", "fetch", idOf("mail.thread", "t1")),
			outcome{Effect: D, Would: D, Action: "any-server-fetch", Caps: []string{""}}},

		// Many capabilities.
		{"six capabilities allowed", req("fs", "read_file", fsRead("/home/a/1"), fsRead("/home/a/2"), fsRead("/home/a/3"), fsRead("/home/a/4"), fsRead("/home/a/5"), fsRead("/home/a/6")),
			outcome{Effect: A, Would: A, Action: "fs-read-tools", Caps: []string{"home-read", "home-read", "home-read", "home-read", "home-read", "home-read"}}},
		{"sixth capability denied", req("fs", "read_file", fsRead("/home/a/1"), fsRead("/home/a/2"), fsRead("/home/a/3"), fsRead("/home/a/4"), fsRead("/home/a/5"), fsRead("/home/a/.ssh/x")),
			outcome{Effect: D, Would: D, Action: "fs-read-tools", Caps: []string{"home-read", "home-read", "home-read", "home-read", "home-read", "no-ssh"}}},
		{"fifth capability asks", req("fs", "read_file", fsRead("/home/a/1"), fsRead("/home/a/2"), fsRead("/home/a/3"), fsRead("/home/a/4"), fsWrite("/tmp/5")),
			outcome{Effect: K, Would: K, Action: "fs-read-tools", Caps: []string{"home-read", "home-read", "home-read", "home-read", "tmp-write"}}},
	}
	checkDecide(t, fixture(t, "matchers.yaml"), tests)
}

func TestDecideShadow(t *testing.T) {
	const A, D, K = Allow, Deny, Ask
	tests := []struct {
		name string
		req  *Request
		want outcome // for shadow.yaml
		// wantPolicy is for shadow-policy.yaml, where every rule is shadow.
		wantPolicy outcome
	}{
		{"no shadow rule involved", req("fs", "read_file", fsRead("/home/a/x")),
			outcome{Effect: A, Would: A, Action: "read", Caps: []string{"home"}},
			outcome{Effect: D, Would: A, Caps: []string{""}, Shadowed: []string{"read", "home"}}},
		{"shadow deny does not deny", req("fs", "read_file", fsRead("/home/a/secrets/key")),
			outcome{Effect: A, Would: D, Action: "read", Caps: []string{"home"}, Shadowed: []string{"secrets"}},
			outcome{Effect: D, Would: D, Caps: []string{""}, Shadowed: []string{"read"}}},
		{"shadow allow does not allow", req("fs", "write_file"),
			outcome{Effect: D, Would: A, Shadowed: []string{"write"}},
			outcome{Effect: D, Would: A, Shadowed: []string{"write"}}},
		{"shadow ask", req("fs", "read_file", fsRead("/home/a/docs/x")),
			outcome{Effect: A, Would: K, Action: "read", Caps: []string{"home"}, Shadowed: []string{"ask-docs"}},
			outcome{Effect: D, Would: K, Caps: []string{""}, Shadowed: []string{"read", "ask-docs"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				file string
				want outcome
			}{{"shadow.yaml", tt.want}, {"shadow-policy.yaml", tt.wantPolicy}} {
				s := fixture(t, c.file)
				d := s.Decide(tt.req)
				if diff := cmp.Diff(c.want, outcomeOf(d)); diff != "" {
					t.Errorf("%s (-want +got)\n%s", c.file, diff)
				}
				if (d.ShadowReason() == "") != (d.Would() == d.Effect()) {
					t.Errorf("%s: ShadowReason %q with Effect %s, Would %s", c.file, d.ShadowReason(), d.Effect(), d.Would())
				}
			}
		})
	}
	if got := fixture(t, "shadow-policy.yaml").Mode(); got != Shadow {
		t.Errorf("Mode() = %s, want shadow", got)
	}
	for _, r := range fixture(t, "shadow-policy.yaml").Rules() {
		if r.Mode != Shadow {
			t.Errorf("rule %s has mode %s in a shadow policy", r.ID, r.Mode)
		}
	}
	if got, want := fixture(t, "shadow.yaml").Decide(req("fs", "read_file", fsRead("/home/a/secrets/key"))).ShadowReason(),
		`shadow rule "secrets" (shadow.yaml:9) denies fs.read /home/a/secrets/key: secrets move soon`; got != want {
		t.Errorf("ShadowReason() = %q, want %q", got, want)
	}
}

func TestDecideCEL(t *testing.T) {
	const A, D, K = Allow, Deny, Ask
	dev := func(r *Request) { r.Roles = []string{"dev"} }
	as := func(p string) func(*Request) { return func(r *Request) { r.Principal = p; r.Roles = []string{"dev"} } }
	// The condition of exec-costly-deny is false for this argv, but finding
	// that out costs about 60³ steps.
	long := make([]string, 60, 63)
	for i := range long {
		long[i] = "a"
	}
	long = append(long, "x", "y", "z")
	tests := []struct {
		name string
		req  *Request
		want outcome
	}{
		{"action condition true", with(req("x", "t"), dev), outcome{Effect: A, Would: A, Action: "tools"}},
		{"action condition false", with(req("x", "t"), func(r *Request) { r.Roles = []string{"dev"}; r.Principal = "eve" }), outcome{Effect: D, Would: D}},
		{"action condition on tier", req("x", "t"), outcome{Effect: D, Would: D}},
		{"action condition on read-only tier", with(req("x", "t"), func(r *Request) { r.Tier = capability.TierReadOnly }), outcome{Effect: A, Would: A, Action: "tools"}},
		{"capability condition true", with(req("x", "t", fsRead("/home/a/app/.env")), dev),
			outcome{Effect: D, Would: D, Action: "tools", Caps: []string{"env-files"}}},
		{"capability condition true, second form", with(req("x", "t", fsWrite("/home/a/app/.env.local")), dev),
			outcome{Effect: D, Would: D, Action: "tools", Caps: []string{"env-files"}}},
		{"capability condition false", with(req("x", "t", fsRead("/home/a/app/env")), dev),
			outcome{Effect: A, Would: A, Action: "tools", Caps: []string{"home"}}},
		{"net condition", with(req("x", "t", netTo("https", "api.example.com", 8443, capability.Public)), dev),
			outcome{Effect: K, Would: K, Action: "tools", Caps: []string{"big-port"}}},
		{"net condition false", with(req("x", "t", netTo("https", "www.example.com", 8443, capability.Public)), dev),
			outcome{Effect: D, Would: D, Action: "tools", Caps: []string{""}}},
		{"allow with failing condition does not match", with(req("x", "t", execOf("ls")), as("alice")),
			outcome{Effect: D, Would: D, Action: "tools", Caps: []string{""}}},
		{"allow with condition that holds", with(req("x", "t", execOf("ls", "1", "2", "3", "4", "x")), as("alice")),
			outcome{Effect: A, Would: A, Action: "tools", Caps: []string{"exec-err-allow"}}},
		{"deny with failing condition matches", with(req("x", "t", execOf("ls")), as("mallory")),
			outcome{Effect: D, Would: D, Action: "tools", Caps: []string{"exec-err-deny"}}},
		{"deny with false condition", with(req("x", "t", execOf("ls", "1", "2", "3", "4", "5")), as("mallory")),
			outcome{Effect: A, Would: A, Action: "tools", Caps: []string{"exec-mallory"}}},
		{"ask with failing condition matches", with(req("x", "t", execOf("ls")), as("bob")),
			outcome{Effect: K, Would: K, Action: "tools", Caps: []string{"exec-err-ask"}}},
		{"cost limit fails closed", with(req("x", "t", execOf(append([]string{"ls"}, long...)...)), as("dave")),
			outcome{Effect: D, Would: D, Action: "tools", Caps: []string{"exec-costly-deny"}}},
		{"cheap enough", with(req("x", "t", execOf("x", "y", "z")), as("dave")),
			outcome{Effect: A, Would: A, Action: "tools", Caps: []string{"exec-dave"}}},
		{"id condition", with(req("x", "t", idOf("mail.message", "00ff")), dev),
			outcome{Effect: A, Would: A, Action: "tools", Caps: []string{"ids"}}},
		{"id condition false", with(req("x", "t", idOf("mail.message", "../x")), dev),
			outcome{Effect: D, Would: D, Action: "tools", Caps: []string{""}}},
	}
	s := fixture(t, "cel.yaml")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outcomeOf(s.Decide(tt.req))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if ref := referenceDecide(s, tt.req); !cmp.Equal(ref, got) {
				t.Errorf("reference decides %+v", ref)
			}
		})
	}
	// Explain says why a failing deny matched.
	x := s.Explain(with(req("x", "t", execOf("ls")), as("mallory")))
	if len(x.Caps) != 1 || len(x.Caps[0]) == 0 || x.Caps[0][0].Rule.ID != "exec-err-deny" || x.Caps[0][0].CondErr == nil {
		t.Errorf("Explain: %+v, want exec-err-deny with a condition error", x.Caps)
	}
}

func TestReason(t *testing.T) {
	s := fixture(t, "matchers.yaml")
	tests := []struct {
		name string
		req  *Request
		want string
	}{
		{"deny by capability rule", req("fs", "read_file", fsRead("/home/a/.ssh/id_rsa")),
			`rule "no-ssh" (matchers.yaml:58) denies fs.read /home/a/.ssh/id_rsa: SSH keys are off limits`},
		{"default deny of the action", req("fs", "x"), `no rule allows tool "x" on server "fs"`},
		{"default deny of an unbound tool", with(req("fs", "x"), func(r *Request) { r.Bound = false }), `no rule allows unbound tool "x" on server "fs"`},
		{"deny of the action by rule", req("fs", "delete_x"), `rule "no-delete" (matchers.yaml:25) denies tool "delete_x" on server "fs": deleting is not allowed`},
		{"default deny of a capability", req("web", "fetch", netTo("https", "x", 443, capability.InternalName)), `no rule allows net.connect https://x:443`},
		{"IPv6 host", req("web", "fetch", netTo("https", "2001:db8::1", 443, capability.Documentation)), `no rule allows net.connect https://[2001:db8::1]:443`},
		{"ask", req("fs", "write_file"), `rule "fs-write-tool" (matchers.yaml:10) asks before tool "write_file" on server "fs"`},
		{"allow", req("fs", "read_file", fsRead("/home/a/x"), fsRead("/home/a/y")),
			`rule "fs-read-tools" (matchers.yaml:6) allows tool "read_file" on server "fs", and its 2 capabilities are allowed`},
		{"invalid", req("fs", "read_file", fsRead("x")), `fs.read x is not a valid canonical capability`},
		{"odd path is quoted", req("fs", "read_file", fsRead("/tmp/a b\n")), `no rule allows fs.read "/tmp/a b\n"`},
		{"shell", req("sh", "run", shellOf("ls|wc")), `no rule allows exec shell command "ls|wc"`},
		{"id", req("mail", "fetch", idOf("mail.thread", "t 1")), `no rule allows id mail.thread "t 1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.Decide(tt.req).Reason(); got != tt.want {
				t.Errorf("Reason() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRulesAndExplain(t *testing.T) {
	s := fixture(t, "matchers.yaml")
	r := req("fs", "read_file", fsRead("/home/a/.ssh/id_rsa"), fsRead("/home/a/x"), fsRead("/home/a/y"))
	d := s.Decide(r)
	if diff := cmp.Diff([]string{"fs-read-tools", "no-ssh", "home-read"}, d.Rules()); diff != "" {
		t.Errorf("Rules() (-want +got)\n%s", diff)
	}
	x := s.Explain(r)
	var ids []string
	for _, m := range x.Caps[0] {
		ids = append(ids, m.Rule.ID)
		if m.Decides != (m.Rule.ID == "no-ssh") {
			t.Errorf("rule %s: Decides = %v", m.Rule.ID, m.Decides)
		}
	}
	if diff := cmp.Diff([]string{"home-read", "no-ssh"}, ids); diff != "" {
		t.Errorf("Explain matches (-want +got)\n%s", diff)
	}
	out := x.String()
	for _, want := range []string{"deny: rule \"no-ssh\"", "* deny \"no-ssh\" matchers.yaml:58", "  allow \"home-read\" matchers.yaml:50"} {
		if !strings.Contains(out, want) {
			t.Errorf("Explain output lacks %q:\n%s", want, out)
		}
	}
}

func TestZeroDecision(t *testing.T) {
	var d Decision
	if d.Effect() != Deny || d.Would() != Deny {
		t.Errorf("zero Decision: %s/%s, want deny", d.Effect(), d.Would())
	}
	if Effect(0) != Deny {
		t.Error("the zero Effect must be Deny")
	}
	if d.Reason() == "" || d.ShadowReason() != "" || d.NumCaps() != 0 || len(d.Rules()) != 0 {
		t.Errorf("zero Decision: reason %q, shadow reason %q", d.Reason(), d.ShadowReason())
	}
}

func TestHash(t *testing.T) {
	a, err := Parse("p.yaml", []byte("version: 1\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse("q.yaml", []byte("version: 1\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("p.yaml", []byte("version: 1 \n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash() != b.Hash() {
		t.Error("hash depends on the file name")
	}
	if a.Hash() == c.Hash() {
		t.Error("hash ignores a byte of the file")
	}
	if want := sha256.Sum256([]byte("aegis policy v1\x00version: 1\n")); a.Hash() != want {
		t.Errorf("Hash() = %x, want SHA-256 of the domain and the file, %x", a.Hash(), want)
	}
	// An empty policy denies everything.
	if got := a.Decide(req("fs", "read_file")).Effect(); got != Deny {
		t.Errorf("empty policy: %s", got)
	}
}

// TestAllowReasonReused holds the allow reasons kept for reuse (saidCache)
// to the ones built afresh, through calls that share a rule and differ in
// each thing the reason quotes, and through a rule changed by its holder.
func TestAllowReasonReused(t *testing.T) {
	s := fixture(t, "matchers.yaml")
	fresh := func(q *Request) string {
		t.Helper()
		d := s.Decide(q)
		if d.Effect() != Allow {
			t.Fatalf("%s/%s: %s, want allow", q.Server, q.Tool, d.Effect())
		}
		saidCache = [len(saidCache)]atomic.Pointer[said]{}
		return d.Reason()
	}
	// Neighbours differ in one thing each: the number of capabilities,
	// the tool, the server.
	reqs := []*Request{
		req("fs", "read_file", fsRead("/home/a/x")),
		req("fs", "read_file", fsRead("/home/a/x"), fsRead("/home/a/y")),
		req("fs", "read_file"),
		req("fs", "read_text_file"),
		req("fs", "read_file", fsRead("/home/a/x")),
		req("web", "fetch"),
		req("mail", "fetch"),
		req("web", "fetch"),
	}
	wants := make([]string, len(reqs))
	for i, q := range reqs {
		wants[i] = fresh(q)
	}
	// Each request after the first finds the reason its predecessor kept.
	for round := range 2 {
		for i, q := range reqs {
			for range 2 { // builds and keeps, or reuses; then reuses
				if got := s.Decide(q).Reason(); got != wants[i] {
					t.Errorf("round %d, request %d: Reason() = %q, want %q", round, i, got, wants[i])
				}
			}
		}
	}
	// A holder changes the rule it was given: the next reason says so.
	q := reqs[0]
	d := s.Decide(q)
	_ = d.Reason()
	r := d.Action().Rule
	old := *r
	defer func() { *r = old }()
	for _, change := range []func(){
		func() { r.ID = "renamed" },
		func() { r.File = "other.yaml" },
		func() { r.Line++ },
		func() { r.Reason = "changed" },
		func() { r.Mode = Shadow },
	} {
		change()
		if got := s.Decide(q).Reason(); got != ruleSays(r, Allow, `tool "read_file" on server "fs"`)+", and its capability is allowed" {
			t.Errorf("after a change to the rule: Reason() = %q", got)
		}
	}
}

// TestAllowReasonWithoutRule: a decision Reason explains as an allow with
// no action rule (no rule reached it) says so, and keeps nothing.
func TestAllowReasonWithoutRule(t *testing.T) {
	d := Decision{effect: Allow, req: &Request{Server: "fs", Tool: "read_file", Bound: true}}
	if got, want := d.Reason(), `no rule allows tool "read_file" on server "fs"`; got != want {
		t.Errorf("Reason() = %q, want %q", got, want)
	}
}
