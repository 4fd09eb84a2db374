package capability

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

func TestClassOf(t *testing.T) {
	tests := []struct {
		name string
		addr string
		want Class
	}{
		// IPv4 special-purpose registry.
		{"this network", "0.0.0.0", Unspecified},
		{"this network /8", "0.1.2.3", Unspecified},
		{"private 10", "10.1.2.3", Private},
		{"cgnat", "100.64.0.1", CGNAT},
		{"cgnat top", "100.127.255.255", CGNAT},
		{"below cgnat", "100.63.255.255", Public},
		{"loopback", "127.0.0.1", Loopback},
		{"loopback /8", "127.255.1.2", Loopback},
		{"link-local", "169.254.1.1", LinkLocal},
		{"private 172.16", "172.16.0.1", Private},
		{"private 172.31", "172.31.255.255", Private},
		{"not private 172.32", "172.32.0.1", Public},
		{"ietf protocol assignments", "192.0.0.8", Reserved},
		{"documentation 1", "192.0.2.1", Documentation},
		{"6to4 relay anycast", "192.88.99.1", Reserved},
		{"private 192.168", "192.168.1.1", Private},
		{"benchmarking", "198.19.255.255", Benchmarking},
		{"documentation 2", "198.51.100.7", Documentation},
		{"documentation 3", "203.0.113.9", Documentation},
		{"multicast", "224.0.0.1", Multicast},
		{"multicast top", "239.255.255.255", Multicast},
		{"reserved 240", "240.0.0.1", Reserved},
		{"broadcast", "255.255.255.255", Broadcast},
		{"public", "8.8.8.8", Public},
		{"public as112", "192.31.196.1", Public},

		// Metadata endpoints.
		{"metadata aws gcp azure", "169.254.169.254", LinkLocal | Metadata},
		{"metadata ecs", "169.254.170.2", LinkLocal | Metadata},
		{"metadata azure wireserver", "168.63.129.16", Metadata},
		{"metadata alibaba", "100.100.100.200", CGNAT | Metadata},
		{"metadata oracle", "192.0.0.192", Reserved | Metadata},
		{"metadata aws v6", "fd00:ec2::254", Private | Metadata},
		{"metadata gcp v6", "fd20:ce::254", Private | Metadata},

		// IPv6 special-purpose registry.
		{"v6 unspecified", "::", Unspecified},
		{"v6 loopback", "::1", Loopback},
		{"v6 discard", "100::1", Reserved},
		{"v6 ietf assignments", "2001:1::1", Reserved},
		{"v6 benchmarking", "2001:2::1", Benchmarking},
		{"v6 orchid", "2001:20::1", Reserved},
		{"v6 documentation", "2001:db8::1", Documentation},
		{"v6 documentation 3fff", "3fff:1::1", Documentation},
		{"v6 srv6 sids", "5f00::1", Reserved},
		{"v6 ula", "fd12:3456::1", Private},
		{"v6 ula fc", "fc00::1", Private},
		{"v6 link-local", "fe80::1", LinkLocal},
		{"v6 link-local febf", "febf::1", LinkLocal},
		{"v6 site-local", "fec0::1", Private},
		{"v6 multicast", "ff02::1", Multicast},
		{"v6 outside 2000::/3", "4000::1", Reserved},
		{"v6 public", "2606:4700:4700::1111", Public},
		{"v6 zone ignored", "fe80::1%eth0", LinkLocal},

		// IPv6 forms embedding an IPv4 address.
		{"mapped loopback", "::ffff:127.0.0.1", Embedded | Loopback},
		{"mapped public", "::ffff:8.8.8.8", Embedded},
		{"mapped metadata", "::ffff:169.254.169.254", Embedded | LinkLocal | Metadata},
		{"translated loopback", "::ffff:0:127.0.0.1", Embedded | Loopback},
		{"compatible loopback", "::127.0.0.1", Embedded | Loopback},
		{"compatible private", "::10.0.0.1", Embedded | Private},
		{"compatible small", "::2", Embedded | Unspecified},
		{"nat64 loopback", "64:ff9b::7f00:1", Embedded | Loopback},
		{"nat64 public", "64:ff9b::808:808", Embedded},
		{"nat64 metadata", "64:ff9b::a9fe:a9fe", Embedded | LinkLocal | Metadata},
		{"local nat64 /96", "64:ff9b:1::7f00:1", Embedded | Loopback},
		// Only the /96 position of the local-use prefix is decoded: here it
		// holds 0.0.0.0, although 127.0.0.1 sits at the /48 position. The
		// address is Embedded either way, so never Public.
		{"local nat64 other position", "64:ff9b:1:7f00:0:100::", Embedded | Unspecified},
		{"6to4 loopback", "2002:7f00:1::", Embedded | Loopback},
		{"6to4 private", "2002:c0a8:101::1", Embedded | Private},
		{"6to4 public", "2002:808:808::1", Embedded},
		// Teredo: the client address is the last 32 bits, inverted.
		{"teredo loopback client", "2001:0:4136:e378:8000:63bf:80ff:fffe", Embedded | Loopback},
		{"teredo public client", "2001:0:4136:e378:8000:63bf:3fff:fdd2", Embedded | Documentation},
		{"teredo metadata client", "2001::5601:5601", Embedded | LinkLocal | Metadata},
		{"isatap loopback", "2001:db8::5efe:7f00:1", Documentation | Embedded | Loopback},
		{"isatap u bit", "fe80::200:5efe:a00:1", LinkLocal | Embedded | Private},

		{"invalid", "", Reserved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a netip.Addr
			if tt.addr != "" {
				a = netip.MustParseAddr(tt.addr)
			}
			if got := ClassOf(a); got != tt.want {
				t.Errorf("ClassOf(%s) = %v, want %v", tt.addr, got, tt.want)
			}
		})
	}
}

