package policycmp

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// agreeN is how many generated calls TestAgreement decides per policy;
// the sliced Cedar engine, which differs from the whole set only in which
// policies it is given, decides every fourth.
const agreeN = 1500

type engines struct {
	p      *Policy
	aegis  *Aegis
	cedar  *Cedar
	sliced *Cedar
	opa    *OPA
}

func build(t testing.TB, p *Policy) *engines {
	t.Helper()
	e := &engines{p: p}
	var err error
	if e.aegis, err = NewAegis(p); err != nil {
		t.Fatal(err)
	}
	if e.cedar, err = NewCedar(p, nil); err != nil {
		t.Fatal(err)
	}
	if e.sliced, err = NewCedar(p, &CedarOptions{Sliced: true}); err != nil {
		t.Fatal(err)
	}
	if e.opa, err = NewOPA(p); err != nil {
		t.Fatal(err)
	}
	return e
}

// check decides req with every engine and reports where any differs from
// aegis, in the deciding rules as well as the decision. It returns aegis's
// outcome.
func (e *engines) check(t *testing.T, name string, req *policy.Request, sliced bool) Outcome {
	t.Helper()
	want := e.aegis.Outcome(req)
	others := []struct {
		name string
		f    func(*policy.Request) (Outcome, error)
	}{{"cedar", e.cedar.Outcome}, {"opa", e.opa.Outcome}}
	if sliced {
		others = append(others, others[0])
		others[2].name, others[2].f = "cedar sliced", e.sliced.Outcome
	}
	for _, other := range others {
		got, err := other.f(req)
		if err != nil {
			t.Errorf("%s: %s: %v", name, other.name, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: %s disagrees with aegis on %s (-aegis +%s):\n%s", name, other.name, describe(req), other.name, diff)
		}
	}
	// The benchmarks time Effect: it must say what Outcome says.
	for _, f := range []func(*policy.Request) policy.Effect{e.aegis.Effect, e.cedar.Effect, e.opa.Effect} {
		if got := f(req); got != want.Effect {
			t.Errorf("%s: Effect = %s, Outcome says %s", name, got, want.Effect)
		}
	}
	return want
}

func describe(req *policy.Request) string {
	s := fmt.Sprintf("%s/%s principal=%s roles=%v origin=%s taint=%t bound=%t tier=%s caps=[",
		req.Server, req.Tool, req.Principal, req.Roles, req.Origin, req.Taint, req.Bound, req.Tier)
	for i := range req.Caps {
		c := &req.Caps[i]
		s += fmt.Sprintf(" {%s %s%s:%d %s %s shell=%t %s %s}", c.Kind, c.Scheme, c.Host, c.Port, c.Path, c.Program, c.Shell, c.IDKind, c.Classes)
	}
	return s + " ]"
}

// tally counts what a set of outcomes covered, so that agreement on a
// mix that never exercises a case cannot pass for agreement on it.
type tally struct {
	effects   map[policy.Effect]int
	byRule    int // targets denied by a rule
	byDefault int // targets denied because no rule matched
	denyWins  int // targets a deny rule decided while a grant rule also matched
	caps      int
}

// TestAgreement decides thousands of generated calls with aegis, cedar-go
// (whole set and sliced) and OPA, for both policies, and requires the same
// decision and the same deciding rule for every target.
func TestAgreement(t *testing.T) {
	for _, p := range []*Policy{Bench10(), Bench1100()} {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			e := build(t, p)
			// The policy without its deny rules shows where a deny rule
			// overrode a grant.
			grants := &Policy{Name: p.Name + "-grants"}
			for _, r := range p.Rules {
				if r.grants() {
					grants.Rules = append(grants.Rules, r)
				}
			}
			g, err := NewAegis(grants)
			if err != nil {
				t.Fatal(err)
			}
			n := tally{effects: map[policy.Effect]int{}}
			for i, req := range Requests(1, agreeN) {
				o := e.check(t, fmt.Sprintf("call %d", i), req, i%4 == 0)
				n.effects[o.Effect]++
				og := g.Outcome(req)
				for j, id := range append([]string{o.Action}, o.Caps...) {
					n.caps++
					switch {
					case id == "":
						n.byDefault++
					case rank(ruleByID(p, id).Effect) == 2:
						n.byRule++
						if gid := append([]string{og.Action}, og.Caps...)[j]; gid != "" {
							n.denyWins++
						}
					}
				}
				if t.Failed() {
					t.FailNow() // one disagreement is enough to read
				}
			}
			t.Logf("%d calls: %d allowed, %d asked, %d denied; %d targets: %d denied by a rule (%d over a grant), %d by default",
				agreeN, n.effects[policy.Allow], n.effects[policy.Ask], n.effects[policy.Deny], n.caps, n.byRule, n.denyWins, n.byDefault)
			need := map[string]int{
				"allowed calls": n.effects[policy.Allow], "denied calls": n.effects[policy.Deny],
				"targets denied by a rule": n.byRule, "default denials": n.byDefault,
			}
			if p.Name == "1100" {
				// The 10-rule policy has no ask rule, and its deny and
				// allow rules never overlap.
				need["asked calls"], need["deny rules winning over grants"] = n.effects[policy.Ask], n.denyWins
			}
			for what, c := range need {
				if c < agreeN/50 {
					t.Errorf("the mix has only %d %s: it does not test agreement on them", c, what)
				}
			}
		})
	}
}

