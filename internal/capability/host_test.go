package capability

import (
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// errWantAny marks a table row that must fail, with any error.
var errWantAny = errors.New("any error")

// checkWantErr reports whether err matches want (nil, errWantAny or a sentinel).
func checkWantErr(t *testing.T, err, want error) bool {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != nil && err == nil:
		t.Errorf("no error, want %v", want)
	case want != nil && want != errWantAny && !errors.Is(err, want):
		t.Errorf("error %v, want %v", err, want)
	}
	return err == nil && want == nil
}

var netipAddrCmp = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

func TestCanonHost(t *testing.T) {
	long63 := strings.Repeat("a", 63)
	tests := []struct {
		name     string
		in       string
		wantHost string
		wantAddr string // empty: not an IP literal
		wantErr  error
	}{
		// Names.
		{"plain", "example.com", "example.com", "", nil},
		{"upper", "EXAMPLE.COM", "example.com", "", nil},
		{"trailing dot", "example.com.", "example.com", "", nil},
		{"single label", "intranet", "intranet", "", nil},
		{"underscore allowed", "_dmarc.example.com", "_dmarc.example.com", "", nil},
		{"percent-encoded name", "ex%41mple.com", "example.com", "", nil},
		{"fullwidth letters", "ｅｘａｍｐｌｅ.com", "example.com", "", nil},
		{"ideographic full stop", "example。com", "example.com", "", nil},
		{"fullwidth full stop", "example．com", "example.com", "", nil},
		{"halfwidth ideographic full stop", "example｡com", "example.com", "", nil},
		{"idn", "bücher.de", "xn--bcher-kva.de", "", nil},
		{"idn non-transitional sharp s", "faß.de", "xn--fa-hia.de", "", nil},
		{"idn emoji", "☕.example", "xn--53h.example", "", nil},
		{"a-label", "xn--nxasmq6b.com", "xn--nxasmq6b.com", "", nil},
		{"a-label upper", "XN--NXASMQ6B.COM", "xn--nxasmq6b.com", "", nil},
		{"percent-encoded utf-8", "b%C3%BCcher.de", "xn--bcher-kva.de", "", nil},
		{"soft hyphen ignored", "exam\u00adple.com", "example.com", "", nil},
		{"zero width space ignored", "exam\u200bple.com", "example.com", "", nil},
		{"63-char label", long63 + ".com", long63 + ".com", "", nil},
		{"hyphens anywhere", "-a--b-.com", "-a--b-.com", "", nil},

		// Rejected names.
		{"empty", "", "", "", errWantAny},
		{"only dot", ".", "", "", errWantAny},
		{"leading dot", ".example.com", "", "", errWantAny},
		{"empty label", "a..b", "", "", errWantAny},
		{"two trailing dots", "example.com..", "", "", errWantAny},
		{"64-char label", long63 + "a.com", "", "", errWantAny},
		{"300-char label", strings.Repeat("a", 300) + ".com", "", "", errWantAny},
		{"254-char name", strings.Repeat(long63+".", 3) + strings.Repeat("a", 62), "", "", errWantAny},
		{"invalid punycode", "xn--zz", "", "", errWantAny},
		{"invalid punycode label", "xn--zz.com", "", "", errWantAny},
		{"empty punycode", "xn--.com", "", "", errWantAny},
		{"punycode of ascii", "xn--abc-.com", "", "", errWantAny},
		{"punycode of mapped", "xn--8i7caa.com", "", "", errWantAny},
		{"zero width joiner", "exa\u200dmple.com", "", "", errWantAny},
		{"zero width non-joiner", "exa\u200cmple.com", "", "", errWantAny},
		{"bidi violation", "\u05d0a.com", "", "", errWantAny},
		{"space", "ex ample.com", "", "", errWantAny},
		{"percent left", "exa%mple.com", "", "", errWantAny},
		{"percent-encoded percent", "exa%25mple.com", "", "", errWantAny},
		{"percent-encoded nul", "example.com%00", "", "", errWantAny},
		{"percent-encoded slash", "example.com%2fevil", "", "", errWantAny},
		{"invalid utf-8 after decoding", "%ff.com", "", "", errWantAny},
		{"raw nul", "exa\x00mple.com", "", "", errWantAny},
		{"control", "exa\x01mple.com", "", "", errWantAny},
		{"delete", "exa\x7fmple.com", "", "", errWantAny},
		{"at", "user@example.com", "", "", errWantAny},
		{"slash", "example.com/x", "", "", errWantAny},
		{"backslash", "example.com\\x", "", "", errWantAny},
		{"port is not a host", "example.com:80", "", "", errWantAny},
		{"caret", "a^b.com", "", "", errWantAny},
		{"pipe", "a|b.com", "", "", errWantAny},
		{"hash", "a#b.com", "", "", errWantAny},
		{"question", "a?b.com", "", "", errWantAny},
		{"angle", "a<b.com", "", "", errWantAny},
		{"unassigned code point", "a\U000e0080.com", "", "", errWantAny},
		{"replacement char", "a\ufffd.com", "", "", errWantAny},
		{"invalid utf-8", "a\xff.com", "", "", errWantAny},

		// IPv4 in every form the WHATWG parser accepts.
		{"dotted", "127.0.0.1", "127.0.0.1", "127.0.0.1", nil},
		{"hex short", "0x7f.1", "127.0.0.1", "127.0.0.1", nil},
		{"octal", "0177.0.0.1", "127.0.0.1", "127.0.0.1", nil},
		{"decimal", "2130706433", "127.0.0.1", "127.0.0.1", nil},
		{"hex", "0x7f000001", "127.0.0.1", "127.0.0.1", nil},
		{"octal whole", "017700000001", "127.0.0.1", "127.0.0.1", nil},
		{"short", "127.1", "127.0.0.1", "127.0.0.1", nil},
		{"three parts", "127.0.1", "127.0.0.1", "127.0.0.1", nil},
		{"mixed", "0x7f.0.0x0.01", "127.0.0.1", "127.0.0.1", nil},
		{"upper hex", "0X7F.1", "127.0.0.1", "127.0.0.1", nil},
		{"zero padded octal", "127.000.000.001", "127.0.0.1", "127.0.0.1", nil},
		{"trailing dot", "127.0.0.1.", "127.0.0.1", "127.0.0.1", nil},
		{"empty hex", "0x", "0.0.0.0", "0.0.0.0", nil},
		{"zero", "0", "0.0.0.0", "0.0.0.0", nil},
		{"max", "4294967295", "255.255.255.255", "255.255.255.255", nil},
		{"short out of byte", "1.256", "1.0.1.0", "1.0.1.0", nil},
		{"percent-encoded ip", "%31%32%37.0.0.1", "127.0.0.1", "127.0.0.1", nil},
		{"fullwidth digits", "１２７.０.０.１", "127.0.0.1", "127.0.0.1", nil},
		{"ideographic dots", "127。0。0。1", "127.0.0.1", "127.0.0.1", nil},
		{"circled digits", "①②⑦.0.0.1", "127.0.0.1", "127.0.0.1", nil},
		{"encoded ideographic dot", "127.0.0.1%E3%80%82", "127.0.0.1", "127.0.0.1", nil},
		{"fullwidth hex", "０ｘ７ｆ.１", "127.0.0.1", "127.0.0.1", nil},
		{"metadata hex", "0xa9fea9fe", "169.254.169.254", "169.254.169.254", nil},

		// Rejected IPv4 forms: a host ending in a number must be an address.
		{"overflow", "0x100000000", "", "", errWantAny},
		{"overflow decimal", "4294967296", "", "", errWantAny},
		{"huge", "99999999999999999999999999", "", "", errWantAny},
		{"wraps to loopback in 64 bits", "18446744075840258049", "", "", errWantAny},
		{"hex wraps to loopback in 64 bits", "0x1000000007f000001", "", "", errWantAny},
		{"octal wraps to loopback in 64 bits", "02000000000017700000001", "", "", errWantAny},
		{"part wraps in 64 bits", "18446744073709551743.0.0.1", "", "", errWantAny},
		{"five parts", "1.2.3.4.5", "", "", errWantAny},
		{"part over 255", "256.0.0.1", "", "", errWantAny},
		{"last part over range", "1.2.3.256", "", "", errWantAny},
		{"ends in number", "foo.0x7f", "", "", errWantAny},
		{"ends in decimal", "foo.123", "", "", errWantAny},
		{"bad octal", "09.0.0.1", "", "", errWantAny},
		{"ends in bad octal", "foo.09", "", "", errWantAny},
		{"bad hex", "0xg.1", "", "", errWantAny},
		{"two trailing dots ip", "127.0.0.1..", "", "", errWantAny},
		{"empty part", "127..0.1", "", "", errWantAny},
		{"signed part", "+1.2.3.4", "", "", errWantAny},

		// Not a number at the end: a name.
		{"signed last part is a name", "1.2.3.-4", "1.2.3.-4", "", nil},
		{"plus last part is a name", "1.2.3.+4", "1.2.3.+4", "", nil},
		{"exponent is a name", "1e3", "1e3", "", nil},

		// IPv6.
		{"v6 bracketed", "[::1]", "::1", "::1", nil},
		{"v6 bare", "::1", "::1", "::1", nil},
		{"v6 long", "[0:0:0:0:0:0:0:1]", "::1", "::1", nil},
		{"v6 upper", "[2001:DB8::1]", "2001:db8::1", "2001:db8::1", nil},
		{"v6 mapped dotted", "[::ffff:127.0.0.1]", "127.0.0.1", "127.0.0.1", nil},
		{"v6 mapped hex", "[::ffff:7f00:1]", "127.0.0.1", "127.0.0.1", nil},
		{"v6 mapped bare", "::ffff:7f00:1", "127.0.0.1", "127.0.0.1", nil},
		{"v6 compatible", "[::127.0.0.1]", "::7f00:1", "::7f00:1", nil},
		{"v6 nat64", "[64:ff9b::127.0.0.1]", "64:ff9b::7f00:1", "64:ff9b::7f00:1", nil},
		{"v6 6to4", "[2002:7f00:1::]", "2002:7f00:1::", "2002:7f00:1::", nil},
		{"v6 zone", "[fe80::1%eth0]", "", "", errWantAny},
		{"v6 zone encoded", "[fe80::1%25eth0]", "", "", errWantAny},
		{"v6 zone bare", "fe80::1%eth0", "", "", errWantAny},
		{"v6 unclosed", "[::1", "", "", errWantAny},
		{"v6 double brackets", "[[::1]]", "", "", errWantAny},
		{"v6 trailing junk", "[::1]x", "", "", errWantAny},
		{"v6 with port", "[::1]:80", "", "", errWantAny},
		{"v6 percent-encoded", "[%3A%3A1]", "", "", errWantAny},
		{"v6 name", "[www.example.com]", "", "", errWantAny},
		{"v6 two compressions", "[1::2::3]", "", "", errWantAny},
		{"v6 too many pieces", "[1:2:3:4:5:6:7:8:9]", "", "", errWantAny},
		{"v6 too few pieces", "[1:2:3]", "", "", errWantAny},
		{"v6 five hex digits", "[12345::1]", "", "", errWantAny},
		{"v6 leading zero v4 part", "[::ffff:127.0.0.01]", "", "", errWantAny},
		{"v6 short v4", "[::ffff:127.0.1]", "", "", errWantAny},
		{"v6 empty", "[]", "", "", errWantAny},
		{"v6 fullwidth", "[：：１]", "", "", errWantAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, addr, err := CanonHost(tt.in)
			h, a, classes, cerr := CanonHostClasses(tt.in)
			if (cerr != nil) != (err != nil) || h != host || a != addr || err == nil && classes != NameClass(host) {
				t.Errorf("CanonHostClasses(%q) = %q, %v, %v, %v; CanonHost then NameClass say %q, %v, %v, %v", tt.in, h, a, classes, cerr, host, addr, NameClass(host), err)
			}
			if !checkWantErr(t, err, tt.wantErr) {
				return
			}
			var wantAddr netip.Addr
			if tt.wantAddr != "" {
				wantAddr = netip.MustParseAddr(tt.wantAddr)
			}
			if host != tt.wantHost || addr != wantAddr {
				t.Errorf("CanonHost(%q) = %q, %v; want %q, %v", tt.in, host, addr, tt.wantHost, wantAddr)
			}
			// Canonical output is a fixed point.
			host2, addr2, err := CanonHost(host)
			if err != nil || host2 != host || addr2 != addr {
				t.Errorf("CanonHost(%q) = %q, %v, %v; not a fixed point", host, host2, addr2, err)
			}
		})
	}
}

