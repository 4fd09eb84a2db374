package policy

import (
	"net/netip"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// A deny rule on an IPv4 network denies the network's addresses in every
// IPv6 spelling that package capability reads as embedding one, so that
// the policy and the egress check never disagree about what an address is.
func TestDenyNetworkCoversEveryEmbedding(t *testing.T) {
	s, err := Parse("p.yaml", []byte(`version: 1
rules:
  - {id: web, effect: allow, server: web, tool: fetch}
  - {id: http, effect: allow, capability: net.connect, scheme: http}
  - {id: no-ten, effect: deny, capability: net.connect, host: 10.0.0.0/8}
`), &Options{Home: testHome})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, addr string
	}{
		{"IPv4-mapped", "::ffff:10.1.2.3"},
		{"IPv4-translated", "::ffff:0:10.1.2.3"},
		{"IPv4-compatible", "::10.1.2.3"},
		{"NAT64 well-known", "64:ff9b::10.1.2.3"},
		{"NAT64 local-use", "64:ff9b:1::10.1.2.3"},
		{"6to4", "2002:a01:203::1"},
		{"Teredo", "2001:0:4136:e378:8000:63bf:f5fe:fdfc"},
		{"ISATAP", "2a00:1450::5efe:10.1.2.3"},
		{"ISATAP universal", "2a00:1450::200:5efe:10.1.2.3"},
		{"ISATAP link-local", "fe80::5efe:10.1.2.3"},
	}
	ten := netip.MustParseAddr("10.1.2.3")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := netip.MustParseAddr(tt.addr)
			if got, ok := capability.EmbeddedIPv4(a); !ok || got != ten {
				t.Fatalf("capability.EmbeddedIPv4(%s) = %v, %v; want 10.1.2.3 (the table is wrong)", a, got, ok)
			}
			c := netTo("http", a.String(), 80, capability.ClassOf(a))
			got := outcomeOf(s.Decide(req("web", "fetch", c)))
			if got.Effect != Deny || len(got.Caps) != 1 || got.Caps[0] != "no-ten" {
				t.Errorf("%s: got %+v, want denied by no-ten", a, got)
			}
		})
	}
	// An allow rule is not widened by an embedding: only denials follow it.
	allowTen, err := Parse("p.yaml", []byte(`version: 1
rules:
  - {id: web, effect: allow, server: web, tool: fetch}
  - {id: ten, effect: allow, capability: net.connect, host: 10.0.0.0/8}
`), &Options{Home: testHome})
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr("64:ff9b:1::10.1.2.3")
	if d := allowTen.Decide(req("web", "fetch", netTo("http", a.String(), 80, capability.ClassOf(a)))); d.Effect() != Deny {
		t.Errorf("%s under an allow of 10.0.0.0/8: %v, want deny", a, d.Effect())
	}
}

// Following an embedding costs the decision no allocation.
func TestDenyEmbeddingAllocs(t *testing.T) {
	s, err := Parse("p.yaml", []byte(`version: 1
rules:
  - {id: web, effect: allow, server: web, tool: fetch}
  - {id: no-ten, effect: deny, capability: net.connect, host: 10.0.0.0/8}
`), &Options{Home: testHome})
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr("2a00:1450::200:5efe:10.1.2.3")
	r := req("web", "fetch", netTo("http", a.String(), 80, capability.ClassOf(a)))
	if n := testing.AllocsPerRun(100, func() { s.Decide(r) }); n != 0 {
		t.Errorf("Decide allocates %v times, want 0", n)
	}
}
