package record

import (
	"net/netip"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestCapsRoundTrip: what CapsOf records, AppendCapabilities gives back,
// with the address and classes of a host recomputed as derivation made
// them.
func TestCapsRoundTrip(t *testing.T) {
	netCap := func(raw string) capability.Capability {
		host, addr, classes, err := capability.CanonHostClasses(raw)
		if err != nil {
			t.Fatal(err)
		}
		if addr.IsValid() {
			classes = capability.ClassOf(addr)
		}
		return capability.Capability{Kind: capability.NetConnect, Scheme: "https", Host: host, Port: 443, URL: "https://" + host + "/x", Addr: addr, Classes: classes}
	}
	caps := []capability.Capability{
		{Kind: capability.FSRead, Path: "/home/alice/notes.md"},
		{Kind: capability.FSWrite, Path: "/home/alice", Subtree: true},
		netCap("api.github.com"),
		netCap("10.0.0.7"),
		netCap("127.0.0.1"),
		{Kind: capability.Exec, Program: "git", Argv: []string{"git", "log"}, Shell: true, Command: "git log"},
		{Kind: capability.ID, IDKind: "mail.message", ID: "m-17"},
	}
	recorded := CapsOf(caps)
	if recorded[2].Kind != "net.connect" || recorded[2].Host != "api.github.com" || !recorded[1].Subtree {
		t.Fatalf("CapsOf: %+v", recorded[1:3])
	}
	dst := make([]capability.Capability, 1, 8)
	back, err := AppendCapabilities(dst, recorded)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(dst[:1], caps...), back, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if a := testing.AllocsPerRun(100, func() { AppendCapabilities(dst[:0], recorded[:1]) }); a != 0 {
		t.Errorf("AppendCapabilities into room allocates %v times", a)
	}
}

func TestAppendCapabilitiesRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cap  Cap
	}{
		{"unknown kind", Cap{Kind: "fs.delete", Path: "/x"}},
		{"empty kind", Cap{Path: "/x"}},
		{"host not canonical", Cap{Kind: "net.connect", Scheme: "https", Host: "API.github.com", Port: 443}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := AppendCapabilities(nil, []Cap{tc.cap}); err == nil {
				t.Errorf("accepted %+v as %+v", tc.cap, got)
			}
		})
	}
}
