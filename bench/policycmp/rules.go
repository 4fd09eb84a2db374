package policycmp

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Home is what "~" in a path_under means in every generated policy.
const Home = "/home/a"

// Rule is one rule of a benchmark policy, in the subset of aegis's
// matchers that all three engines can express: no `when` conditions, no
// `?` in globs, program globs only with a trailing `*`, and no `shell:
// true` together with programs. The generators refuse anything else
// rather than translate it approximately.
type Rule struct {
	ID     string
	Effect string // allow, deny or ask
	Reason string

	// Call matchers.
	Server, Tool    []string // globs: `*` is any run of characters
	Principal, Role []string
	Origin          string   // "", interactive or unattended
	Taint           string   // "", "true" or "false"
	Tier            []string // read-only, data-read, mutating
	Unbound         bool

	// Capability matchers.
	Capability []string // explicit kinds; else implied by the matchers below
	PathUnder  []string // absolute, or starting with "~/"
	Host       []string // exact, "*.suffix", CIDR or "class:NAME"
	Port       []string // "443" or "8000-8100"
	Scheme     []string
	Program    []string // literal, or a glob ending in "/*"
	Shell      bool
	IDKind     []string
}

// Policy is a benchmark policy: rules in file order.
type Policy struct {
	Name  string // "10" or "1100"
	Rules []Rule
}

// Kinds returns the capability kinds rule r decides, as aegis infers them
// (policy.compiler.kinds), or nil for an action rule.
func (r *Rule) Kinds() []string {
	switch {
	case r.Capability != nil:
		return r.Capability
	case r.PathUnder != nil:
		return []string{"fs.read", "fs.write"}
	case r.Host != nil || r.Port != nil || r.Scheme != nil:
		return []string{"net.connect"}
	case r.Program != nil || r.Shell:
		return []string{"exec"}
	case r.IDKind != nil:
		return []string{"id"}
	}
	return nil
}

// grants reports whether the rule can allow or ask: matchers on missing
// information hold only for rules that cannot grant (policy doc,
// "Missing information never widens a permission").
func (r *Rule) grants() bool { return r.Effect != "deny" }

// rank orders effects as aegis does: deny beats ask beats allow.
func rank(effect string) int {
	switch effect {
	case "allow":
		return 0
	case "ask":
		return 1
	}
	return 2
}

// validate refuses what the generators cannot translate exactly.
func (p *Policy) validate() error {
	ids := map[string]bool{}
	for i := range p.Rules {
		r := &p.Rules[i]
		if ids[r.ID] {
			return fmt.Errorf("rule %s: duplicate id", r.ID)
		}
		ids[r.ID] = true
		if rank(r.Effect) == 2 && r.Effect != "deny" {
			return fmt.Errorf("rule %s: bad effect %q", r.ID, r.Effect)
		}
		for _, g := range slices.Concat(r.Server, r.Tool, r.Program) {
			if strings.ContainsAny(g, "?\\[]\"") {
				return fmt.Errorf("rule %s: glob %q uses more than `*`", r.ID, g)
			}
		}
		for _, g := range r.Program {
			if i := strings.IndexByte(g, '*'); i >= 0 && (i != len(g)-1 || !strings.HasSuffix(g, "/*")) {
				return fmt.Errorf("rule %s: program glob %q is not of the form dir/*", r.ID, g)
			}
		}
		if r.Shell && r.Program != nil {
			return fmt.Errorf("rule %s: shell: true with programs is not supported", r.ID)
		}
		if r.Unbound && r.Kinds() != nil {
			return fmt.Errorf("rule %s: unbound with capability matchers", r.ID)
		}
		_, suffixes, _, _ := r.hostParts()
		for _, s := range suffixes {
			// Cedar's like and Rego's endswith do not know that an
			// address never matches a suffix: require a name.
			if strings.Trim(s[strings.LastIndexByte(s, '.')+1:], "0123456789") == "" {
				return fmt.Errorf("rule %s: host suffix %q could match an address", r.ID, s)
			}
		}
		for _, p := range r.PathUnder {
			if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") {
				return fmt.Errorf("rule %s: path_under %q is not absolute", r.ID, p)
			}
			if strings.ContainsAny(p, "*\\\"") || path.Clean(p) != p {
				return fmt.Errorf("rule %s: path_under %q is not clean or holds a pattern character", r.ID, p)
			}
		}
	}
	return nil
}

// dirs returns r's path_under with "~" expanded.
func (r *Rule) dirs() []string {
	out := make([]string, len(r.PathUnder))
	for i, p := range r.PathUnder {
		if strings.HasPrefix(p, "~/") {
			p = Home + p[1:]
		}
		out[i] = p
	}
	return out
}