func ruleByID(p *Policy, id string) *Rule {
	for i := range p.Rules {
		if p.Rules[i].ID == id {
			return &p.Rules[i]
		}
	}
	panic("no rule " + id)
}

// TestAgreementEdges decides the corners of aegis's semantics that the
// Cedar and Rego mappings spell out by hand, each with the decision aegis
// must reach, against the 1,100-rule policy.
func TestAgreementEdges(t *testing.T) {
	e := build(t, Bench1100())
	base := func() *policy.Request {
		return &policy.Request{Server: "fetch", Tool: "fetch", Principal: "alice", Roles: []string{"team-5", "dev"},
			Origin: capability.Interactive, Bound: true, Tier: capability.TierDataRead}
	}
	url := func(raw string) capability.Capability {
		c, err := capability.FromURL(raw)
		if err != nil {
			t.Fatalf("FromURL(%q): %v", raw, err)
		}
		return c
	}
	cmd := func(line string) capability.Capability {
		c, err := capability.ParseCommand(line)
		if err != nil {
			t.Fatalf("ParseCommand(%q): %v", line, err)
		}
		return c
	}
	fs := func(k capability.Kind, p string) capability.Capability {
		return capability.Capability{Kind: k, Path: p}
	}
	tests := []struct {
		name string
		edit func(r *policy.Request)
		want policy.Effect
	}{
		{"plain allowed fetch", func(r *policy.Request) { r.Caps = append(r.Caps, url("https://api-3.example.com/x")) }, policy.Allow},
		{"no capabilities", func(r *policy.Request) {}, policy.Allow},
		{"unbound tool, no unbound rule", func(r *policy.Request) { r.Bound = false }, policy.Deny},
		{"unbound legacy tool", func(r *policy.Request) { r.Server, r.Tool, r.Bound = "legacy", "x", false }, policy.Allow},
		{"bound legacy tool", func(r *policy.Request) { r.Server, r.Tool = "legacy", "x" }, policy.Deny},
		{"unbound tool's capability", func(r *policy.Request) {
			r.Server, r.Tool, r.Bound = "legacy", "x", false
			r.Caps = append(r.Caps, fs(capability.FSRead, "/srv/projects/team-5/a"))
		}, policy.Deny},
		{"deny rule reaches unbound tool", func(r *policy.Request) { r.Server, r.Tool, r.Bound = "legacy", "delete_x", false }, policy.Deny},
		{"own project, directory itself", func(r *policy.Request) { r.Caps = append(r.Caps, fs(capability.FSWrite, "/srv/projects/team-5")) }, policy.Allow},
		{"sibling with common prefix", func(r *policy.Request) { r.Caps = append(r.Caps, fs(capability.FSRead, "/srv/projects/team-50/a")) }, policy.Deny},
		{"ssh via home", func(r *policy.Request) { r.Caps = append(r.Caps, fs(capability.FSRead, Home+"/.ssh")) }, policy.Deny},
		{"not ssh: .sshx", func(r *policy.Request) { r.Caps = append(r.Caps, fs(capability.FSRead, Home+"/.sshx/a")) }, policy.Deny},
		{"deny wins in own project", func(r *policy.Request) {
			r.Roles = []string{"team-1"}
			r.Caps = append(r.Caps, fs(capability.FSRead, "/srv/projects/team-1/.env"))
		}, policy.Deny},
		{"write denied, read allowed under .git", func(r *policy.Request) {
			r.Roles = []string{"team-5"}
			r.Caps = append(r.Caps, fs(capability.FSRead, "/srv/projects/shared/.git/config"))
		}, policy.Deny}, // no shared team rule: default deny
		{"relative path is invalid", func(r *policy.Request) { r.Caps = append(r.Caps, fs(capability.FSRead, "srv/x")) }, policy.Deny},
		{"unclean path is invalid", func(r *policy.Request) {
			r.Caps = append(r.Caps, fs(capability.FSRead, "/srv/projects/team-5/../team-6"))
		}, policy.Deny},
		{"https without port in url", func(r *policy.Request) { r.Caps = append(r.Caps, url("https://api.github.com/")) }, policy.Allow},
		{"wrong port", func(r *policy.Request) { r.Caps = append(r.Caps, url("https://api.github.com:8443/")) }, policy.Deny},
		{"bare host: no port, no scheme", func(r *policy.Request) {
			c, _ := capability.FromHost("api.github.com")
			r.Caps = append(r.Caps, c)
		}, policy.Deny},
		{"bare host hits deny on unknown port", func(r *policy.Request) {
			c := capability.Capability{Kind: capability.NetConnect, Host: "docs.python.org", Classes: capability.Public}
			r.Caps = append(r.Caps, c)
		}, policy.Deny}, // no-smtp holds for an unknown port
		{"suffix is strict", func(r *policy.Request) { r.Caps = append(r.Caps, url("https://githubusercontent.com/")) }, policy.Deny},
		{"suffix subdomain", func(r *policy.Request) { r.Caps = append(r.Caps, url("https://raw.githubusercontent.com/")) }, policy.Allow},
		{"metadata by name", func(r *policy.Request) { r.Caps = append(r.Caps, url("http://metadata.google.internal/")) }, policy.Deny},
		{"metadata through NAT64", func(r *policy.Request) { r.Caps = append(r.Caps, url("http://[64:ff9b::a9fe:a9fe]/")) }, policy.Deny},
		{"private through 6to4", func(r *policy.Request) {
			c := capability.Capability{Kind: capability.NetConnect, Scheme: "https", Host: "2002:a00:1::", Port: 443,
				Addr: netip.MustParseAddr("2002:a00:1::"), Classes: capability.Public}
			r.Caps = append(r.Caps, c) // classes withheld: only the CIDR's embedded match denies
			r.Roles = append(r.Roles, "research")
		}, policy.Deny},
		{"ask for research https", func(r *policy.Request) {
			r.Roles = []string{"research"}
			r.Caps = append(r.Caps, url("https://example.org/"))
		}, policy.Ask},
		{"unknown origin, deny rule on origin", func(r *policy.Request) {
			r.Origin = capability.OriginUnknown
			r.Caps = append(r.Caps, url("http://api-3.example.com/"))
		}, policy.Deny},
		{"git allowed for dev", func(r *policy.Request) { r.Caps = append(r.Caps, cmd("git status")) }, policy.Allow},
		{"git by other path", func(r *policy.Request) { r.Caps = append(r.Caps, cmd("/tmp/x/git status")) }, policy.Deny},
		{"go tool glob", func(r *policy.Request) { r.Caps = append(r.Caps, cmd("/usr/local/go/bin/gofmt -l")) }, policy.Allow},
		{"glob does not cross /", func(r *policy.Request) { r.Caps = append(r.Caps, cmd("/usr/local/go/bin/x/y")) }, policy.Deny},
		{"curl by path denied", func(r *policy.Request) {
			r.Roles = []string{"ops"}
			r.Caps = append(r.Caps, cmd("/usr/bin/curl x"))
		}, policy.Deny},
		{"ops shell", func(r *policy.Request) {
			r.Roles = []string{"ops"}
			r.Caps = append(r.Caps, cmd("ls | wc -l"))
		}, policy.Allow},
		{"ops shell unattended", func(r *policy.Request) {
			r.Roles, r.Origin = []string{"ops"}, capability.Unattended
			r.Caps = append(r.Caps, cmd("ls | wc -l"))
		}, policy.Deny},
		{"dev shell", func(r *policy.Request) { r.Caps = append(r.Caps, cmd("ls | wc -l")) }, policy.Deny},
		{"unknown tier is mutating", func(r *policy.Request) { r.Taint, r.Tier = true, capability.TierUnknown }, policy.Deny},
		{"ids", func(r *policy.Request) {
			r.Caps = append(r.Caps, capability.Capability{Kind: capability.ID, IDKind: "mail.thread", ID: "1"})
		}, policy.Allow},
		{"unknown id kind", func(r *policy.Request) {
			r.Caps = append(r.Caps, capability.Capability{Kind: capability.ID, IDKind: "drive.file", ID: "1"})
		}, policy.Deny},
		{"ask tool", func(r *policy.Request) { r.Server, r.Tool = "mail", "send_message" }, policy.Ask},
		{"read-only tier anywhere", func(r *policy.Request) { r.Server, r.Tool, r.Tier = "misc", "now", capability.TierReadOnly }, policy.Allow},
		{"five capabilities", func(r *policy.Request) {
			for range 5 {
				r.Caps = append(r.Caps, url("https://api-3.example.com/x"))
			}
		}, policy.Allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.edit(r)
			if got := e.check(t, tc.name, r, true); got.Effect != tc.want {
				t.Errorf("aegis decides %s (%+v), want %s", got.Effect, got, tc.want)
			}
		})
	}
}

