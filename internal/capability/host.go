package capability

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// maxHostLen bounds the raw text of a host: a name is at most 253 bytes
// once canonical, and the bound leaves room for percent-encoding and
// mappings while keeping the work per call small.
const maxHostLen = 4096

// urlIDNA is the URL Standard's "domain to ASCII" with beStrict false: UTS
// #46 ToASCII, non-transitional, CheckHyphens=false, CheckBidi=true,
// CheckJoiners=true, UseSTD3ASCIIRules=false, VerifyDnsLength=false. Later
// options override what MapForLookup sets.
var urlIDNA = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.CheckJoiners(true),
	idna.CheckHyphens(false),
	idna.StrictDomainName(false),
	idna.Transitional(false),
	idna.VerifyDNSLength(false),
)

// hostKind is the kind of host the URL Standard's host parser returns.
type hostKind uint8

const (
	hostEmpty  hostKind = iota + 1 // the empty host of a file: or non-special URL
	hostDomain                     // an ASCII domain, lower case
	hostIPv4
	hostIPv6
	hostOpaque // the host of a non-special URL, percent-encoded
)

// urlHost is a host as the URL Standard parses it, before aegis's stricter
// rules ([canonURLHost]).
type urlHost struct {
	kind hostKind
	text string     // the host serialised: domain, opaque host, dotted IPv4, "[v6]", or ""
	addr netip.Addr // the address of an IPv4 or IPv6 host
}

func hostErr(raw, format string, args ...any) error {
	if len(raw) > 64 {
		raw = raw[:64] + "…"
	}
	return fmt.Errorf("host %q: %s", raw, fmt.Sprintf(format, args...))
}

// CanonHost canonicalises a host as the WHATWG URL host parser does for
// special schemes (http, https, ws, wss, ftp, file): percent-decoding, UTS
// #46 mapping (fullwidth letters and digits, the full stops U+3002, U+FF0E
// and U+FF61 as dots), lower-casing, forbidden code points rejected, and
// every IPv4 number form (0x7f.1, 0177.0.0.1, 2130706433, 127.1, mixed)
// reduced to the address. A bracketed IPv6 address is parsed without a zone;
// an unbracketed one is accepted too, so that the canonical text of an
// address is itself a host.
//
// On top of the URL Standard it drops one trailing dot, rejects empty labels,
// labels over 63 bytes, names over 253 bytes and Punycode labels that do not
// decode to valid U-labels, and unmaps an IPv4-mapped IPv6 address. It
// returns the canonical host — a lower-case A-label name, or the address in
// net/netip text form without brackets — and the address when the host is
// an IP literal.
func CanonHost(raw string) (host string, addr netip.Addr, err error) {
	if plainHost(raw) {
		return raw, netip.Addr{}, nil
	}
	return canonHost(raw)
}

// CanonHostClasses is CanonHost that also returns NameClass of the
// canonical host, so that a caller needing both reads a plain host once.
// FuzzCanonHostClasses holds it to CanonHost then NameClass.
func CanonHostClasses(raw string) (host string, addr netip.Addr, classes Class, err error) {
	if plainHost(raw) {
		return raw, netip.Addr{}, nameClass(raw), nil
	}
	if host, addr, err = canonHost(raw); err != nil {
		return "", netip.Addr{}, 0, err
	}
	return host, addr, NameClass(host), nil
}

// plainHost reports whether s is a plain host name: lower-case letters,
// digits and hyphens in dot-separated labels, none of them empty, over 63
// bytes or Punycode ("xn--"), 253 bytes at most, and the last one starting
// with a letter (a name ending in a number is an IPv4 address to the host
// parser). Such a name is canonical: CanonHost returns it as it is, and
// NameClass needs neither lower-casing nor an address parser for it.
// FuzzPlainHost holds plainHost to canonHost.
func plainHost(s string) bool {
	n, ok := plainHostPrefix(s)
	return ok && n == len(s)
}

// plainHostPrefix returns the length n of the longest prefix of s made of
// the bytes of a plain host (lower-case letters, digits, hyphens and dots),
// and reports whether s[:n] is a plain host (plainHost), reading each byte
// once. It may stop early, at a label that is not plain, and report false.
func plainHostPrefix(s string) (n int, ok bool) {
	label := 0 // where the current label starts
	tab := &plainBytes
	i := 0
	for ; i < len(s); i++ {
		b := s[i]
		if tab[b]&byteHost != 0 {
			continue
		}
		if b != '.' {
			break
		}
		if !plainLabel(s[label:i]) {
			return i, false
		}
		label = i + 1
	}
	return i, i <= 253 && plainLabel(s[label:i]) && s[label] > '9'
}

