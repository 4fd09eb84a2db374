package egress

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// table is the static hosts table of the tests. Every resolution in this
// package's tests goes through it: no test asks real DNS.
var table = map[string][]string{
	"public.example.com":   {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
	"mixed.example.com":    {"93.184.215.14", "10.0.0.1"},            // public + private: rebinding
	"mixed6.example.com":   {"93.184.215.14", "fd12:3456::1"},        // public A + private AAAA
	"mapped.example.com":   {"::ffff:127.0.0.1"},                     // IPv4-mapped loopback
	"nat64.example.com":    {"64:ff9b::a9fe:a9fe"},                   // NAT64 of 169.254.169.254
	"nat64pub.example.com": {"64:ff9b::5db8:d70e"},                   // NAT64 of a public address
	"zero.example.com":     {"0.0.0.0"},                              // reaches the local host on Linux
	"zero6.example.com":    {"::"},                                   // same, IPv6
	"empty.example.com":    {},                                       // an empty answer
	"meta6.example.com":    {"fd00:ec2::254"},                        // AWS IMDS over IPv6: private and metadata
	"ll.example.com":       {"fe80::1"},                              // link-local
	"cgnat.example.com":    {"100.64.1.1"},                           // CGNAT
	"mcast.example.com":    {"224.0.0.251"},                          // multicast
	"teredo.example.com":   {"2001:0:4136:e378:8000:63bf:80ff:fffe"}, // Teredo of 127.0.0.1
	"6to4.example.com":     {"2002:a9fe:a9fe::1"},                    // 6to4 of 169.254.169.254
	"db.example.com":       {"10.0.0.5"},
	"db2.example.com":      {"10.0.0.5", "10.0.0.6"},
	"db6.example.com":      {"10.0.0.6"},
	"www.corp.example":     {"93.184.215.14"},
	"a.b.corp.example":     {"93.184.215.14"},
	"corp.example":         {"93.184.215.14"},
	"evilcorp.example":     {"93.184.215.14"},
	"shop.bücher.example":  {"93.184.215.14"},
	"git.corp.example":     {"10.1.2.3"},
	"localhost":            {"127.0.0.1"},
}

func mustChecker(t testing.TB, cfg Config) *Checker {
	t.Helper()
	if cfg.Hosts == nil {
		cfg.Hosts = table
	}
	if cfg.Resolver == "" {
		cfg.Resolver = "static"
	}
	ch, err := New(&cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ch
}

// capOf derives the capability the gateway would: a URL or a bare host.
func capOf(t testing.TB, arg string) capability.Capability {
	t.Helper()
	c, err := capability.FromURL(arg)
	if err != nil {
		if c, err = capability.FromHost(arg); err != nil {
			t.Fatalf("no capability for %q: %v", arg, err)
		}
	}
	return c
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// got is the part of a Verdict the tables compare.
type got struct {
	Allow   bool
	Reason  Reason
	Addr    string
	Classes string
	Addrs   []string
}

func summarise(v Verdict) got {
	g := got{Allow: v.Allow, Reason: v.Reason, Classes: v.Classes.String()}
	for _, a := range v.Addrs {
		g.Addrs = append(g.Addrs, a.String())
	}
	if v.Addr.IsValid() {
		g.Addr = v.Addr.String()
	}
	return g
}

func deny(r Reason, addr string, c capability.Class) got {
	return got{Reason: r, Addr: addr, Classes: c.String()}
}

func allow(as ...string) got {
	return got{Allow: true, Reason: Allowed, Classes: "none", Addrs: as}
}

// admitted is an allowed verdict that an admission opened classes for.
func admitted(c capability.Class, as ...string) got {
	return got{Allow: true, Reason: Allowed, Classes: c.String(), Addrs: as}
}

func TestCheck(t *testing.T) {
	const pub = "93.184.215.14"
	corp := Config{
		AllowHosts: []string{"*.corp.example"},
		Admit:      []Admit{{Hosts: []string{"*.corp.example"}, Classes: []string{"internal-name"}}},
	}
	tests := []struct {
		name string
		cfg  Config
		arg  string
		want got
	}{
		// Default policy: only public addresses.
		{"public name", Config{}, "https://public.example.com/x", allow(pub, "2606:2800:21f:cb07:6820:80da:af6b:8b2c")},
		{"public literal", Config{}, "https://93.184.215.14/", allow(pub)},
		{"bare host", Config{}, "public.example.com:22", allow(pub, "2606:2800:21f:cb07:6820:80da:af6b:8b2c")},

		// Mixed answers: one bad address denies the whole call.
		{"public and private", Config{}, "http://mixed.example.com/", deny(BlockedAddress, "10.0.0.1", capability.Private)},
		{"public A private AAAA", Config{}, "http://mixed6.example.com/", deny(BlockedAddress, "fd12:3456::1", capability.Private)},

		// Every literal and resolved form of an internal address.
		{"mapped loopback answer", Config{}, "http://mapped.example.com/", deny(BlockedAddress, "127.0.0.1", capability.Loopback)},
		{"nat64 metadata answer", Config{}, "http://nat64.example.com/", deny(BlockedAddress, "64:ff9b::a9fe:a9fe", capability.Embedded|capability.LinkLocal|capability.Metadata)},
		{"nat64 public answer is embedded", Config{}, "http://nat64pub.example.com/", deny(BlockedAddress, "64:ff9b::5db8:d70e", capability.Embedded)},
		{"zero answer", Config{}, "http://zero.example.com/", deny(BlockedAddress, "0.0.0.0", capability.Unspecified)},
		{"v6 zero answer", Config{}, "http://zero6.example.com/", deny(BlockedAddress, "::", capability.Unspecified)},
		{"metadata v6 answer", Config{}, "http://meta6.example.com/", deny(BlockedAddress, "fd00:ec2::254", capability.Private|capability.Metadata)},
		{"link-local answer", Config{}, "http://ll.example.com/", deny(BlockedAddress, "fe80::1", capability.LinkLocal)},
		{"cgnat answer", Config{}, "http://cgnat.example.com/", deny(BlockedAddress, "100.64.1.1", capability.CGNAT)},
		{"multicast answer", Config{}, "http://mcast.example.com/", deny(BlockedAddress, "224.0.0.251", capability.Multicast)},
		{"teredo loopback answer", Config{}, "http://teredo.example.com/", deny(BlockedAddress, "2001:0:4136:e378:8000:63bf:80ff:fffe", capability.Embedded|capability.Loopback)},
		{"6to4 metadata answer", Config{}, "http://6to4.example.com/", deny(BlockedAddress, "2002:a9fe:a9fe::1", capability.Embedded|capability.LinkLocal|capability.Metadata)},
		{"loopback literal hex", Config{}, "http://0x7f.1/", deny(BlockedAddress, "127.0.0.1", capability.Loopback)},
		{"loopback literal decimal", Config{}, "http://2130706433/", deny(BlockedAddress, "127.0.0.1", capability.Loopback)},
		{"mapped literal", Config{}, "http://[::ffff:127.0.0.1]/", deny(BlockedAddress, "127.0.0.1", capability.Loopback)},
		{"nat64 literal", Config{}, "http://[64:ff9b::a9fe:a9fe]/", deny(BlockedAddress, "64:ff9b::a9fe:a9fe", capability.Embedded|capability.LinkLocal|capability.Metadata)},
		{"metadata literal", Config{}, "http://169.254.169.254/latest/meta-data/", deny(BlockedAddress, "169.254.169.254", capability.LinkLocal|capability.Metadata)},
		{"zero literal", Config{}, "http://0/", deny(BlockedAddress, "0.0.0.0", capability.Unspecified)},
		{"bare literal with port", Config{}, "10.0.0.5:5432", deny(BlockedAddress, "10.0.0.5", capability.Private)},

		// Names blocked by their spelling, before any resolution.
		{"localhost name", Config{}, "http://localhost:8080/", deny(BlockedName, "", capability.Loopback)},
		{"metadata name", Config{}, "http://metadata.google.internal/", deny(BlockedName, "", capability.Metadata|capability.InternalName)},
		{"single label", Config{}, "http://intranet/", deny(BlockedName, "", capability.InternalName)},

		// Resolution failures fail closed unless configured.
		{"empty answer", Config{}, "http://empty.example.com/", deny(NoAddresses, "", 0)},
		{"not in table", Config{}, "http://unknown.example.com/", deny(ResolveFailed, "", 0)},
		{"not in table allowed unchecked", Config{OnResolveError: "allow-unchecked"}, "http://unknown.example.com/", got{Allow: true, Reason: AllowedUnchecked, Classes: "none"}},
		{"empty answer allowed unchecked", Config{OnResolveError: "allow-unchecked"}, "http://empty.example.com/", got{Allow: true, Reason: AllowedUnchecked, Classes: "none"}},
		{"allow-unchecked still checks answers", Config{OnResolveError: "allow-unchecked"}, "http://mixed.example.com/", deny(BlockedAddress, "10.0.0.1", capability.Private)},
		{"allow-unchecked still checks names", Config{OnResolveError: "allow-unchecked"}, "http://unknown.internal/", deny(BlockedName, "", capability.InternalName)},
		{"allow-unchecked cannot satisfy a CIDR allowlist", Config{OnResolveError: "allow-unchecked", AllowHosts: []string{"93.184.215.0/24"}}, "http://unknown.example.com/", deny(ResolveFailed, "", 0)},

		// Schemes.
		{"scheme not allowed", Config{Schemes: []string{"https"}}, "http://public.example.com/", deny(SchemeNotAllowed, "", 0)},
		{"gopher", Config{}, "gopher://public.example.com/", deny(SchemeNotAllowed, "", 0)},
		{"ftp", Config{}, "ftp://public.example.com/", deny(SchemeNotAllowed, "", 0)},
		{"redis", Config{}, "redis://public.example.com:6379/", deny(SchemeNotAllowed, "", 0)},
		{"ws allowed when listed", Config{Schemes: []string{"wss"}}, "wss://public.example.com/", allow(pub, "2606:2800:21f:cb07:6820:80da:af6b:8b2c")},

		// Admissions by CIDR: 10.0.0.5 but not 10.0.0.6.
		{"cidr admits literal", Config{Admit: []Admit{{Hosts: []string{"10.0.0.5/32"}, Classes: []string{"private"}}}}, "http://10.0.0.5/", admitted(capability.Private, "10.0.0.5")},
		{"cidr refuses neighbour literal", Config{Admit: []Admit{{Hosts: []string{"10.0.0.5/32"}, Classes: []string{"private"}}}}, "http://10.0.0.6/", deny(BlockedAddress, "10.0.0.6", capability.Private)},
		{"cidr admits answer", Config{Admit: []Admit{{Hosts: []string{"10.0.0.5/32"}, Classes: []string{"private"}}}}, "http://db.example.com/", admitted(capability.Private, "10.0.0.5")},
		{"cidr refuses mixed answer", Config{Admit: []Admit{{Hosts: []string{"10.0.0.5/32"}, Classes: []string{"private"}}}}, "http://db2.example.com/", deny(BlockedAddress, "10.0.0.6", capability.Private)},
		{"cidr admits only listed classes", Config{Admit: []Admit{{Hosts: []string{"fd00::/8"}, Classes: []string{"private"}}}}, "http://meta6.example.com/", deny(BlockedAddress, "fd00:ec2::254", capability.Metadata)},
		{"cidr of the wrong class admits nothing", Config{Admit: []Admit{{Hosts: []string{"10.0.0.0/8"}, Classes: []string{"loopback"}}}}, "http://10.0.0.5/", deny(BlockedAddress, "10.0.0.5", capability.Private)},
		{"admission is not implied by listing", Config{AllowHosts: []string{"10.0.0.5/32"}}, "http://10.0.0.5/", deny(BlockedAddress, "10.0.0.5", capability.Private)},

		// Admissions by name.
		{"name admission", Config{Admit: []Admit{{Hosts: []string{"git.corp.example"}, Classes: []string{"private", "internal-name"}}}}, "https://git.corp.example/", admitted(capability.Private|capability.InternalName, "10.1.2.3")},
		{"name admission needs the name class too", Config{Admit: []Admit{{Hosts: []string{"git.corp.example"}, Classes: []string{"private"}}}}, "https://git.corp.example/", deny(BlockedName, "", capability.InternalName)},
		{"name admission does not cover other names", Config{Admit: []Admit{{Hosts: []string{"git.corp.example"}, Classes: []string{"private", "internal-name"}}}}, "https://db.example.com/", deny(BlockedAddress, "10.0.0.5", capability.Private)},
		{"localhost admitted", Config{Admit: []Admit{{Hosts: []string{"localhost"}, Classes: []string{"loopback"}}}}, "http://localhost:8080/", admitted(capability.Loopback, "127.0.0.1")},
		{"localhost admission is not 127.0.0.2", Config{Admit: []Admit{{Hosts: []string{"localhost"}, Classes: []string{"loopback"}}}}, "http://127.0.0.2/", deny(BlockedAddress, "127.0.0.2", capability.Loopback)},

		// Host allowlists: exact, *.suffix and CIDR; spelling does not matter.
		{"wildcard matches subdomain", corp, "https://www.corp.example/", admitted(capability.InternalName, pub)},
		{"wildcard matches deeper", corp, "https://a.b.corp.example/", admitted(capability.InternalName, pub)},
		{"wildcard does not match apex", corp, "https://corp.example/", deny(HostNotAllowed, "", 0)},
		{"wildcard does not match suffix string", corp, "https://evilcorp.example/", deny(HostNotAllowed, "", 0)},
		{"wildcard uppercase", corp, "https://WWW.CORP.EXAMPLE/", admitted(capability.InternalName, pub)},
		{"wildcard trailing dot", corp, "https://www.corp.example./", admitted(capability.InternalName, pub)},
		{"wildcard fullwidth dots", corp, "https://www。corp。example/", admitted(capability.InternalName, pub)},
		{"wildcard bare host trailing dot", corp, "www.corp.example.:443", admitted(capability.InternalName, pub)},
		{"allowlist refuses other public", corp, "https://public.example.com/", deny(HostNotAllowed, "", 0)},
		{"allowlist refuses literal", corp, "https://93.184.215.14/", deny(HostNotAllowed, "93.184.215.14", 0)},
		{"exact allow", Config{AllowHosts: []string{"public.example.com"}}, "https://PUBLIC.example.com./", allow(pub, "2606:2800:21f:cb07:6820:80da:af6b:8b2c")},
		{"exact is not wildcard", Config{AllowHosts: []string{"example.com"}}, "https://public.example.com/", deny(HostNotAllowed, "", 0)},
		{"idna pattern unicode input", Config{AllowHosts: []string{"*.bücher.example"}, Admit: []Admit{{Hosts: []string{"*.xn--bcher-kva.example"}, Classes: []string{"internal-name"}}}}, "https://SHOP.BÜCHER.example./", admitted(capability.InternalName, pub)},
		{"idna pattern punycode input", Config{AllowHosts: []string{"*.BÜCHER.example."}, Admit: []Admit{{Hosts: []string{"*.bücher.example"}, Classes: []string{"internal-name"}}}}, "https://shop.xn--bcher-kva.example/", admitted(capability.InternalName, pub)},
		{"allowlist cidr admits answers in it", Config{AllowHosts: []string{"93.184.215.0/24"}}, "https://public.example.com/", deny(HostNotAllowed, "2606:2800:21f:cb07:6820:80da:af6b:8b2c", 0)},
		{"allowlist cidr admits literal", Config{AllowHosts: []string{"93.184.215.0/24"}}, "https://93.184.215.14/", allow(pub)},
		{"allowlist cidr and name", Config{AllowHosts: []string{"93.184.215.0/24", "2606:2800::/32"}}, "https://public.example.com/", allow(pub, "2606:2800:21f:cb07:6820:80da:af6b:8b2c")},
		{"allowed host still class checked", Config{AllowHosts: []string{"mixed.example.com"}}, "http://mixed.example.com/", deny(BlockedAddress, "10.0.0.1", capability.Private)},
		{"admit implies allow", Config{AllowHosts: []string{"public.example.com"}, Admit: []Admit{{Hosts: []string{"10.0.0.5/32"}, Classes: []string{"private"}}}}, "http://10.0.0.5/", admitted(capability.Private, "10.0.0.5")},

		// A narrower block list.
		{"custom block list", Config{Block: []string{"loopback", "metadata"}}, "http://10.0.0.5/", allow("10.0.0.5")},
		{"custom block list still blocks", Config{Block: []string{"loopback", "metadata"}}, "http://169.254.169.254/", deny(BlockedAddress, "169.254.169.254", capability.Metadata)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := mustChecker(t, tt.cfg)
			v := ch.Check(t.Context(), capOf(t, tt.arg))
			checkByPointer(t, ch, capOf(t, tt.arg), v)
			if diff := cmp.Diff(tt.want, summarise(v)); diff != "" {
				t.Errorf("Check(%q) (-want +got):\n%s\nverdict: %v", tt.arg, diff, v)
			}
			if v.Allow != (v.Reason == Allowed || v.Reason == AllowedUnchecked) {
				t.Errorf("Allow %v with reason %v", v.Allow, v.Reason)
			}
			if v.String() == "" {
				t.Error("empty verdict string")
			}
		})
	}
}

// TestCheckCapabilityMisuse covers capabilities the gateway should never
// pass: each is denied, not allowed by accident.
func TestCheckCapabilityMisuse(t *testing.T) {
	ch := mustChecker(t, Config{})
	tests := []struct {
		name string
		c    capability.Capability
		want Reason
	}{
		{"zero capability", capability.Capability{}, BadCapability},
		{"fs.read", capability.Capability{Kind: capability.FSRead, Path: "/etc/passwd"}, BadCapability},
		{"no host", capability.Capability{Kind: capability.NetConnect, Scheme: "https"}, BadHost},
		{"host that does not canonicalise", capability.Capability{Kind: capability.NetConnect, Scheme: "https", Host: "a b"}, BadHost},
		{"host and addr disagree", capability.Capability{Kind: capability.NetConnect, Scheme: "https", Host: "public.example.com", Addr: netip.MustParseAddr("10.0.0.1")}, BadHost},
		{"literal host without addr", capability.Capability{Kind: capability.NetConnect, Scheme: "https", Host: "127.0.0.1"}, BlockedAddress},
		{"uncanonical name", capability.Capability{Kind: capability.NetConnect, Scheme: "https", Host: "LOCALHOST."}, BlockedName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := ch.Check(t.Context(), tt.c)
			if v.Allow || v.Reason != tt.want {
				t.Errorf("Check = %v, want a denial with reason %v", v, tt.want)
			}
			checkByPointer(t, ch, tt.c, v)
		})
	}
}

// failing is a resolver that fails as DNS does: a timeout, a refusal.
type failing struct{ err error }

func (f failing) Resolve(context.Context, string) ([]netip.Addr, error) { return nil, f.err }

func (f failing) String() string { return "failing" }

func TestCheckResolverErrors(t *testing.T) {
	for _, onErr := range []string{"", "deny", "allow-unchecked"} {
		t.Run("on_resolve_error="+onErr, func(t *testing.T) {
			ch := mustChecker(t, Config{OnResolveError: onErr})
			ch.resolver = failing{context.DeadlineExceeded}
			v := ch.Check(t.Context(), capOf(t, "https://public.example.com/"))
			wantAllow := onErr == "allow-unchecked"
			if v.Allow != wantAllow {
				t.Fatalf("Check = %v, want allow %v", v, wantAllow)
			}
			if !errors.Is(v.Err, context.DeadlineExceeded) {
				t.Errorf("verdict error %v does not carry the resolver's error", v.Err)
			}
		})
	}
	t.Run("cancelled context", func(t *testing.T) {
		ch := mustChecker(t, Config{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		ch.resolver = failing{ctx.Err()}
		if v := ch.Check(ctx, capOf(t, "https://public.example.com/")); v.Allow {
			t.Errorf("Check with a cancelled context = %v", v)
		}
	})
}

// TestVerdictString checks that a denial names the host, the address and
// the class for the audit record.
func TestVerdictString(t *testing.T) {
	ch := mustChecker(t, Config{})
	v := ch.Check(t.Context(), capOf(t, "http://mixed.example.com/"))
	const want = `egress denied: mixed.example.com resolves to 10.0.0.1, which is private`
	if got := v.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := (&DenyError{Verdict: v}).Error(); got != want {
		t.Errorf("DenyError = %q, want %q", got, want)
	}
	if !errors.Is(&DenyError{Verdict: v}, ErrDenied) {
		t.Error("DenyError is not ErrDenied")
	}
}

func TestReasonString(t *testing.T) {
	seen := map[string]Reason{}
	for r := Reason(0); r < reasonEnd; r++ {
		s := r.String()
		if s == "" {
			t.Errorf("reason %d has no name", r)
		}
		if prev, dup := seen[s]; dup {
			t.Errorf("reasons %d and %d share the name %q", prev, r, s)
		}
		seen[s] = r
	}
}

// checkByPointer fails unless CheckCapability(&c) gives want, Check's
// verdict for c, and leaves c as it was.
func checkByPointer(t *testing.T, ch *Checker, c capability.Capability, want Verdict) {
	t.Helper()
	before := c
	before.Argv = slices.Clone(c.Argv)
	got := ch.CheckCapability(t.Context(), &c)
	if diff := cmp.Diff(summarise(want), summarise(got)); diff != "" || got.String() != want.String() {
		t.Errorf("CheckCapability differs from Check (-Check +CheckCapability):\n%s", diff)
	}
	if diff := cmp.Diff(before, c, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("CheckCapability changed its capability (-before +after):\n%s", diff)
	}
}

func BenchmarkCheck(b *testing.B) {
	ch := mustChecker(b, Config{})
	c := capOf(b, "https://public.example.com/x")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if v := ch.Check(ctx, c); !v.Allow {
			b.Fatal(v)
		}
	}
}