// TestSamePolicyAsInternal holds the generated aegis policies to the ones
// internal/policy benchmarks (testdata/bench_*.yaml), by their decisions
// on the generated calls: the figures here and there are for the same
// policy. If that file changes on purpose, change rules.go to match.
func TestSamePolicyAsInternal(t *testing.T) {
	for _, p := range []*Policy{Bench10(), Bench1100()} {
		t.Run(p.Name, func(t *testing.T) {
			file := filepath.Join("..", "..", "internal", "policy", "testdata", "bench_"+p.Name+".yaml")
			data, err := os.ReadFile(file)
			if err != nil {
				t.Skipf("no %s: %v", file, err)
			}
			theirs, err := policy.Parse(file, data, &policy.Options{Home: Home})
			if err != nil {
				t.Fatal(err)
			}
			ours, err := NewAegis(p)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := len(theirs.Rules()), len(p.Rules); a != b {
				t.Errorf("%s has %d rules, rules.go %d", file, a, b)
			}
			for i, req := range Requests(2, agreeN) {
				want := (&Aegis{set: theirs}).Outcome(req)
				if diff := cmp.Diff(want, ours.Outcome(req)); diff != "" {
					t.Fatalf("call %d: %s (-%s +generated):\n%s", i, describe(req), file, diff)
				}
			}
		})
	}
}

