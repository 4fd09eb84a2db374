package capability

import (
	"fmt"
	"strings"
)

// Class is a set of address and name classes of a host, as a bit set. A
// policy matches a class with `host: class:NAME`; the egress gate refuses
// hosts by class. Each class has a name that a log line or a denial reason
// can carry.
type Class uint32

// The classes. An address can be in several (a NAT64 address embedding
// 127.0.0.1 is Embedded and Loopback). Public is set exactly when no other
// class is, for IP literals; a name is Public unless it is a loopback,
// internal or metadata name.
const (
	Loopback      Class = 1 << iota // 127.0.0.0/8, ::1, localhost, *.localhost
	Private                         // 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10 (deprecated site-local)
	LinkLocal                       // 169.254/16, fe80::/10
	CGNAT                           // 100.64.0.0/10
	Multicast                       // 224/4, ff00::/8
	Broadcast                       // 255.255.255.255
	Unspecified                     // 0.0.0.0/8, ::
	Reserved                        // 240/4, IETF protocol assignments, and other special-purpose blocks
	Benchmarking                    // 198.18.0.0/15, 2001:2::/48
	Documentation                   // 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20
	Metadata                        // cloud metadata endpoints (169.254.169.254, fd00:ec2::254, metadata.google.internal, ...)
	Embedded                        // an IPv6 form embedding an IPv4 address: mapped, translated, compatible, NAT64, 6to4, Teredo, ISATAP
	InternalName                    // a name that only resolves inside a network: single label, .local, .internal, .lan, .home.arpa, .corp
	Public                          // none of the above

	classEnd
)

var classNames = []string{
	"loopback", "private", "link-local", "cgnat", "multicast", "broadcast", "unspecified",
	"reserved", "benchmarking", "documentation", "metadata", "embedded", "internal-name", "public",
}

// String returns the names of the classes in c, joined by "|".
func (c Class) String() string {
	if c == 0 {
		return "none"
	}
	var b strings.Builder
	for i, name := range classNames {
		if c&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(name)
		}
	}
	return b.String()
}

// Names returns the names of the classes in c.
func (c Class) Names() []string {
	var names []string
	for i, name := range classNames {
		if c&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return names
}

// ParseClass returns the class called name ("loopback", "cgnat", ...).
func ParseClass(name string) (Class, error) {
	for i, n := range classNames {
		if n == name {
			return 1 << i, nil
		}
	}
	return 0, fmt.Errorf("unknown address class %q (want one of %s)", name, strings.Join(classNames, ", "))
}
