package policycmp

import (
	"fmt"
	"math/rand/v2"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// Requests returns n calls drawn deterministically from seed: tools the
// policies name and some they do not, principals with team and job roles,
// and up to four capabilities each, derived by package capability from
// realistic arguments. The mix holds allowed, asked and denied calls,
// calls where a deny rule and an allow rule both match a target, and
// calls no rule allows.
func Requests(seed uint64, n int) []*policy.Request {
	g := gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	out := make([]*policy.Request, n)
	for i := range out {
		out[i] = g.request()
	}
	return out
}

type gen struct{ r *rand.Rand }

func (g *gen) pick(vs ...string) string { return vs[g.r.IntN(len(vs))] }

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

// team returns a team number: often team-537 (the 10-rule policy's) or
// teams 1–3 (which have .env denials), else any.
func (g *gen) team() int {
	switch g.r.IntN(4) {
	case 0:
		return 537
	case 1:
		return 1 + g.r.IntN(3)
	}
	return g.r.IntN(Teams + 20) // a few teams have no rule
}

var tools = [][2]string{
	{"fs", "read_file"}, {"fs", "read_text_file"}, {"fs", "read_multiple_files"}, {"fs", "list_directory"},
	{"fs", "search_files"}, {"fs", "get_file_info"}, {"fs", "write_file"}, {"fs", "edit_file"},
	{"fs", "move_file"}, {"fs", "create_directory"}, {"fs", "delete_file"}, {"fetch", "fetch"},
	{"git", "git_status"}, {"git", "git_push"}, {"shell", "run_command"}, {"mail", "get_message"},
	{"mail", "send_message"}, {"db", "query"}, {"db", "admin_vacuum"}, {"db", "drop_table"},
	{"calendar", "list_events"}, {"browser", "navigate"}, {"legacy", "do_thing"}, {"slack", "post_message"},
	{"slack", "read_channel"}, {"misc", "time_now"}, {"unknown", "frobnicate"},
}

func (g *gen) request() *policy.Request {
	t := tools[g.r.IntN(len(tools))]
	team := g.team()
	req := &policy.Request{
		Server: t[0], Tool: t[1],
		Principal: g.pick("alice", "bob", "dba", "carol"),
		Origin:    []capability.Origin{capability.Interactive, capability.Interactive, capability.Unattended, capability.OriginUnknown}[g.r.IntN(4)],
		Taint:     g.chance(0.15),
		Bound:     !g.chance(0.1),
		Tier:      capability.Tier(g.r.IntN(4)),
	}
	req.Roles = append(req.Roles, fmt.Sprintf("team-%d", team))
	for _, role := range []string{"dev", "ops", "analyst", "research"} {
		if g.chance(0.3) {
			req.Roles = append(req.Roles, role)
		}
	}
	if g.chance(0.1) {
		req.Roles = nil
	}
	for range g.r.IntN(5) {
		req.Caps = append(req.Caps, g.capability(team))
	}
	return req
}

func (g *gen) capability(team int) capability.Capability {
	switch g.r.IntN(10) {
	case 0, 1, 2, 3, 4:
		kind := capability.FSRead
		if g.chance(0.35) {
			kind = capability.FSWrite
		}
		return capability.Capability{Kind: kind, Path: g.path(team)}
	case 5, 6, 7:
		return g.net()
	case 8:
		c, err := capability.ParseCommand(g.pick(
			"git status", "git push origin main", "go test ./...", "make", "/usr/bin/git log",
			"/usr/local/go/bin/go vet", "/usr/local/go/bin/misc/x", "curl https://example.com",
			"/usr/bin/curl -O x", "rm -rf build", "sudo ls", "/usr/bin/sudo ls", "/tmp/x/git status",
			"ls -la", "python3 x.py", "ls | grep x", "echo $(id)", "cat a > b",
		))
		if err != nil {
			panic(err) // a fixed list: a programming error
		}
		return c
	}
	return capability.Capability{Kind: capability.ID, IDKind: g.pick("mail.message", "mail.thread", "calendar.event", "drive.file"), ID: "42"}
}

func (g *gen) path(team int) string {
	own := fmt.Sprintf("/srv/projects/team-%d", team)
	other := fmt.Sprintf("/srv/projects/team-%d", g.r.IntN(Teams))
	switch g.r.IntN(16) {
	case 0, 1, 2, 3, 4:
		return own + g.pick("/src/main.go", "/README.md", "/build/out.o", "/docs/a/b/c.txt", "")
	case 5, 6:
		return other + g.pick("/src/main.go", "")
	case 7:
		return own + "/.env" + g.pick("", "/secrets")
	case 8:
		return Home + g.pick("/.ssh/id_ed25519", "/.ssh", "/.sshx/config", "/.aws/credentials", "/.config/gcloud/x", "/.gnupg/k", "/.env", "/notes.txt")
	case 9:
		return g.pick("/etc/ssh/sshd_config", "/etc/shadow", "/etc/sudoers.d/x", "/etc/passwd", "/etc/shadowx")
	case 10:
		return "/srv/projects/shared/.git" + g.pick("/config", "", "x/y")
	case 11:
		return g.pick("/proc/self/environ", "/sys/kernel", "/boot", "/", "/srv", "/srv/projects", "/srv/.env", "/srv/projects/.env")
	case 12:
		return g.pick("/tmp/x", "/home/b/.ssh/id_rsa", "/srv/projects/team-5370/x", "/srv/projects/team-53/x")
	}
	return own + "/src/pkg/deep/file.go"
}

func (g *gen) net() capability.Capability {
	var raw string
	switch g.r.IntN(12) {
	case 0, 1, 2:
		raw = fmt.Sprintf("%s://api-%d.example.com%s/v1", g.pick("https", "https", "http"), g.r.IntN(45), g.pick("", "", ":8443", ":443"))
	case 3:
		raw = fmt.Sprintf("https://%s.svc-%d.example.net/", g.pick("a", "b.c"), g.r.IntN(17))
	case 4:
		raw = g.pick("https://api.github.com/repos", "https://github.com:8443/", "https://raw.githubusercontent.com/x", "http://githubusercontent.com/")
	case 5:
		raw = g.pick("https://pypi.org/simple", "http://pypi.org/", "https://registry.npmjs.org/x", "https://docs.python.org/3/", "http://a.readthedocs.io/", "https://pkg.go.dev/")
	case 6:
		raw = g.pick("http://169.254.169.254/latest", "http://metadata.google.internal/", "http://[fd00:ec2::254]/", "http://[64:ff9b::a9fe:a9fe]/")
	case 7:
		raw = g.pick("http://10.1.2.3/", "http://192.168.1.1:8080/", "http://[2002:a00:1::]/", "http://100.64.1.1/", "http://[fd12::1]/", "http://172.20.0.1/")
	case 8:
		raw = g.pick("http://127.0.0.1:8080/", "http://localhost/", "http://[::1]/", "http://0x7f.1/", "http://2130706433/", "http://[fe80::1]/")
	case 9:
		raw = g.pick("http://printer.local/", "http://intranet/", "https://build.corp/")
	case 10:
		raw = g.pick("smtp://mail.example.com:25/", "https://mail.example.com:587/", "https://8.8.8.8/", "https://example.org/")
	default:
		c, err := capability.FromHost(g.pick("api-3.example.com", "api.github.com", "mail.example.com", "10.0.0.1", "x.svc-2.example.net"))
		if err != nil {
			panic(err)
		}
		return c
	}
	c, err := capability.FromURL(raw)
	if err != nil {
		panic(fmt.Sprintf("FromURL(%q): %v", raw, err))
	}
	return c
}
