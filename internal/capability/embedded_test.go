package capability

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

func TestEmbeddedIPv4(t *testing.T) {
	tests := []struct {
		name, addr, want string // want "" for no embedding
	}{
		{"mapped", "::ffff:10.1.2.3", "10.1.2.3"},
		{"translated", "::ffff:0:10.1.2.3", "10.1.2.3"},
		{"compatible", "::10.1.2.3", "10.1.2.3"},
		{"NAT64", "64:ff9b::10.1.2.3", "10.1.2.3"},
		{"NAT64 local-use", "64:ff9b:1:2::10.1.2.3", "10.1.2.3"},
		{"6to4", "2002:a01:203::1", "10.1.2.3"},
		{"Teredo", "2001:0:4136:e378:8000:63bf:f5fe:fdfc", "10.1.2.3"},
		{"ISATAP", "2a00:1450::5efe:10.1.2.3", "10.1.2.3"},
		{"ISATAP u/g bits", "2a00:1450::300:5efe:10.1.2.3", "10.1.2.3"},
		{"zone ignored", "fe80::5efe:10.1.2.3%eth0", "10.1.2.3"},
		{"unspecified", "::", ""},
		{"loopback", "::1", ""},
		{"IPv4 itself", "10.1.2.3", ""},
		{"plain global", "2a00:1450::1", ""},
		{"near ISATAP", "2a00:1450::400:5efe:10.1.2.3", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := EmbeddedIPv4(netip.MustParseAddr(tt.addr))
			if tt.want == "" {
				if ok {
					t.Fatalf("EmbeddedIPv4(%s) = %v, want none", tt.addr, got)
				}
				return
			}
			if !ok || got != netip.MustParseAddr(tt.want) {
				t.Fatalf("EmbeddedIPv4(%s) = %v, %v; want %s", tt.addr, got, ok, tt.want)
			}
		})
	}
}

// EmbeddedIPv4 and ClassOf read embeddings alike: an IPv6 address is of the
// class Embedded exactly when EmbeddedIPv4 finds an address in it, and then
// it has that address's classes.
func TestEmbeddedIPv4AgreesWithClassOf(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	prefixes := []string{"::ffff:0:0/96", "::ffff:0:0:0/96", "::/96", "64:ff9b::/96", "64:ff9b:1::/48",
		"2002::/16", "2001::/32", "2a00::/16", "fe80::/64", "::/0"}
	for range 20000 {
		p := netip.MustParsePrefix(prefixes[r.IntN(len(prefixes))])
		b := p.Addr().As16()
		for i := p.Bits() / 8; i < 16; i++ {
			b[i] = byte(r.Uint32())
		}
		if r.IntN(4) == 0 { // an ISATAP identifier
			b[8], b[9], b[10], b[11] = byte(r.IntN(4)), 0, 0x5e, 0xfe
		}
		a := netip.AddrFrom16(b)
		if !p.Contains(a) {
			continue
		}
		v4, ok := EmbeddedIPv4(a)
		c := ClassOf(a)
		if ok != (c&Embedded != 0) {
			t.Fatalf("%s: EmbeddedIPv4 ok=%v, ClassOf %v", a, ok, c)
		}
		if ok && c&classOf4(v4) != classOf4(v4) {
			t.Fatalf("%s: ClassOf %v lacks the classes %v of %s", a, c, classOf4(v4), v4)
		}
	}
}
