package capability

import (
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"strings"
)

// An addrBlock is one row of an address class table: the first row whose
// prefix contains the address gives its class. The prefix is kept as a
// 128-bit value and mask (IPv4 in the low 32 bits) so that a lookup is a few
// integer operations.
type addrBlock struct {
	prefix         netip.Prefix
	hi, lo         uint64
	maskHi, maskLo uint64
	class          Class
}

func mkBlock(prefix string, c Class) addrBlock {
	p := netip.MustParsePrefix(prefix)
	hi, lo := addrBits(p.Addr())
	bits := p.Bits()
	if p.Addr().Is4() {
		bits += 96
	}
	var mhi, mlo uint64
	switch {
	case bits >= 64:
		mhi, mlo = ^uint64(0), ^uint64(0)<<(128-bits)
		if bits == 64 {
			mlo = 0
		}
	default:
		mhi = ^uint64(0) << (64 - bits)
	}
	return addrBlock{prefix: p, hi: hi & mhi, lo: lo & mlo, maskHi: mhi, maskLo: mlo, class: c}
}

// addrBits returns an address as two 64-bit halves; an IPv4 address is in
// the low 32 bits.
func addrBits(a netip.Addr) (hi, lo uint64) {
	if a.Is4() {
		b := a.As4()
		return 0, uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
	}
	b := a.As16()
	for i := range 8 {
		hi = hi<<8 | uint64(b[i])
		lo = lo<<8 | uint64(b[i+8])
	}
	return hi, lo
}

// v4Blocks is the IANA IPv4 Special-Purpose Address Registry (RFC 6890 and
// updates), plus multicast and class E, as classes. Globally reachable
// special-purpose blocks (AS112 192.31.196.0/24 and 192.175.48.0/24, AMT
// 192.52.193.0/24) are absent: they are Public.
//
//	0.0.0.0/8          this network ("0.0.0.0" reaches the local host on Linux)  Unspecified
//	10.0.0.0/8         private-use (RFC 1918)                                   Private
//	100.64.0.0/10      shared address space (RFC 6598)                          CGNAT
//	127.0.0.0/8        loopback                                                 Loopback
//	169.254.0.0/16     link local                                               LinkLocal
//	172.16.0.0/12      private-use                                              Private
//	192.0.0.0/24       IETF protocol assignments (DS-Lite, PCP, NAT64 discovery) Reserved
//	192.0.2.0/24       TEST-NET-1                                               Documentation
//	192.88.99.0/24     deprecated 6to4 relay anycast (RFC 7526)                 Reserved
//	192.168.0.0/16     private-use                                              Private
//	198.18.0.0/15      benchmarking (RFC 2544)                                  Benchmarking
//	198.51.100.0/24    TEST-NET-2                                               Documentation
//	203.0.113.0/24     TEST-NET-3                                               Documentation
//	224.0.0.0/4        multicast                                                Multicast
//	255.255.255.255/32 limited broadcast                                        Broadcast
//	240.0.0.0/4        reserved (class E)                                       Reserved
var v4Blocks = []addrBlock{
	mkBlock("0.0.0.0/8", Unspecified),
	mkBlock("10.0.0.0/8", Private),
	mkBlock("100.64.0.0/10", CGNAT),
	mkBlock("127.0.0.0/8", Loopback),
	mkBlock("169.254.0.0/16", LinkLocal),
	mkBlock("172.16.0.0/12", Private),
	mkBlock("192.0.0.0/24", Reserved),
	mkBlock("192.0.2.0/24", Documentation),
	mkBlock("192.88.99.0/24", Reserved),
	mkBlock("192.168.0.0/16", Private),
	mkBlock("198.18.0.0/15", Benchmarking),
	mkBlock("198.51.100.0/24", Documentation),
	mkBlock("203.0.113.0/24", Documentation),
	mkBlock("224.0.0.0/4", Multicast),
	mkBlock("255.255.255.255/32", Broadcast),
	mkBlock("240.0.0.0/4", Reserved),
}