// TestGeneratorsRefuse checks that the generators refuse rules they cannot
// translate exactly, instead of approximating them.
func TestGeneratorsRefuse(t *testing.T) {
	tests := []struct {
		name string
		rule Rule
	}{
		{"question mark glob", Rule{ID: "a", Effect: "allow", Tool: l("read_?")}},
		{"bracket glob", Rule{ID: "a", Effect: "allow", Tool: l("read_[ab]")}},
		{"inner program star", Rule{ID: "a", Effect: "allow", Program: l("/usr/*/git")}},
		{"bare program star", Rule{ID: "a", Effect: "allow", Program: l("git*")}},
		{"shell with programs", Rule{ID: "a", Effect: "allow", Shell: true, Program: l("git")}},
		{"relative path_under", Rule{ID: "a", Effect: "deny", PathUnder: l("srv")}},
		{"bad effect", Rule{ID: "a", Effect: "permit"}},
		{"unbound capability rule", Rule{ID: "a", Effect: "allow", Unbound: true, Host: l("x.com")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Policy{Name: "bad", Rules: []Rule{tc.rule}}
			for gen, f := range map[string]func(*Policy) ([]byte, error){"aegis": AegisYAML, "cedar": CedarText, "rego": RegoText} {
				if out, err := f(p); err == nil {
					t.Errorf("%s generated %q, want an error", gen, out)
				}
			}
		})
	}
	dup := &Policy{Name: "dup", Rules: []Rule{{ID: "a", Effect: "allow"}, {ID: "a", Effect: "deny"}}}
	if _, err := CedarText(dup); err == nil {
		t.Error("duplicate ids accepted")
	}
}
