package egress

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // a substring of the error, naming the field
	}{
		{"unknown scheme", Config{Schemes: []string{"https", "javascript"}}, `schemes[1]: "javascript"`},
		{"file scheme", Config{Schemes: []string{"file"}}, `schemes[0]: "file"`},
		{"uppercase scheme", Config{Schemes: []string{"HTTPS"}}, `schemes[0]: "HTTPS"`},
		{"empty scheme", Config{Schemes: []string{""}}, `schemes[0]`},
		{"duplicate scheme", Config{Schemes: []string{"https", "https"}}, `schemes[1]: "https" is listed twice`},
		{"unknown class", Config{Block: []string{"loopback", "privat"}}, `block[1]: unknown address class "privat"`},
		{"block public", Config{Block: []string{"public"}}, `block[0]: "public"`},
		{"empty wildcard", Config{AllowHosts: []string{"*."}}, `allow_hosts[0]: "*."`},
		{"bare star", Config{AllowHosts: []string{"*"}}, `allow_hosts[0]: "*"`},
		{"inner star", Config{AllowHosts: []string{"a.*.example"}}, `allow_hosts[0]: "a.*.example"`},
		{"star without dot", Config{AllowHosts: []string{"*example.com"}}, `allow_hosts[0]: "*example.com"`},
		{"double star", Config{AllowHosts: []string{"*.*.example.com"}}, `allow_hosts[0]`},
		{"wildcard over address", Config{AllowHosts: []string{"*.10.0.0.1"}}, `allow_hosts[0]: "*.10.0.0.1"`},
		{"cidr host bits", Config{AllowHosts: []string{"10.0.0.5/24"}}, `allow_hosts[0]: "10.0.0.5/24" has host bits set (did you mean 10.0.0.0/24?)`},
		{"cidr garbage", Config{AllowHosts: []string{"10.0.0.0/33"}}, `allow_hosts[0]: "10.0.0.0/33"`},
		{"cidr zone", Config{AllowHosts: []string{"fe80::%eth0/64"}}, `allow_hosts[0]`},
		{"cidr mapped", Config{AllowHosts: []string{"::ffff:10.0.0.0/104"}}, `allow_hosts[0]: "::ffff:10.0.0.0/104"`},
		{"port in host", Config{AllowHosts: []string{"example.com:443"}}, `allow_hosts[0]: "example.com:443"`},
		{"url in host", Config{AllowHosts: []string{"https://example.com/"}}, `allow_hosts[0]`},
		{"empty host", Config{AllowHosts: []string{""}}, `allow_hosts[0]: empty`},
		{"space in host", Config{AllowHosts: []string{"ex ample.com"}}, `allow_hosts[0]`},
		{"empty label", Config{AllowHosts: []string{"a..example.com"}}, `allow_hosts[0]`},
		{"admit without hosts", Config{Admit: []Admit{{Classes: []string{"private"}}}}, `admit[0].hosts: empty`},
		{"admit without classes", Config{Admit: []Admit{{Hosts: []string{"10.0.0.0/8"}}}}, `admit[0].classes: empty`},
		{"admit bad host", Config{Admit: []Admit{{Hosts: []string{"10.0.0.0/8"}, Classes: []string{"private"}}, {Hosts: []string{"ok.example", "*"}, Classes: []string{"private"}}}}, `admit[1].hosts[1]: "*"`},
		{"admit bad class", Config{Admit: []Admit{{Hosts: []string{"10.0.0.0/8"}, Classes: []string{"privte"}}}}, `admit[0].classes[0]: unknown address class "privte"`},
		{"admit public", Config{Admit: []Admit{{Hosts: []string{"10.0.0.0/8"}, Classes: []string{"public"}}}}, `admit[0].classes[0]: "public"`},
		{"admit unblocked class", Config{Block: []string{"loopback"}, Admit: []Admit{{Hosts: []string{"10.0.0.0/8"}, Classes: []string{"private"}}}}, `admit[0].classes[0]: "private" is not blocked`},
		{"hosts key is address", Config{Hosts: map[string][]string{"10.0.0.1": {"10.0.0.2"}}}, `hosts["10.0.0.1"]: an address`},
		{"hosts key wildcard", Config{Hosts: map[string][]string{"*.example.com": {"10.0.0.2"}}}, `hosts["*.example.com"]`},
		{"hosts key bad", Config{Hosts: map[string][]string{"a b": {"10.0.0.2"}}}, `hosts["a b"]`},
		{"hosts duplicate after canonicalising", Config{Hosts: map[string][]string{"Example.com": {"10.0.0.2"}, "example.com.": {"10.0.0.3"}}}, `hosts["example.com."]: same name as hosts["Example.com"]`},
		{"hosts bad address", Config{Hosts: map[string][]string{"a.example": {"10.0.0.1", "10.0.0.256"}}}, `hosts["a.example"][1]: "10.0.0.256"`},
		{"hosts address with zone", Config{Hosts: map[string][]string{"a.example": {"fe80::1%eth0"}}}, `hosts["a.example"][0]: "fe80::1%eth0"`},
		{"hosts address short form", Config{Hosts: map[string][]string{"a.example": {"127.1"}}}, `hosts["a.example"][0]: "127.1"`},
		{"unknown resolver", Config{Resolver: "dns"}, `resolver: "dns"`},
		{"unknown on_resolve_error", Config{OnResolveError: "allow"}, `on_resolve_error: "allow" (want deny or allow-unchecked)`},
		{"negative timeout", Config{ResolveTimeout: -time.Second}, `resolve_timeout: -1s`},
		{"negative cache ttl", Config{CacheTTL: -time.Second}, `cache_ttl`},
		{"negative cache size", Config{CacheTTL: time.Second, CacheSize: -1}, `cache_size`},
		{"cache size without ttl", Config{CacheSize: 10}, `cache_size: set without cache_ttl`},
		{"static with cache", Config{Resolver: "static", CacheTTL: time.Second}, `cache_ttl: the static resolver`},
		{"nameserver a name", Config{Nameserver: "dns.example:53"}, `nameserver: "dns.example:53" is not an IP address`},
		{"nameserver a name without port", Config{Nameserver: "localhost"}, `nameserver: "localhost" is not an IP address`},
		{"nameserver port zero", Config{Nameserver: "127.0.0.1:0"}, `nameserver: "127.0.0.1:0" has port 0`},
		{"nameserver port too big", Config{Nameserver: "127.0.0.1:65536"}, `nameserver: "127.0.0.1:65536"`},
		{"nameserver bad port", Config{Nameserver: "127.0.0.1:dns"}, `nameserver: "127.0.0.1:dns"`},
		{"nameserver empty port", Config{Nameserver: "127.0.0.1:"}, `nameserver: "127.0.0.1:"`},
		{"nameserver unbracketed v6 with port", Config{Nameserver: "::1:53"}, `nameserver: "::1:53" is ambiguous`},
		{"nameserver unbracketed v6", Config{Nameserver: "::1"}, `nameserver: "::1" is ambiguous`},
		{"nameserver brackets around v4", Config{Nameserver: "[127.0.0.1]:53"}, `nameserver: "[127.0.0.1]:53"`},
		{"nameserver zone", Config{Nameserver: "[fe80::1%eth0]:53"}, `nameserver: "[fe80::1%eth0]:53" has a zone`},
		{"nameserver short ipv4", Config{Nameserver: "127.1"}, `nameserver: "127.1" is not an IP address`},
		{"nameserver url", Config{Nameserver: "udp://127.0.0.1:53"}, `nameserver: "udp://127.0.0.1:53"`},
		{"nameserver unspecified", Config{Nameserver: "0.0.0.0:53"}, `nameserver: "0.0.0.0:53" is the unspecified address`},
		{"nameserver spaces", Config{Nameserver: " 127.0.0.1"}, `nameserver: " 127.0.0.1"`},
		{"static with nameserver", Config{Resolver: "static", Nameserver: "127.0.0.1"}, `nameserver: the static resolver asks no nameserver`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(&tt.cfg)
			if err == nil {
				t.Fatalf("New accepted %+v", tt.cfg)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	for _, cfg := range []*Config{nil, {}} {
		ch, err := New(cfg)
		if err != nil {
			t.Fatalf("New(%v): %v", cfg, err)
		}
		got := struct {
			Schemes      []string
			Block        string
			AllowUncheck bool
			Resolver     string
		}{ch.schemeList(), ch.block.String(), ch.allowUnchecked, ch.resolver.String()}
		want := struct {
			Schemes      []string
			Block        string
			AllowUncheck bool
			Resolver     string
		}{
			[]string{"http", "https"},
			"loopback|private|link-local|cgnat|multicast|broadcast|unspecified|reserved|benchmarking|documentation|metadata|embedded|internal-name",
			false,
			"system(timeout 5s)",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("defaults (-want +got):\n%s", diff)
		}
	}
}

func TestNewResolverShape(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"system", Config{}, "system(timeout 5s)"},
		{"system with table", Config{Hosts: map[string][]string{"a.example": {"10.0.0.1"}}}, "chain(static(1 names), system(timeout 5s))"},
		{"system with cache", Config{ResolveTimeout: time.Second, CacheTTL: time.Minute}, "cache(system(timeout 1s), ttl 1m0s, size 1024)"},
		{"table then cached system", Config{Hosts: map[string][]string{"a.example": {}}, CacheTTL: time.Minute, CacheSize: 8}, "chain(static(1 names), cache(system(timeout 5s), ttl 1m0s, size 8))"},
		{"static", Config{Resolver: "static"}, "static(0 names)"},
		{"nameserver", Config{Nameserver: "127.0.0.1:5353"}, "system(timeout 5s, nameserver 127.0.0.1:5353)"},
		{"nameserver default port", Config{Nameserver: "10.0.0.53"}, "system(timeout 5s, nameserver 10.0.0.53:53)"},
		{"nameserver ipv6", Config{Nameserver: "[::1]:5353"}, "system(timeout 5s, nameserver [::1]:5353)"},
		{"nameserver ipv6 default port", Config{Nameserver: "[::1]"}, "system(timeout 5s, nameserver [::1]:53)"},
		{"nameserver mapped", Config{Nameserver: "[::ffff:127.0.0.1]:53"}, "system(timeout 5s, nameserver 127.0.0.1:53)"},
		{"table, cached nameserver", Config{Hosts: map[string][]string{"a.example": {}}, Nameserver: "127.0.0.1", CacheTTL: time.Minute}, "chain(static(1 names), cache(system(timeout 5s, nameserver 127.0.0.1:53), ttl 1m0s, size 1024))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := New(&tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := ch.resolver.String(); got != tt.want {
				t.Errorf("resolver = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestParsePattern(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"example.com", "example.com"},
		{"EXAMPLE.com.", "example.com"},
		{"*.Example.COM.", "*.example.com"},
		{"*.bücher.example", "*.xn--bcher-kva.example"},
		{"bücher。example", "xn--bcher-kva.example"},
		{"10.0.0.5", "10.0.0.5/32"},
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"::1", "::1/128"},
		{"[::1]", "::1/128"},
		{"::ffff:10.0.0.5", "10.0.0.5/32"},
		{"fd00::/8", "fd00::/8"},
		{"0.0.0.0/0", "0.0.0.0/0"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := parsePattern(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.String(); got != tt.want {
				t.Errorf("parsePattern(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzParsePattern checks that the host-pattern parser never panics, that a
// pattern's text parses back to the same pattern, and that a name pattern
// matches what it says: an exact name itself, a wildcard the names strictly
// under its suffix.
func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{
		"example.com", "*.corp.example", "10.0.0.0/8", "::1", "*.", "*", "a.*.b", "[::1]",
		"10.0.0.5/24", "*.bücher.example", "0x7f.1", "fe80::%eth0/64", "::ffff:10.0.0.0/104",
		"*.xn--bcher-kva.example", "%2e", "a..b", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePattern(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		text := p.String()
		p2, err := parsePattern(text)
		if err != nil {
			t.Fatalf("parsePattern(%q) = %q, which does not parse: %v", s, text, err)
		}
		if p2 != p {
			t.Fatalf("parsePattern(%q) = %+v, but its text %q parses to %+v", s, p, text, p2)
		}
		switch {
		case p.prefix.IsValid():
			if !p.matches("", p.prefix.Addr()) {
				t.Fatalf("%q does not match its own first address", text)
			}
			if p.matches(p.prefix.Addr().String(), netip.Addr{}) {
				t.Fatalf("address pattern %q matches a name", text)
			}
		case p.wildcard:
			if !p.matches("x."+p.name, netip.Addr{}) {
				t.Fatalf("%q does not match x.%s", text, p.name)
			}
			if p.matches(p.name, netip.Addr{}) || p.matches("x"+p.name, netip.Addr{}) {
				t.Fatalf("%q matches its apex or a longer label", text)
			}
		default:
			if !p.matches(p.name, netip.Addr{}) || p.matches("x."+p.name, netip.Addr{}) {
				t.Fatalf("exact %q is not exact", text)
			}
		}
	})
}

// FuzzNew feeds arbitrary strings to every field of Config: New must
// return a Checker or an error naming a field, never panic.
func FuzzNew(f *testing.F) {
	f.Add("https", "loopback", "*.corp.example", "10.0.0.0/8", "private", "a.example", "10.0.0.1", "static", "deny", "")
	f.Add("", "", "", "", "", "", "", "", "", "")
	f.Add("ftp", "public", "*", "::/0", "metadata", "1.2.3.4", "::ffff:1.2.3.4", "system", "allow-unchecked", "[::1]:53")
	f.Fuzz(func(t *testing.T, scheme, block, allow, admitHost, admitClass, name, addr, resolver, onErr, nameserver string) {
		cfg := Config{
			Schemes:        []string{scheme},
			Block:          []string{block},
			AllowHosts:     []string{allow},
			Admit:          []Admit{{Hosts: []string{admitHost}, Classes: []string{admitClass}}},
			Hosts:          map[string][]string{name: {addr}},
			Resolver:       resolver,
			OnResolveError: onErr,
			Nameserver:     nameserver,
		}
		ch, err := New(&cfg)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, "schemes") && !strings.Contains(msg, "block") &&
				!strings.Contains(msg, "allow_hosts") && !strings.Contains(msg, "admit") &&
				!strings.Contains(msg, "hosts[") && !strings.Contains(msg, "resolver") &&
				!strings.Contains(msg, "on_resolve_error") && !strings.Contains(msg, "nameserver") {
				t.Fatalf("error names no field: %v", err)
			}
			return
		}
		if ch == nil {
			t.Fatal("nil Checker without error")
		}
	})
}

// FuzzParseNameserver: an accepted nameserver is a usable address (no
// zone, not unspecified, unmapped, a port) that reads back the same from
// its own spelling; nothing panics.
func FuzzParseNameserver(f *testing.F) {
	for _, s := range []string{"127.0.0.1:5353", "10.0.0.53", "[::1]:53", "[::1]", "::1:53", "[fe80::1%eth0]:53", "[::ffff:127.0.0.1]", "0.0.0.0", "127.0.0.1:0", "[127.0.0.1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ap, err := parseNameserver(s)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("error does not quote the value: %v", err)
			}
			return
		}
		a := ap.Addr()
		if !a.IsValid() || a.Zone() != "" || a.IsUnspecified() || a.Is4In6() || ap.Port() == 0 {
			t.Fatalf("parseNameserver(%q) = %v", s, ap)
		}
		again, err := parseNameserver(ap.String())
		if err != nil || again != ap {
			t.Fatalf("parseNameserver(%q) = %v, which reads back as %v, %v", s, ap, again, err)
		}
	})
}

// TestSchemeAllowed holds schemeAllowed, which reads http and https from
// fields, to the scheme set New builds.
func TestSchemeAllowed(t *testing.T) {
	tests := []struct {
		name    string
		schemes []string
	}{
		{"default", nil},
		{"https only", []string{"https"}},
		{"http only", []string{"http"}},
		{"ws and ftp", []string{"ws", "ftp"}},
		{"all", []string{"ftp", "wss", "ws", "https", "http"}},
	}
	probes := []string{"http", "https", "ws", "wss", "ftp", "HTTP", "Https", "http ", "", "file", "javascript", "httpss"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := New(&Config{Schemes: tt.schemes})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range probes {
				if got, want := ch.schemeAllowed(s), ch.schemes[s]; got != want {
					t.Errorf("schemeAllowed(%q) = %v, the scheme set says %v", s, got, want)
				}
			}
			if want := len(tt.schemes) == 0 || slices.Contains(tt.schemes, "https"); ch.schemeAllowed("https") != want {
				t.Errorf("schemeAllowed(https) = %v, want %v", !want, want)
			}
		})
	}
}