func TestNameClass(t *testing.T) {
	tests := []struct {
		name string
		host string
		want Class
	}{
		{"public", "example.com", Public},
		{"public idn", "xn--bcher-kva.de", Public},
		{"localhost", "localhost", Loopback},
		{"sub localhost", "a.localhost", Loopback},
		{"localhost.localdomain", "localhost.localdomain", Loopback},
		{"debian ip6-localhost", "ip6-localhost", Loopback},
		{"localhost as a label is not special", "localhost.example.com", Public},
		{"suffix without dot is not special", "notlocalhost", InternalName},
		{"single label", "intranet", InternalName},
		{"local", "printer.local", InternalName},
		{"internal", "db.internal", InternalName},
		{"lan", "nas.lan", InternalName},
		{"home.arpa", "router.home.arpa", InternalName},
		{"corp", "wiki.corp", InternalName},
		{"intranet", "hr.intranet", InternalName},
		{"localdomain", "box.localdomain", InternalName},
		{"kubernetes service", "api.default.svc", InternalName},
		{"kubernetes cluster.local", "api.default.svc.cluster.local", InternalName},
		{"corp as a label is not special", "corp.example.com", Public},
		{"internal inside a name", "internal.example.com", Public},
		{"metadata google", "metadata.google.internal", Metadata | InternalName},
		{"metadata goog", "metadata.goog", Metadata},
		{"metadata bare", "metadata", Metadata | InternalName},
		{"metadata aws", "instance-data", Metadata | InternalName},
		{"metadata aws ec2", "instance-data.ec2.internal", Metadata | InternalName},
		{"upper case tolerated", "LOCALHOST", Loopback},
		{"trailing dot tolerated", "metadata.google.internal.", Metadata | InternalName},
		{"ip literal is classed as an address", "127.0.0.1", Loopback},
		{"v6 literal is classed as an address", "::1", Loopback},
		{"empty", "", InternalName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NameClass(tt.host); got != tt.want {
				t.Errorf("NameClass(%q) = %v, want %v", tt.host, got, tt.want)
			}
		})
	}
}