// hostParts splits r's host patterns by form.
func (r *Rule) hostParts() (exact, suffixes, cidrs, classes []string) {
	for _, h := range r.Host {
		switch {
		case strings.HasPrefix(h, "class:"):
			classes = append(classes, h[len("class:"):])
		case strings.Contains(h, "/"):
			cidrs = append(cidrs, h)
		case strings.HasPrefix(h, "*."):
			suffixes = append(suffixes, h[1:]) // ".example.com"
		default:
			exact = append(exact, h)
		}
	}
	return
}

// portRange is an inclusive range of ports.
type portRange struct{ lo, hi int }

func (r *Rule) ports() []portRange {
	var out []portRange
	for _, p := range r.Port {
		var pr portRange
		if lo, hi, ok := strings.Cut(p, "-"); ok {
			fmt.Sscan(lo, &pr.lo)
			fmt.Sscan(hi, &pr.hi)
		} else {
			fmt.Sscan(p, &pr.lo)
			pr.hi = pr.lo
		}
		out = append(out, pr)
	}
	return out
}

// Teams is the number of per-team project rules of [Bench1100].
const Teams = 1000

// Bench10 is the 10-rule policy of internal/policy's BenchmarkDecide10
// (testdata/bench_10.yaml).
func Bench10() *Policy {
	return &Policy{Name: "10", Rules: []Rule{
		{ID: "fs-read", Effect: "allow", Server: l("fs"), Tool: l("read_*", "list_directory")},
		{ID: "fs-write", Effect: "allow", Server: l("fs"), Tool: l("write_file"), Role: l("dev")},
		{ID: "fetch", Effect: "allow", Server: l("fetch"), Tool: l("fetch")},
		{ID: "no-delete", Effect: "deny", Tool: l("delete_*")},
		{ID: "home", Effect: "allow", Capability: l("fs.read", "fs.write"), PathUnder: l("/srv/projects/team-537")},
		{ID: "no-ssh", Effect: "deny", PathUnder: l("~/.ssh")},
		{ID: "github", Effect: "allow", Host: l("api.github.com", "*.githubusercontent.com"), Port: l("443"), Scheme: l("https")},
		{ID: "no-metadata", Effect: "deny", Host: l("class:metadata", "169.254.0.0/16")},
		{ID: "git", Effect: "allow", Program: l("git", "/usr/bin/git")},
		{ID: "no-curl", Effect: "deny", Program: l("curl")},
	}}
}