// plainLabel reports whether a label of a plain host is neither empty, nor
// over 63 bytes, nor Punycode ("xn--", lower case in a plain host).
func plainLabel(l string) bool {
	return l != "" && len(l) <= 63 && !(len(l) >= 4 && l[0] == 'x' && l[1] == 'n' && l[2] == '-' && l[3] == '-')
}

// canonHost is CanonHost for any host.
func canonHost(raw string) (host string, addr netip.Addr, err error) {
	if raw == "" {
		return "", netip.Addr{}, errors.New("empty host")
	}
	if len(raw) > maxHostLen {
		return "", netip.Addr{}, hostErr(raw, "longer than %d bytes", maxHostLen)
	}
	var h urlHost
	if raw[0] != '[' && strings.IndexByte(raw, ':') >= 0 {
		a, err := parseIPv6(raw)
		if err != nil {
			return "", netip.Addr{}, hostErr(raw, "%v (a port is not part of a host)", err)
		}
		h = urlHost{kind: hostIPv6, addr: a}
	} else if h, err = parseHost(raw, false); err != nil {
		return "", netip.Addr{}, err
	}
	return canonURLHost(raw, h)
}

// canonURLHost applies aegis's rules to a host the URL Standard accepted:
// see [CanonHost].
func canonURLHost(raw string, h urlHost) (string, netip.Addr, error) {
	switch h.kind {
	case hostIPv4:
		return h.text, h.addr, nil
	case hostIPv6:
		a := h.addr.Unmap()
		return a.String(), a, nil
	case hostDomain:
		name, err := checkName(raw, h.text)
		return name, netip.Addr{}, err
	case hostOpaque:
		// A non-special URL's host: the runtime hands it to a resolver,
		// which reads IPv4 number forms as getaddrinfo does, so it is
		// canonicalised as a special host would be.
		return CanonHost(h.text)
	}
	return "", netip.Addr{}, errors.New("empty host")
}

// checkName drops one trailing dot of a domain and checks DNS's limits, which
// the URL Standard leaves to the resolver.
func checkName(raw, name string) (string, error) {
	name = strings.TrimSuffix(name, ".")
	if len(name) > 253 {
		return "", hostErr(raw, "name longer than 253 bytes")
	}
	start := 0
	for i := 0; i <= len(name); i++ {
		if i < len(name) && name[i] != '.' {
			continue
		}
		switch n := i - start; {
		case n == 0:
			return "", hostErr(raw, "empty label")
		case n > 63:
			return "", hostErr(raw, "label longer than 63 bytes")
		}
		start = i + 1
	}
	return name, nil
}

// parseHost is the URL Standard's host parser: opaque is true for the host
// of a URL that is not special.
func parseHost(input string, opaque bool) (urlHost, error) {
	if strings.HasPrefix(input, "[") {
		if !strings.HasSuffix(input, "]") || len(input) < 2 {
			return urlHost{}, hostErr(input, "unclosed IPv6 address")
		}
		a, err := parseIPv6(input[1 : len(input)-1])
		if err != nil {
			return urlHost{}, hostErr(input, "%v", err)
		}
		return urlHost{kind: hostIPv6, text: "[" + serializeIPv6(a) + "]", addr: a}, nil
	}
	if opaque {
		return parseOpaqueHost(input)
	}
	if input == "" {
		return urlHost{}, errors.New("empty host")
	}
	if name, ok := plainName(input); ok {
		if !endsInNumber(name) {
			return urlHost{kind: hostDomain, text: name}, nil
		}
		a, err := parseIPv4(name)
		if err != nil {
			return urlHost{}, hostErr(input, "ends in a number but %v", err)
		}
		return urlHost{kind: hostIPv4, text: a.String(), addr: a}, nil
	}
	domain := percentDecode(input)
	if !utf8.ValidString(domain) {
		return urlHost{}, hostErr(input, "not UTF-8 once percent-decoded")
	}
	ascii, err := domainToASCII(input, domain)
	if err != nil {
		return urlHost{}, err
	}
	if endsInNumber(ascii) {
		a, err := parseIPv4(ascii)
		if err != nil {
			return urlHost{}, hostErr(input, "ends in a number but %v", err)
		}
		return urlHost{kind: hostIPv4, text: a.String(), addr: a}, nil
	}
	return urlHost{kind: hostDomain, text: ascii}, nil
}