// v6Blocks is the IANA IPv6 Special-Purpose Address Registry (RFC 6890 and
// updates) and the multicast, link-local and site-local blocks, as classes.
// The blocks that embed an IPv4 address (::ffff:0:0/96, 64:ff9b::/96,
// 64:ff9b:1::/48, 2002::/16, 2001::/32) are decoded by [embeddedV4] before
// this table is consulted. Outside 2000::/3 (global unicast) everything not
// listed is "Reserved by IETF" in the IPv6 address space registry, so it is
// Reserved.
//
//	::/128           unspecified                                 Unspecified
//	::1/128          loopback                                    Loopback
//	100::/64         discard-only (RFC 6666)                     Reserved
//	2001:2::/48      benchmarking (RFC 5180)                     Benchmarking
//	2001::/23        IETF protocol assignments (ORCHID, AMT, …)  Reserved
//	2001:db8::/32    documentation (RFC 3849)                    Documentation
//	3fff::/20        documentation (RFC 9637)                    Documentation
//	fc00::/7         unique local (RFC 4193)                     Private
//	fe80::/10        link-local unicast                          LinkLocal
//	fec0::/10        site-local, deprecated (RFC 3879)           Private
//	ff00::/8         multicast                                   Multicast
//	not 2000::/3     reserved by IETF (includes 5f00::/16 SRv6)  Reserved
var v6Blocks = []addrBlock{
	mkBlock("::/128", Unspecified),
	mkBlock("::1/128", Loopback),
	mkBlock("100::/64", Reserved),
	mkBlock("2001:2::/48", Benchmarking),
	mkBlock("2001::/23", Reserved),
	mkBlock("2001:db8::/32", Documentation),
	mkBlock("3fff::/20", Documentation),
	mkBlock("fc00::/7", Private),
	mkBlock("fe80::/10", LinkLocal),
	mkBlock("fec0::/10", Private),
	mkBlock("ff00::/8", Multicast),
	mkBlock("::/3", Reserved),     // 0000::/3, below 2000::/3
	mkBlock("4000::/2", Reserved), // 4000::/2, between 2000::/3 and 8000::/1
	mkBlock("8000::/1", Reserved), // what fc00::/7, fe80::/10, fec0::/10 and ff00::/8 leave of 8000::/1
}

// metadataAddrs are the cloud instance metadata and credential endpoints,
// classed Metadata in addition to their block's class.
//
//	169.254.169.254  AWS, GCP, Azure, OCI, OpenStack, DigitalOcean, Hetzner IMDS
//	169.254.170.2    AWS ECS task metadata and credentials
//	169.254.170.23   AWS EKS Pod Identity agent
//	169.254.0.23     Tencent Cloud metadata
//	169.254.42.42    Scaleway metadata
//	168.63.129.16    Azure WireServer (a public address)
//	100.100.100.200  Alibaba Cloud metadata
//	192.0.0.192      Oracle Cloud legacy metadata
//	fd00:ec2::254    AWS IMDS over IPv6
//	fd00:ec2::23     AWS EKS Pod Identity agent over IPv6
//	fd20:ce::254     GCP metadata over IPv6
//	fd00:42::42      Scaleway metadata over IPv6
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("169.254.170.2"),
	netip.MustParseAddr("169.254.170.23"),
	netip.MustParseAddr("169.254.0.23"),
	netip.MustParseAddr("169.254.42.42"),
	netip.MustParseAddr("168.63.129.16"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("192.0.0.192"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("fd00:ec2::23"),
	netip.MustParseAddr("fd20:ce::254"),
	netip.MustParseAddr("fd00:42::42"),
}

// ClassOf returns the classes of addr. For an IPv6 address embedding an IPv4
// one — IPv4-mapped ::ffff:a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d,
// IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96 and 64:ff9b:1::/48 (the
// /96 position), 6to4 2002::/16, Teredo 2001::/32 (the XOR-obfuscated
// client address) and ISATAP interface identifiers (::0:5efe:a.b.c.d,
// ::200:5efe:a.b.c.d) — it is the class Embedded plus the classes of the
// embedded IPv4 address. Public is set exactly when no other class is. A
// zone is ignored; the zero Addr is Reserved, so it never passes as Public.
func ClassOf(addr netip.Addr) Class {
	if !addr.IsValid() {
		return Reserved
	}
	addr = addr.WithZone("")
	var c Class
	if addr.Is4() {
		c = classOf4(addr)
	} else if v4, ok := embeddedV4(addr.As16()); ok {
		c = Embedded | classOf4(v4)
	} else {
		c = blockClass(v6Blocks, addr) | metadataClass(addr)
		if v4, ok := isatapV4(addr.As16()); ok {
			c |= Embedded | classOf4(v4)
		}
	}
	if c == 0 {
		return Public
	}
	return c
}

// classOf4 returns the classes of an IPv4 address, 0 for a public one. It
// is blockClass(v4Blocks, a) | metadataClass(a) (TestClassOf4 holds it to
// that), reading only the rows and metadata addresses that share the
// address's first byte: most public addresses read none.
func classOf4(a netip.Addr) Class {
	b := a.As4()
	v := uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
	var c Class
	for rows := v4Rows[b[0]]; rows != 0; rows &= rows - 1 {
		if bl := &v4Blocks[bits.TrailingZeros32(rows)]; v&bl.maskLo == bl.lo {
			c = bl.class
			break
		}
	}
	if v4Metadata[b[0]/64]&(1<<(b[0]%64)) != 0 {
		c |= metadataClass(a)
	}
	return c
}

// v4Rows holds, for each first byte of an IPv4 address, the rows of
// v4Blocks that contain addresses starting with it, as a bit set in table
// order; v4Metadata the first bytes of the IPv4 metadataAddrs.
var v4Rows, v4Metadata = func() (rows [256]uint32, meta [4]uint64) {
	if len(v4Blocks) > 32 {
		panic("capability: v4Rows holds 32 rows")
	}
	for o := range 256 {
		slash8 := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(o)}), 8)
		for i, bl := range v4Blocks {
			if bl.prefix.Overlaps(slash8) {
				rows[o] |= 1 << i
			}
		}
	}
	for _, m := range metadataAddrs {
		if m.Is4() {
			o := m.As4()[0]
			meta[o/64] |= 1 << (o % 64)
		}
	}
	return rows, meta
}()