// Bench1100 is the 1,100-rule policy of internal/policy's
// BenchmarkDecide1100 (testdata/bench_1100.yaml): tool rules, the denials
// every deployment has, hosts, exec and ids, and one project rule per
// team.
func Bench1100() *Policy {
	rs := []Rule{
		// Tool rules (20).
		{ID: "fs-read", Effect: "allow", Server: l("fs"), Tool: l("read_*", "list_directory", "search_files", "get_file_info")},
		{ID: "fs-write", Effect: "allow", Server: l("fs"), Tool: l("write_file", "edit_file", "create_directory", "move_file"), Role: l("dev")},
		{ID: "fs-write-ask", Effect: "ask", Server: l("fs"), Tool: l("write_file", "edit_file"), Origin: "unattended"},
		{ID: "fetch", Effect: "allow", Server: l("fetch"), Tool: l("fetch")},
		{ID: "git-tools", Effect: "allow", Server: l("git"), Tool: l("git_*")},
		{ID: "git-push-ask", Effect: "ask", Server: l("git"), Tool: l("git_push")},
		{ID: "shell-run", Effect: "allow", Server: l("shell"), Tool: l("run_command"), Role: l("dev", "ops")},
		{ID: "mail-read", Effect: "allow", Server: l("mail"), Tool: l("list_messages", "get_message")},
		{ID: "mail-send-ask", Effect: "ask", Server: l("mail"), Tool: l("send_message")},
		{ID: "no-delete", Effect: "deny", Tool: l("delete_*", "drop_*"), Reason: "destructive"},
		{ID: "tainted-mutation", Effect: "deny", Taint: "true", Tier: l("mutating")},
		{ID: "readonly-any", Effect: "allow", Tier: l("read-only")},
		{ID: "db-query", Effect: "allow", Server: l("db"), Tool: l("query"), Role: l("analyst")},
		{ID: "db-admin", Effect: "allow", Server: l("db"), Tool: l("admin_*"), Principal: l("dba")},
		{ID: "calendar", Effect: "allow", Server: l("calendar"), Tool: l("list_*", "get_*")},
		{ID: "browser", Effect: "allow", Server: l("browser"), Tool: l("navigate", "screenshot", "click")},
		{ID: "browser-unattended", Effect: "deny", Server: l("browser"), Origin: "unattended"},
		{ID: "legacy-unbound", Effect: "allow", Server: l("legacy"), Unbound: true},
		{ID: "slack-post-ask", Effect: "ask", Server: l("slack"), Tool: l("post_message")},
		{ID: "slack-read", Effect: "allow", Server: l("slack"), Tool: l("list_*", "read_channel")},

		// Denials (20).
		{ID: "no-ssh", Effect: "deny", PathUnder: l("~/.ssh", "/etc/ssh"), Reason: "SSH keys are off limits"},
		{ID: "no-cloud-creds", Effect: "deny", PathUnder: l("~/.aws", "~/.config/gcloud", "~/.azure", "~/.kube")},
		{ID: "no-gnupg", Effect: "deny", PathUnder: l("~/.gnupg")},
		{ID: "no-shadow", Effect: "deny", PathUnder: l("/etc/shadow", "/etc/sudoers", "/etc/sudoers.d")},
		{ID: "no-env-root", Effect: "deny", PathUnder: l("/srv/projects/.env", "/srv/.env", "~/.env")},
		{ID: "no-env-files", Effect: "deny", PathUnder: l("/srv/projects/team-1/.env", "/srv/projects/team-2/.env", "/srv/projects/team-3/.env")},
		{ID: "no-proc", Effect: "deny", PathUnder: l("/proc", "/sys", "/boot")},
		{ID: "no-git-internals-write", Effect: "deny", Capability: l("fs.write"), PathUnder: l("/srv/projects/shared/.git")},
		{ID: "no-metadata", Effect: "deny", Host: l("class:metadata"), Reason: "cloud metadata"},
		{ID: "no-link-local", Effect: "deny", Host: l("class:link-local", "169.254.0.0/16", "fe80::/10")},
		{ID: "no-loopback", Effect: "deny", Host: l("class:loopback", "127.0.0.0/8", "::1/128")},
		{ID: "no-private", Effect: "deny", Host: l("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7")},
		{ID: "no-internal-names", Effect: "deny", Host: l("class:internal-name")},
		{ID: "no-plain-http-unattended", Effect: "deny", Scheme: l("http"), Origin: "unattended"},
		{ID: "no-smtp", Effect: "deny", Port: l("25", "465", "587")},
		{ID: "no-curl", Effect: "deny", Program: l("curl", "wget", "nc", "ncat", "socat")},
		{ID: "no-rm", Effect: "deny", Program: l("rm", "shred", "dd", "mkfs")},
		{ID: "no-tainted-exec", Effect: "deny", Capability: l("exec"), Taint: "true"},
		{ID: "no-unattended-shell", Effect: "deny", Capability: l("exec"), Origin: "unattended"},
		{ID: "no-sudo", Effect: "deny", Program: l("sudo", "su", "doas", "/usr/bin/sudo")},
	}
	// Hosts (60).
	for i := range 40 {
		rs = append(rs, Rule{ID: fmt.Sprintf("api-%d", i), Effect: "allow", Host: l(fmt.Sprintf("api-%d.example.com", i)), Port: l("443"), Scheme: l("https")})
	}
	for i := range 15 {
		rs = append(rs, Rule{ID: fmt.Sprintf("svc-%d", i), Effect: "allow", Host: l(fmt.Sprintf("*.svc-%d.example.net", i)), Role: l(fmt.Sprintf("team-%d", i*7), "ops")})
	}
	rs = append(rs,
		Rule{ID: "github", Effect: "allow", Host: l("api.github.com", "github.com", "*.githubusercontent.com"), Port: l("443")},
		Rule{ID: "pypi", Effect: "allow", Host: l("pypi.org", "files.pythonhosted.org"), Scheme: l("https")},
		Rule{ID: "npm", Effect: "allow", Host: l("registry.npmjs.org"), Scheme: l("https")},
		Rule{ID: "docs", Effect: "allow", Host: l("*.readthedocs.io", "docs.python.org", "pkg.go.dev")},
		Rule{ID: "ask-unknown-https", Effect: "ask", Capability: l("net.connect"), Scheme: l("https"), Role: l("research")},

		// Exec and ids.
		Rule{ID: "dev-tools", Effect: "allow", Program: l("git", "go", "make", "/usr/bin/git", "/usr/local/go/bin/*"), Role: l("dev")},
		Rule{ID: "ops-shell", Effect: "allow", Shell: true, Role: l("ops"), Origin: "interactive"},
		Rule{ID: "mail-ids", Effect: "allow", IDKind: l("mail.message", "mail.thread")},
		Rule{ID: "calendar-ids", Effect: "allow", IDKind: l("calendar.event")},
	)
	// Projects (1000).
	for i := range Teams {
		team := fmt.Sprintf("team-%d", i)
		rs = append(rs, Rule{ID: team + "-projects", Effect: "allow", Role: l(team), Capability: l("fs.read", "fs.write"), PathUnder: l("/srv/projects/" + team)})
	}
	return &Policy{Name: "1100", Rules: rs}
}

func l(s ...string) []string { return s }