func TestFromHost(t *testing.T) {
	netHost := func(host string, port uint16, addr string, cls Class) Capability {
		c := Capability{Kind: NetConnect, Host: host, Port: port, Classes: cls}
		if addr != "" {
			c.Addr = netip.MustParseAddr(addr)
		}
		return c
	}
	tests := []struct {
		name    string
		in      string
		want    Capability
		wantErr error
	}{
		{"name", "example.com", netHost("example.com", 0, "", Public), nil},
		{"name port", "example.com:443", netHost("example.com", 443, "", Public), nil},
		{"name port leading zeros", "example.com:0443", netHost("example.com", 443, "", Public), nil},
		{"upper trailing dot", "EXAMPLE.COM.:22", netHost("example.com", 22, "", Public), nil},
		{"localhost", "localhost:6379", netHost("localhost", 6379, "", Loopback), nil},
		{"localhost trailing dot", "localhost.", netHost("localhost", 0, "", Loopback), nil},
		{"ipv6 port leading zero", "[::1]:080", netHost("::1", 80, "::1", Loopback), nil},
		{"ipv4", "10.0.0.1:5432", netHost("10.0.0.1", 5432, "10.0.0.1", Private), nil},
		{"ipv4 short hex", "0x7f.1:22", netHost("127.0.0.1", 22, "127.0.0.1", Loopback), nil},
		{"ipv4 decimal", "2130706433", netHost("127.0.0.1", 0, "127.0.0.1", Loopback), nil},
		{"ipv6 bracketed", "[::1]", netHost("::1", 0, "::1", Loopback), nil},
		{"ipv6 bracketed port", "[::1]:22", netHost("::1", 22, "::1", Loopback), nil},
		{"ipv6 mapped", "[::ffff:169.254.169.254]:80", netHost("169.254.169.254", 80, "169.254.169.254", LinkLocal|Metadata), nil},
		{"ipv6 bare", "::1", netHost("::1", 0, "::1", Loopback), nil},
		{"ipv6 bare unambiguous", "2001:db8::1", netHost("2001:db8::1", 0, "2001:db8::1", Documentation), nil},
		{"fullwidth", "ｌｏｃａｌｈｏｓｔ:80", netHost("localhost", 80, "", Loopback), nil},
		{"metadata name", "metadata.google.internal:80", netHost("metadata.google.internal", 80, "", Metadata|InternalName), nil},

		{"ipv6 bare with port-like tail", "::1:80", Capability{}, ErrAmbiguous},
		{"ipv6 bare link-local with port-like tail", "fe80::1:22", Capability{}, ErrAmbiguous},
		{"empty", "", Capability{}, errWantAny},
		{"empty port", "example.com:", Capability{}, errWantAny},
		{"port zero", "example.com:0", Capability{}, errWantAny},
		{"port too big", "example.com:65536", Capability{}, errWantAny},
		{"port huge", "example.com:99999999999999999999", Capability{}, errWantAny},
		{"port not digits", "example.com:8o", Capability{}, errWantAny},
		{"port signed", "example.com:+80", Capability{}, errWantAny},
		{"no host", ":80", Capability{}, errWantAny},
		{"url", "http://example.com", Capability{}, errWantAny},
		{"userinfo", "user@example.com", Capability{}, errWantAny},
		{"path", "example.com/x", Capability{}, errWantAny},
		{"space", " example.com", Capability{}, errWantAny},
		{"percent", "exam%70le.com", Capability{}, errWantAny},
		{"ipv6 junk after bracket", "[::1]x", Capability{}, errWantAny},
		{"ipv6 empty port", "[::1]:", Capability{}, errWantAny},
		{"ipv6 zone", "[fe80::1%eth0]:80", Capability{}, errWantAny},
		{"ipv4 overflow", "0x100000000:80", Capability{}, errWantAny},
		{"two ports", "example.com:80:81", Capability{}, errWantAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromHost(tt.in)
			if !checkWantErr(t, err, tt.wantErr) {
				return
			}
			if diff := cmp.Diff(tt.want, got, netipAddrCmp); diff != "" {
				t.Errorf("FromHost(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// TestHostParserWPT runs the web-platform-tests toascii cases (copied from
// wpt/url/resources/toascii.json, BSD-3-Clause) through the spec host
// parser, before aegis's stricter rules.
func TestHostParserWPT(t *testing.T) {
	data, err := os.ReadFile("testdata/host_wpt_toascii.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Input  string  `json:"input"`
		Output *string `json:"output"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		h, err := parseHost(c.Input, false)
		switch {
		case c.Output == nil && err == nil:
			t.Errorf("parseHost(%q) = %q, want failure", c.Input, h.text)
		case c.Output != nil && err != nil:
			t.Errorf("parseHost(%q): %v, want %q", c.Input, err, *c.Output)
		case c.Output != nil && h.text != *c.Output:
			t.Errorf("parseHost(%q) = %q, want %q", c.Input, h.text, *c.Output)
		}
	}
}

func FuzzCanonHost(f *testing.F) {
	for _, s := range []string{
		"example.com", "EXAMPLE.com.", "0x7f.1", "0177.0.0.1", "2130706433", "127.1",
		"[::ffff:127.0.0.1]", "::1", "[fe80::1%25eth0]", "ｅｘａｍｐｌｅ.com", "１２７.０.０.１",
		"127。0。0。1", "xn--nxasmq6b.com", "xn--zz", "bücher.de", "%31%32%37.0.0.1",
		"1.2.3.4.5", "foo.0x7f", "a\u200db", "exa\u00admple", "[64:ff9b::7f00:1]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		// net/netip is a naive reference for the IPv6 parser: without zones
		// the two accept the same texts as the same addresses.
		if strings.IndexByte(raw, '%') < 0 {
			a1, err1 := parseIPv6(raw)
			a2, err2 := netip.ParseAddr(raw)
			if !(err2 == nil && a2.Is4()) && ((err1 == nil) != (err2 == nil) || err1 == nil && a1 != a2) {
				t.Fatalf("IPv6 %q: parser %v %v, net/netip %v %v", raw, a1, err1, a2, err2)
			}
		}
		host, addr, err := CanonHost(raw)
		if err != nil {
			return
		}
		if host == "" {
			t.Fatalf("CanonHost(%q) accepted with an empty host", raw)
		}
		host2, addr2, err := CanonHost(host)
		if err != nil {
			t.Fatalf("CanonHost(%q) = %q, but CanonHost(%q): %v", raw, host, host, err)
		}
		if host2 != host || addr2 != addr {
			t.Fatalf("CanonHost(%q) = %q %v, CanonHost of that = %q %v", raw, host, addr, host2, addr2)
		}
		if addr.IsValid() {
			if addr.Is4In6() || addr.Zone() != "" || addr.String() != host {
				t.Fatalf("CanonHost(%q) = %q with address %v", raw, host, addr)
			}
		} else {
			if _, err := netip.ParseAddr(host); err == nil {
				t.Fatalf("CanonHost(%q) = %q, a name that parses as an address", raw, host)
			}
			if len(host) > 253 || strings.HasSuffix(host, ".") {
				t.Fatalf("CanonHost(%q) = %q, not a canonical name", raw, host)
			}
			for i := 0; i < len(host); i++ {
				if c := host[i]; c <= ' ' || c >= 0x7f || 'A' <= c && c <= 'Z' || isForbiddenDomain(c) {
					t.Fatalf("CanonHost(%q) = %q, byte %q not allowed", raw, host, c)
				}
			}
		}
		// A bare host accepted as an argument must name the same thing.
		if !strings.ContainsAny(raw, "%[]:") {
			c, err := FromHost(raw)
			if err == nil && (c.Host != host || c.Addr != addr) {
				t.Fatalf("FromHost(%q) = %q %v, CanonHost = %q %v", raw, c.Host, c.Addr, host, addr)
			}
		}
	})
}

// TestPlainHost checks which hosts take CanonHost's and NameClass's fast
// path; FuzzPlainHost checks that the fast path agrees with the full one.
func TestPlainHost(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		plain bool
	}{
		{"name", "api.github.com", true},
		{"single label", "intranet", true},
		{"hyphens", "a-b.c-d", true},
		{"digits inside", "a1.b2c", true},
		{"63-byte label", strings.Repeat("a", 63) + ".com", true},
		{"253 bytes", strings.Repeat("a.", 126) + "b", true},
		{"empty", "", false},
		{"upper case", "API.github.com", false},
		{"trailing dot", "x.com.", false},
		{"leading dot", ".x.com", false},
		{"empty label", "x..com", false},
		{"64-byte label", strings.Repeat("a", 64) + ".com", false},
		{"254 bytes", strings.Repeat("a.", 126) + "bc", false},
		{"punycode", "xn--nxasmq6b.com", false},
		{"punycode later", "a.xn--nxasmq6b", false},
		{"ends in digit label", "foo.1", false},
		{"ends in hex", "foo.0x7f", false},
		{"ipv4", "127.0.0.1", false},
		{"ends in hyphen label", "foo.-a", false},
		{"underscore", "a_b.com", false},
		{"percent", "a%2eb", false},
		{"colon", "::1", false},
		{"bracket", "[::1]", false},
		{"space", "a b", false},
		{"non-ascii", "bücher.de", false},
		{"fullwidth", "ｅｘａｍｐｌｅ.com", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := plainHost(tt.in); got != tt.plain {
				t.Fatalf("plainHost(%q) = %v, want %v", tt.in, got, tt.plain)
			}
			checkPlainHost(t, tt.in)
		})
	}
}

// checkPlainHost fails if s is plain and the full paths of CanonHost or
// NameClass say otherwise than the fast ones.
func checkPlainHost(t *testing.T, s string) {
	t.Helper()
	if !plainHost(s) {
		return
	}
	host, addr, err := canonHost(s)
	if err != nil || host != s || addr.IsValid() {
		t.Fatalf("plainHost(%q), but canonHost = %q, %v, %v", s, host, addr, err)
	}
	if fast, full := nameClass(s), anyNameClass(s); fast != full {
		t.Fatalf("plainHost(%q): nameClass = %v, anyNameClass = %v", s, fast, full)
	}
}

func FuzzPlainHost(f *testing.F) {
	for _, s := range []string{"api.github.com", "x.com.", "foo.0x7f", "a.xn--b", "localhost", "metadata.google.internal", "a-.b", "-.a"} {
		f.Add(s)
	}
	f.Fuzz(checkPlainHost)
}

// FuzzCanonHostClasses holds CanonHostClasses to CanonHost then NameClass.
func FuzzCanonHostClasses(f *testing.F) {
	for _, s := range []string{"api.github.com", "API.GitHub.com.", "0x7f.1", "[::1]", "::ffff:10.0.0.1", "bücher.de", "metadata.google.internal",
		"localhost.", "x.local", "169.254.169.254", "a..b", "", "xn--a.com", "foo.home.arpa", "METADATA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		host, addr, classes, err := CanonHostClasses(raw)
		wantHost, wantAddr, wantErr := CanonHost(raw)
		if (err != nil) != (wantErr != nil) || host != wantHost || addr != wantAddr {
			t.Fatalf("CanonHostClasses(%q) = %q, %v, %v; CanonHost = %q, %v, %v", raw, host, addr, err, wantHost, wantAddr, wantErr)
		}
		if err == nil && classes != NameClass(host) {
			t.Fatalf("CanonHostClasses(%q) classes = %v, NameClass(%q) = %v", raw, classes, host, NameClass(host))
		}
	})
}

// plainHostRef is plainHost as it was written before plainHostPrefix: the
// reference the one-pass scan is held to.
func plainHostRef(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || strings.HasPrefix(l, "xn--") {
			return false
		}
		for i := 0; i < len(l); i++ {
			if b := l[i]; !('a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-') {
				return false
			}
		}
	}
	last := labels[len(labels)-1]
	return last[0] > '9'
}

// checkPlainHostPrefix fails if plainHostPrefix or plainHost disagree with
// plainHostRef on s.
func checkPlainHostPrefix(t *testing.T, s string) {
	t.Helper()
	if got, want := plainHost(s), plainHostRef(s); got != want {
		t.Fatalf("plainHost(%q) = %v, reference %v", s, got, want)
	}
	m := 0
	for m < len(s) && ('a' <= s[m] && s[m] <= 'z' || '0' <= s[m] && s[m] <= '9' || s[m] == '-' || s[m] == '.') {
		m++
	}
	n, ok := plainHostPrefix(s)
	switch want := plainHostRef(s[:m]); {
	case ok != want:
		t.Fatalf("plainHostPrefix(%q) = %d, %v; reference says %q is plain: %v", s, n, ok, s[:m], want)
	case ok && n != m:
		t.Fatalf("plainHostPrefix(%q) = %d, true; want %d", s, n, m)
	}
}

func TestPlainHostPrefix(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"name", "api.github.com"},
		{"name then path", "api.github.com/a"},
		{"name then port", "x.com:443"},
		{"dot then path", "x.com./"},
		{"empty label", "a..b/"},
		{"leading dot", ".a"},
		{"punycode", "xn--a.com/"},
		{"punycode last", "a.xn--b"},
		{"numeric last", "a.1/"},
		{"numeric name", "127.0.0.1"},
		{"upper case stops", "aPI.com"},
		{"label 63", strings.Repeat("a", 63) + ".b/"},
		{"label 64", strings.Repeat("a", 64) + ".b/"},
		{"253 bytes", strings.Repeat("a.", 126) + "b/"},
		{"254 bytes", strings.Repeat("a.", 126) + "bc/"},
		{"long then stop", strings.Repeat("a", 300) + "?"},
		{"hyphens", "-.a-"},
		{"underscore", "a_b.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkPlainHostPrefix(t, tt.in) })
	}
}

func FuzzPlainHostPrefix(f *testing.F) {
	for _, s := range []string{"api.github.com/x", "x.com.:1", "a..b", "xn--a.b", "a.1", strings.Repeat("a.", 127), "A.b"} {
		f.Add(s)
	}
	f.Fuzz(checkPlainHostPrefix)
}

func BenchmarkCanonHost(b *testing.B) {
	for _, in := range []string{"api.github.com", "API.GitHub.com.", "0x7f.1", "[2001:db8::1]", "bücher.de"} {
		b.Run(in, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := CanonHost(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