// domainToASCII is the URL Standard's domain to ASCII, failing closed where
// it would keep an ASCII name that UTS #46 rejects (a Punycode label that
// does not decode to a valid U-label).
func domainToASCII(raw, domain string) (string, error) {
	var result string
	if IsASCII(domain) && !hasACELabel(domain) {
		// UTS #46 maps an ASCII name without Punycode labels to its lower
		// case, and the URL Standard says so outright.
		result = lowerASCII(domain)
	} else {
		var err error
		result, err = urlIDNA.ToASCII(domain)
		if err != nil {
			return "", hostErr(raw, "IDNA: %v", err)
		}
		if IsASCII(domain) {
			if result != lowerASCII(domain) {
				return "", hostErr(raw, "IDNA changed an ASCII name to %q", result)
			}
		} else if again, err := urlIDNA.ToASCII(result); err != nil || again != result {
			// A result that does not map to itself would let two
			// canonicalisations of one host differ.
			return "", hostErr(raw, "IDNA result %q is not stable", result)
		}
	}
	if result == "" {
		return "", hostErr(raw, "empty once mapped")
	}
	for i := 0; i < len(result); i++ {
		if c := result[i]; c >= utf8.RuneSelf || isForbiddenDomain(c) {
			return "", hostErr(raw, "forbidden code point %q", rune(c))
		}
	}
	return result, nil
}

// plainName is the common case of the domain parser in one pass: an ASCII
// host without percent-encoding, forbidden code points or Punycode labels
// maps to its lower case. It reports false for any other host, which takes
// the general path.
func plainName(s string) (string, bool) {
	upper := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '.', c == '-', c == '_':
		case 'A' <= c && c <= 'Z':
			upper = true
		default:
			return "", false
		}
		if c|0x20 == 'x' && (i == 0 || s[i-1] == '.') && hasACELabel(s[i:min(i+4, len(s))]) {
			return "", false
		}
	}
	if upper {
		return lowerASCII(s), true
	}
	return s, true
}

// parseOpaqueHost is the URL Standard's opaque-host parser.
func parseOpaqueHost(input string) (urlHost, error) {
	for i := 0; i < len(input); i++ {
		if isForbiddenHost(input[i]) {
			return urlHost{}, hostErr(input, "forbidden code point %q", rune(input[i]))
		}
	}
	if input == "" {
		return urlHost{kind: hostEmpty}, nil
	}
	return urlHost{kind: hostOpaque, text: percentEncodeString(input, &c0ControlSet)}, nil
}

// isForbiddenHost reports whether c is a forbidden host code point.
func isForbiddenHost(c byte) bool {
	switch c {
	case 0, '\t', '\n', '\r', ' ', '#', '/', ':', '<', '>', '?', '@', '[', '\\', ']', '^', '|':
		return true
	}
	return false
}

// isForbiddenDomain reports whether c is a forbidden domain code point.
func isForbiddenDomain(c byte) bool {
	return isForbiddenHost(c) || c < 0x20 || c == '%' || c == 0x7f
}

// hasACELabel reports whether an ASCII name has a label starting with
// "xn--", in any case.
func hasACELabel(s string) bool {
	for i := 0; i+4 <= len(s); i++ {
		if (i == 0 || s[i-1] == '.') && (s[i]|0x20) == 'x' && (s[i+1]|0x20) == 'n' && s[i+2] == '-' && s[i+3] == '-' {
			return true
		}
	}
	return false
}

// NameClass returns the classes of a canonical host name (see [CanonHost]):
// Loopback for localhost and *.localhost; InternalName for single-label
// names and names under .local, .internal, .lan, .home.arpa, .corp,
// .intranet, .localdomain and the like; Metadata for well-known metadata
// names (metadata.google.internal, metadata.goog, metadata, instance-data);
// else Public. Given an IP literal, it returns [ClassOf] the address, so a
// misuse cannot make an address Public.
func NameClass(host string) Class {
	if plainHost(host) {
		return nameClass(host)
	}
	return anyNameClass(host)
}

// anyNameClass is NameClass for any host.
func anyNameClass(host string) Class {
	host = strings.TrimSuffix(host, ".")
	if n := len(host); n > 0 && (host[n-1] >= '0' && host[n-1] <= '9' || strings.IndexByte(host, ':') >= 0) {
		if a, err := netip.ParseAddr(host); err == nil {
			return ClassOf(a)
		}
	}
	return nameClass(lowerASCII(host))
}