func blockClass(blocks []addrBlock, a netip.Addr) Class {
	hi, lo := addrBits(a)
	for i := range blocks {
		bl := &blocks[i]
		if hi&bl.maskHi == bl.hi && lo&bl.maskLo == bl.lo {
			return bl.class
		}
	}
	return 0
}

func metadataClass(a netip.Addr) Class {
	for _, m := range metadataAddrs {
		if a == m {
			return Metadata
		}
	}
	return 0
}

// EmbeddedIPv4 returns the IPv4 address that addr, an IPv6 address,
// carries by one of the embeddings [ClassOf] reads (mapped, translated,
// compatible, NAT64 well-known and local-use, 6to4, Teredo, ISATAP), and
// false for any other address, IPv4 ones included. A zone is ignored. It
// is the one reading of embeddings in aegis: a policy's deny of an IPv4
// network follows it, so that no spelling of a denied address escapes.
func EmbeddedIPv4(addr netip.Addr) (netip.Addr, bool) {
	if !addr.Is6() {
		return netip.Addr{}, false
	}
	b := addr.As16()
	if v4, ok := embeddedV4(b); ok {
		return v4, true
	}
	return isatapV4(b)
}

// embeddedV4 returns the IPv4 address embedded in an IPv6 address whose
// whole block exists to carry one.
func embeddedV4(b [16]byte) (netip.Addr, bool) {
	last := netip.AddrFrom4([4]byte(b[12:]))
	zero := func(s []byte) bool {
		for _, x := range s {
			if x != 0 {
				return false
			}
		}
		return true
	}
	switch {
	case zero(b[:10]) && b[10] == 0xff && b[11] == 0xff: // ::ffff:0:0/96 mapped
		return last, true
	case zero(b[:8]) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0: // ::ffff:0:0:0/96 translated
		return last, true
	case zero(b[:12]): // ::/96 compatible, except :: and ::1
		v := uint32(b[12])<<24 | uint32(b[13])<<16 | uint32(b[14])<<8 | uint32(b[15])
		return last, v > 1
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(b[4:12]): // 64:ff9b::/96 NAT64
		return last, true
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0 && b[5] == 1: // 64:ff9b:1::/48 local NAT64
		return last, true
	case b[0] == 0x20 && b[1] == 0x02: // 2002::/16 6to4
		return netip.AddrFrom4([4]byte(b[2:6])), true
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0: // 2001::/32 Teredo
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	}
	return netip.Addr{}, false
}

// isatapV4 returns the IPv4 address in an ISATAP interface identifier
// (RFC 5214: 0000:5efe or 0200:5efe, with the u and g bits free), which a
// router of any prefix may tunnel to.
func isatapV4(b [16]byte) (netip.Addr, bool) {
	if b[8]&^0x03 == 0 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe {
		return netip.AddrFrom4([4]byte(b[12:])), true
	}
	return netip.Addr{}, false
}

// endsInNumber is the URL Standard's ends-in-a-number checker.
func endsInNumber(s string) bool {
	s = strings.TrimSuffix(s, ".")
	last := s[strings.LastIndexByte(s, '.')+1:]
	if last == "" {
		return false
	}
	if isDigits(last) {
		return true
	}
	_, ok := parseIPv4Number(last)
	return ok
}

// parseIPv4 is the URL Standard's IPv4 parser, for input that ends in a
// number.
func parseIPv4(s string) (netip.Addr, error) {
	if len(s) > 1 && s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	var nums [4]uint64
	n := 0
	for len(s) > 0 || n == 0 {
		part := s
		if i := strings.IndexByte(s, '.'); i >= 0 {
			part, s = s[:i], s[i+1:]
			if s == "" {
				return netip.Addr{}, errors.New("empty IPv4 part")
			}
		} else {
			s = ""
		}
		if n == 4 {
			return netip.Addr{}, errors.New("more than four IPv4 parts")
		}
		v, ok := parseIPv4Number(part)
		if !ok {
			return netip.Addr{}, fmt.Errorf("IPv4 part %q is not a number", part)
		}
		nums[n] = v
		n++
	}
	for _, v := range nums[:n-1] {
		if v > 255 {
			return netip.Addr{}, errors.New("IPv4 part out of range")
		}
	}
	if nums[n-1] >= 1<<(8*(5-n)) {
		return netip.Addr{}, errors.New("IPv4 address out of range")
	}
	v := nums[n-1]
	for i, p := range nums[:n-1] {
		v += p << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), nil
}

