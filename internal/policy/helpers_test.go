package policy

import (
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/google/go-cmp/cmp"
)

// testHome is the home directory fixtures are parsed with.
const testHome = "/home/a"

var (
	fixtureMu  sync.Mutex
	fixtureSet = map[string]*Set{}
)

// fixture parses testdata/name once per test binary.
func fixture(t testing.TB, name string) *Set {
	t.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if s, ok := fixtureSet[name]; ok {
		return s
	}
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(name, data, &Options{Home: testHome})
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	fixtureSet[name] = s
	return s
}

func fsRead(p string) capability.Capability {
	return capability.Capability{Kind: capability.FSRead, Path: p}
}

func fsWrite(p string) capability.Capability {
	return capability.Capability{Kind: capability.FSWrite, Path: p}
}

// netTo builds a net.connect capability. host is canonical; an IP literal
// sets Addr. classes are given explicitly: deriving them is package
// capability's job.
func netTo(scheme, host string, port uint16, classes capability.Class) capability.Capability {
	c := capability.Capability{Kind: capability.NetConnect, Scheme: scheme, Host: host, Port: port, Classes: classes}
	if a, err := netip.ParseAddr(host); err == nil {
		c.Addr = a
	}
	return c
}

func execOf(argv ...string) capability.Capability {
	return capability.Capability{Kind: capability.Exec, Program: argv[0], Argv: argv}
}

func shellOf(cmd string) capability.Capability {
	return capability.Capability{Kind: capability.Exec, Shell: true, Command: cmd}
}

func idOf(kind, id string) capability.Capability {
	return capability.Capability{Kind: capability.ID, IDKind: kind, ID: id}
}

func caps(cs ...capability.Capability) []capability.Capability { return cs }

// outcome is what a decision test compares: the effects and the IDs of
// the deciding rules ("" for default deny, "!" for an invalid capability).
type outcome struct {
	Effect, Would Effect
	Action        string
	Caps          []string
	Shadowed      []string
}

func outcomeOf(d Decision) outcome {
	o := outcome{Effect: d.Effect(), Would: d.Would(), Action: ruleID(d.Action().Rule)}
	for i := range d.NumCaps() {
		v := d.Cap(i)
		if v.Invalid {
			o.Caps = append(o.Caps, "!")
			continue
		}
		o.Caps = append(o.Caps, ruleID(v.Rule))
	}
	for _, r := range d.Shadowed() {
		o.Shadowed = append(o.Shadowed, r.ID)
	}
	return o
}

func ruleID(r *Rule) string {
	if r == nil {
		return ""
	}
	return r.ID
}

func mustRead(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// decideCase is a request and the outcome the policy must give it.
type decideCase struct {
	name string
	req  *Request
	want outcome
}

// checkDecide decides each case with s, and holds the slow path (Explain)
// and the reference to the same outcome.
func checkDecide(t *testing.T, s *Set, tests []decideCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outcomeOf(s.Decide(tt.req))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			// The slow path must agree.
			if diff := cmp.Diff(tt.want, outcomeOf(s.Explain(tt.req).Decision)); diff != "" {
				t.Errorf("Explain (-want +got)\n%s", diff)
			}
			if ref := referenceDecide(s, tt.req); !cmp.Equal(ref, got) {
				t.Errorf("reference decides %+v", ref)
			}
		})
	}
}