// nameClass is NameClass for a lower-case name without a trailing dot
// that is no IP literal.
func nameClass(host string) Class {
	var c Class
	switch host {
	case "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback":
		return Loopback
	case "metadata.google.internal", "metadata.goog", "metadata",
		"instance-data", "instance-data.ec2.internal", "metadata.tencentyun.com":
		// Names that resolve to a cloud metadata endpoint.
		c = Metadata
	}
	dot := strings.LastIndexByte(host, '.')
	switch tld := host[dot+1:]; tld {
	case "localhost":
		return Loopback
	case "local", "localdomain", "internal", "intranet", "lan", "home", "corp", "private",
		"svc", "test", "invalid", "example":
		// Names that only resolve inside a network: mDNS .local, ICANN's
		// private-use .internal, RFC 2606 and RFC 6761 special-use names,
		// Kubernetes service names, and private suffixes in common use that
		// no public registry delegates.
		c |= InternalName
	case "arpa":
		if host == "home.arpa" || strings.HasSuffix(host, ".home.arpa") { // RFC 8375
			c |= InternalName
		}
	}
	if dot < 0 {
		c |= InternalName
	}
	if c == 0 {
		return Public
	}
	return c
}

// FromHost derives a net.connect capability from a bare "host" or
// "host:port" argument ("[v6]:port" for IPv6; an unbracketed IPv6 address
// without a port is accepted unless its last group could also be read as a
// port, which is ErrAmbiguous). Scheme and URL stay empty; Port is 0 when
// absent. Percent-encoding is a URL notion and is refused here.
func FromHost(raw string) (Capability, error) {
	if raw == "" {
		return Capability{}, errors.New("empty host")
	}
	if strings.IndexByte(raw, '%') >= 0 {
		return Capability{}, hostErr(raw, "percent-encoding in a bare host")
	}
	host, port := raw, ""
	hasPort := false
	switch {
	case raw[0] == '[':
		i := strings.IndexByte(raw, ']')
		if i < 0 {
			return Capability{}, hostErr(raw, "unclosed IPv6 address")
		}
		host = raw[:i+1]
		switch rest := raw[i+1:]; {
		case rest == "":
		case rest[0] == ':':
			port, hasPort = rest[1:], true
		default:
			return Capability{}, hostErr(raw, "junk after IPv6 address")
		}
	case strings.Count(raw, ":") == 1:
		i := strings.IndexByte(raw, ':')
		host, port, hasPort = raw[:i], raw[i+1:], true
	case strings.Count(raw, ":") > 1:
		i := strings.LastIndexByte(raw, ':')
		if tail := raw[i+1:]; isDigits(tail) && len(tail) <= 5 {
			if _, err := parseIPv6(raw[:i]); err == nil {
				return Capability{}, fmt.Errorf("host %q reads as an IPv6 address and as one with port %s (bracket it): %w", raw, tail, ErrAmbiguous)
			}
		}
	}
	c := Capability{Kind: NetConnect}
	if hasPort {
		p, err := parsePort(port)
		if err != nil {
			return Capability{}, hostErr(raw, "%v", err)
		}
		c.Port = p
	}
	if host == "" {
		return Capability{}, hostErr(raw, "no host before the port")
	}
	var err error
	if c.Host, c.Addr, err = CanonHost(host); err != nil {
		return Capability{}, err
	}
	c.Classes = hostClasses(c.Host, c.Addr)
	return c, nil
}

// parsePort parses a decimal port, 1 to 65535; leading zeros are allowed.
func parsePort(s string) (uint16, error) {
	if s == "" || !isDigits(s) {
		return 0, errors.New("port is not a decimal number")
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if v = v*10 + int(s[i]-'0'); v > 65535 {
			return 0, errors.New("port out of range")
		}
	}
	if v == 0 {
		return 0, errors.New("port 0 cannot be connected to")
	}
	return uint16(v), nil
}

// hostClasses returns the classes of a canonical host.
func hostClasses(host string, addr netip.Addr) Class {
	if addr.IsValid() {
		return ClassOf(addr)
	}
	return NameClass(host)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// lowerASCII lower-cases ASCII letters, allocating only when there is one
// to change.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// hexVal returns the value of a hex digit, or 16 for any other byte.
func hexVal(c byte) uint64 {
	switch {
	case '0' <= c && c <= '9':
		return uint64(c - '0')
	case 'a' <= c && c <= 'f':
		return uint64(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return uint64(c - 'A' + 10)
	}
	return 16
}

// percentDecode is the URL Standard's percent-decode: "%" and two hex
// digits become a byte; any other "%" stays.
func percentDecode(s string) string {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && hexVal(s[i+1]) < 16 && hexVal(s[i+2]) < 16 {
			b = append(b, byte(hexVal(s[i+1])<<4|hexVal(s[i+2])))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}