// parseIPv4Number is the URL Standard's IPv4 number parser. Values past 2³²
// saturate: they are out of range whatever they are.
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	radix := uint64(10)
	switch {
	case len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		s, radix = s[2:], 16
	case len(s) >= 2 && s[0] == '0':
		s, radix = s[1:], 8
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d := hexVal(s[i])
		if d >= radix {
			return 0, false
		}
		if v <= 1<<33 {
			v = v*radix + d
		}
	}
	return v, true
}

// parseIPv6 is the URL Standard's IPv6 parser. It accepts no zone.
func parseIPv6(s string) (netip.Addr, error) {
	var a [8]uint16
	piece, compress := 0, -1
	p := 0
	at := func(i int) int {
		if i < len(s) {
			return int(s[i])
		}
		return -1
	}
	if at(p) == ':' {
		if at(p+1) != ':' {
			return netip.Addr{}, errors.New("IPv6 address starts with a single colon")
		}
		p += 2
		piece++
		compress = piece
	}
	for at(p) != -1 {
		if piece == 8 {
			return netip.Addr{}, errors.New("IPv6 address has too many pieces")
		}
		if at(p) == ':' {
			if compress >= 0 {
				return netip.Addr{}, errors.New("IPv6 address has two compressions")
			}
			p++
			piece++
			compress = piece
			continue
		}
		value, length := 0, 0
		for length < 4 && at(p) >= 0 && hexVal(byte(at(p))) < 16 {
			value = value<<4 | int(hexVal(s[p]))
			p++
			length++
		}
		switch at(p) {
		case '.':
			if length == 0 {
				return netip.Addr{}, errors.New("IPv6 address has an empty IPv4 part")
			}
			p -= length
			if piece > 6 {
				return netip.Addr{}, errors.New("IPv6 address has no room for an IPv4 part")
			}
			seen := 0
			for at(p) != -1 {
				v4 := -1
				if seen > 0 {
					if at(p) != '.' || seen >= 4 {
						return netip.Addr{}, errors.New("IPv6 address has a bad IPv4 part")
					}
					p++
				}
				if c := at(p); c < '0' || c > '9' {
					return netip.Addr{}, errors.New("IPv6 address has a bad IPv4 part")
				}
				for c := at(p); c >= '0' && c <= '9'; c = at(p) {
					switch {
					case v4 < 0:
						v4 = c - '0'
					case v4 == 0:
						return netip.Addr{}, errors.New("IPv6 address has an IPv4 part with a leading zero")
					default:
						v4 = v4*10 + c - '0'
					}
					if v4 > 255 {
						return netip.Addr{}, errors.New("IPv6 address has an IPv4 part out of range")
					}
					p++
				}
				a[piece] = a[piece]<<8 | uint16(v4)
				seen++
				if seen == 2 || seen == 4 {
					piece++
				}
			}
			if seen != 4 {
				return netip.Addr{}, errors.New("IPv6 address has too few IPv4 parts")
			}
			goto done
		case ':':
			p++
			if at(p) == -1 {
				return netip.Addr{}, errors.New("IPv6 address ends in a single colon")
			}
		case -1:
		default:
			return netip.Addr{}, fmt.Errorf("IPv6 address has invalid code point %q", rune(at(p)))
		}
		a[piece] = uint16(value)
		piece++
	}
done:
	if compress >= 0 {
		swaps := piece - compress
		piece = 7
		for piece != 0 && swaps > 0 {
			a[piece], a[compress+swaps-1] = a[compress+swaps-1], a[piece]
			piece--
			swaps--
		}
	} else if piece != 8 {
		return netip.Addr{}, errors.New("IPv6 address has too few pieces")
	}
	var b [16]byte
	for i, v := range a {
		b[2*i], b[2*i+1] = byte(v>>8), byte(v)
	}
	return netip.AddrFrom16(b), nil
}

// serializeIPv6 is the URL Standard's IPv6 serializer. It differs from
// netip.Addr.String only for IPv4-mapped addresses, which it writes in hex.
func serializeIPv6(a netip.Addr) string {
	if !a.Is4In6() {
		return a.String()
	}
	b := a.As16()
	return fmt.Sprintf("::ffff:%x:%x", uint16(b[12])<<8|uint16(b[13]), uint16(b[14])<<8|uint16(b[15]))
}