// TestClassOfPublicExclusive checks the documented invariant on many
// addresses: Public is set exactly when no other class is.
func TestClassOfPublicExclusive(t *testing.T) {
	var b [16]byte
	for i := range 1 << 16 {
		// Walk the first two bytes of both families, keeping the rest
		// varied, so every table entry is visited.
		b[0], b[1] = byte(i>>8), byte(i)
		b[2], b[15] = byte(i*7), byte(i*13)
		for _, a := range []netip.Addr{netip.AddrFrom4([4]byte{b[0], b[1], b[2], b[15]}), netip.AddrFrom16(b)} {
			c := ClassOf(a)
			if c == 0 {
				t.Fatalf("ClassOf(%s) = none", a)
			}
			if (c&Public != 0) != (c == Public) {
				t.Fatalf("ClassOf(%s) = %v: Public with another class", a, c)
			}
			if c >= classEnd {
				t.Fatalf("ClassOf(%s) = %v: unknown bit", a, c)
			}
		}
	}
}

// TestAddrBlockMasks checks the integer masks of the class tables against
// netip.Prefix.Contains, on the first, last and neighbouring addresses of
// every block and on random ones.
func TestAddrBlockMasks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, blocks := range [][]addrBlock{v4Blocks, v6Blocks} {
		for _, bl := range blocks {
			first := bl.prefix.Masked().Addr()
			b := first.AsSlice()
			for i := bl.prefix.Bits(); i < len(b)*8; i++ {
				b[i/8] |= 0x80 >> (i % 8)
			}
			last, _ := netip.AddrFromSlice(b)
			cands := []netip.Addr{first, first.Prev(), last, last.Next()}
			for range 2000 {
				var b [16]byte
				for i := range b {
					b[i] = byte(r.Uint32())
				}
				a := netip.AddrFrom16(b)
				if first.Is4() {
					a = netip.AddrFrom4([4]byte(b[:4]))
				}
				cands = append(cands, a)
			}
			for _, a := range cands {
				if !a.IsValid() || a.Is4() != first.Is4() {
					continue
				}
				hi, lo := addrBits(a)
				got := hi&bl.maskHi == bl.hi && lo&bl.maskLo == bl.lo
				if want := bl.prefix.Contains(a); got != want {
					t.Errorf("block %v, address %v: mask says %v, Contains %v", bl.prefix, a, got, want)
				}
			}
		}
	}
}

// TestClassOf4 holds classOf4's per-byte row sets to the plain scan of the
// whole table: every first byte, with the first and last addresses and
// neighbours of every block and metadata address, and random addresses.
func TestClassOf4(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var cands []netip.Addr
	for _, bl := range v4Blocks {
		first := bl.prefix.Masked().Addr()
		b := first.As4()
		for i := bl.prefix.Bits(); i < 32; i++ {
			b[i/8] |= 0x80 >> (i % 8)
		}
		last := netip.AddrFrom4(b)
		cands = append(cands, first, first.Prev(), last, last.Next())
	}
	for _, m := range metadataAddrs {
		if m.Is4() {
			cands = append(cands, m, m.Prev(), m.Next())
		}
	}
	for o := range 256 {
		for range 64 {
			cands = append(cands, netip.AddrFrom4([4]byte{byte(o), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())}))
		}
		cands = append(cands, netip.AddrFrom4([4]byte{byte(o)}), netip.AddrFrom4([4]byte{byte(o), 255, 255, 255}))
	}
	for _, a := range cands {
		if !a.IsValid() || !a.Is4() {
			continue
		}
		if got, want := classOf4(a), blockClass(v4Blocks, a)|metadataClass(a); got != want {
			t.Errorf("classOf4(%v) = %v, want %v", a, got, want)
		}
	}
}

func BenchmarkClassOf(b *testing.B) {
	addrs := []netip.Addr{
		netip.MustParseAddr("8.8.8.8"),
		netip.MustParseAddr("2606:4700:4700::1111"),
		netip.MustParseAddr("64:ff9b::7f00:1"),
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ClassOf(addrs[i%len(addrs)])
	}
}
