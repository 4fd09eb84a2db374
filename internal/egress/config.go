package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// Config is the egress policy of one server, as written in the
// configuration file. Its zero value (and a nil *Config) is the strictest
// useful policy: http and https only, every address class but public
// blocked, every host allowed, names resolved by the system resolver with a
// 5 s timeout, and a name that does not resolve denied.
//
// The yaml tags are the keys of the configuration file; [New]'s errors
// name fields by them.
type Config struct {
	// Schemes are the URL schemes a call may connect with: http, https, ws,
	// wss, ftp. Empty means http and https. A bare host argument has no
	// scheme and is not checked against this list.
	Schemes []string `yaml:"schemes"`

	// Block are the address and name classes that are refused (see
	// [capability.Class]): loopback, private, link-local, cgnat, multicast,
	// broadcast, unspecified, reserved, benchmarking, documentation,
	// metadata, embedded, internal-name. Empty means all of them. A class
	// left out is reachable for every host; prefer Admit, which opens a
	// class for named hosts only.
	Block []string `yaml:"block"`

	// AllowHosts, when not empty, restricts calls to these hosts; empty
	// means any host whose classes are not blocked. An entry is an exact
	// name ("api.example.com"), a wildcard ("*.example.com": names under
	// example.com, not example.com itself), an address ("10.0.0.5",
	// "::1") or a CIDR prefix ("10.0.0.0/24"). A name matches name
	// entries; an address, literal or resolved, matches address entries.
	// Names are compared in canonical form: lower case, A-labels, no
	// trailing dot. Listing a host does not admit a blocked class.
	AllowHosts []string `yaml:"allow_hosts"`

	// Admit opens blocked classes for named hosts. A host an Admit entry
	// names is also allowed when AllowHosts is set.
	Admit []Admit `yaml:"admit"`

	// Hosts is the static hosts table: a name and the addresses it
	// resolves to, consulted before DNS. It serves tests and split-horizon
	// setups where aegis cannot ask the server's DNS. An empty list makes
	// the name resolve to nothing, which denies it.
	Hosts map[string][]string `yaml:"hosts"`

	// Resolver is "system" (the default: the Hosts table, then the
	// system's resolver) or "static" (the Hosts table only, no DNS).
	Resolver string `yaml:"resolver"`

	// OnResolveError is what happens to a name that does not resolve
	// (an error, a timeout or an empty answer): "deny" (the default) or
	// "allow-unchecked", which allows the call without checking any
	// address. Only for servers whose names aegis cannot resolve; the name
	// itself is still checked against Block and AllowHosts.
	OnResolveError string `yaml:"on_resolve_error"`

	// Nameserver, when set, is the one DNS server the system resolver
	// asks, in place of those the machine is configured with: an IP
	// address with a port ("127.0.0.1:5353", "[::1]:53") or without one
	// (53; IPv6 in brackets: "[fd00::53]"). aegis then queries it with
	// Go's own resolver (UDP, and TCP for long answers), after the
	// machine's hosts file, with the search domains and options of its
	// resolv.conf. It serves tests that run a DNS server on loopback, and
	// setups where aegis must ask a server the machine's resolver does
	// not. Empty means the machine's own resolver.
	Nameserver string `yaml:"nameserver"`

	// ResolveTimeout bounds one system lookup; zero means 5 s.
	ResolveTimeout time.Duration `yaml:"resolve_timeout"`

	// CacheTTL keeps the system resolver's answers this long; zero means
	// no cache. CacheSize bounds the number of names kept; zero means 1024.
	CacheTTL  time.Duration `yaml:"cache_ttl"`
	CacheSize int           `yaml:"cache_size"`
}

// Admit opens blocked classes for some hosts: an address or name in one of
// Classes passes when the call's host name, or the address itself, matches
// one of Hosts (patterns as in [Config.AllowHosts]). A name entry admits
// the name's own classes and those of every address it resolves to; an
// address entry admits only the addresses in it.
type Admit struct {
	Hosts   []string `yaml:"hosts"`
	Classes []string `yaml:"classes"`
}

// The defaults of a zero Config.
const (
	defaultTimeout   = 5 * time.Second
	defaultCacheSize = 1024
)

// knownSchemes are the schemes a net.connect can carry that egress checks.
var knownSchemes = []string{"http", "https", "ws", "wss", "ftp"}

// blockable are all the classes but Public.
var blockable = func() capability.Class {
	var c capability.Class
	for _, name := range (^capability.Class(0)).Names() {
		if cl, _ := capability.ParseClass(name); cl != capability.Public {
			c |= cl
		}
	}
	return c
}()

// admission is a compiled [Admit].
type admission struct {
	patterns []pattern
	classes  capability.Class
}

// New compiles cfg, which may be nil. Every field is checked; an error names
// the first bad field by its configuration key (`admit[1].hosts[0]: ...`).
func New(cfg *Config) (*Checker, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	ch := &Checker{schemes: map[string]bool{}}
	if len(cfg.Schemes) == 0 {
		ch.schemes["http"], ch.schemes["https"] = true, true
	}
	for i, s := range cfg.Schemes {
		if !slices.Contains(knownSchemes, s) {
			return nil, fmt.Errorf("schemes[%d]: %q is not a scheme egress checks (want %s)", i, s, strings.Join(knownSchemes, ", "))
		}
		if ch.schemes[s] {
			return nil, fmt.Errorf("schemes[%d]: %q is listed twice", i, s)
		}
		ch.schemes[s] = true
	}
	ch.http, ch.https = ch.schemes["http"], ch.schemes["https"]

	ch.block = blockable
	if len(cfg.Block) > 0 {
		ch.block = 0
	}
	for i, name := range cfg.Block {
		c, err := parseClass(name)
		if err != nil {
			return nil, fmt.Errorf("block[%d]: %w", i, err)
		}
		ch.block |= c
	}

	for i, s := range cfg.AllowHosts {
		p, err := parsePattern(s)
		if err != nil {
			return nil, fmt.Errorf("allow_hosts[%d]: %w", i, err)
		}
		ch.allow = append(ch.allow, p)
	}
	for i, a := range cfg.Admit {
		var ad admission
		if len(a.Hosts) == 0 {
			return nil, fmt.Errorf("admit[%d].hosts: empty: name the hosts the classes are opened for", i)
		}
		if len(a.Classes) == 0 {
			return nil, fmt.Errorf("admit[%d].classes: empty: name the classes to open", i)
		}
		for j, s := range a.Hosts {
			p, err := parsePattern(s)
			if err != nil {
				return nil, fmt.Errorf("admit[%d].hosts[%d]: %w", i, j, err)
			}
			ad.patterns = append(ad.patterns, p)
		}
		for j, name := range a.Classes {
			c, err := parseClass(name)
			if err != nil {
				return nil, fmt.Errorf("admit[%d].classes[%d]: %w", i, j, err)
			}
			if c&ch.block == 0 {
				return nil, fmt.Errorf("admit[%d].classes[%d]: %q is not blocked, so admitting it does nothing", i, j, name)
			}
			ad.classes |= c
		}
		ch.admit = append(ch.admit, ad)
		ch.allow = append(ch.allow, ad.patterns...)
	}
	ch.restricted = len(cfg.AllowHosts) > 0
	for _, p := range ch.allow {
		if p.prefix.IsValid() {
			ch.allowByAddr = true
		}
	}

	switch cfg.OnResolveError {
	case "", "deny":
	case "allow-unchecked":
		ch.allowUnchecked = true
	default:
		return nil, fmt.Errorf("on_resolve_error: %q (want deny or allow-unchecked)", cfg.OnResolveError)
	}

	r, err := newResolver(cfg)
	if err != nil {
		return nil, err
	}
	ch.resolver = r
	return ch, nil
}

// NewWithResolver is [New] with r as the resolver in place of the one cfg
// describes (its Hosts, Resolver, ResolveTimeout and cache settings are
// still checked, and unused). It serves tests that need a resolver whose
// answers change (DNS rebinding) and embedders with their own DNS. r MUST
// be safe for concurrent use and return canonical names' addresses as
// [Resolver] says.
func NewWithResolver(cfg *Config, r Resolver) (*Checker, error) {
	if r == nil {
		return nil, errors.New("egress: NewWithResolver needs a resolver")
	}
	ch, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ch.resolver = givenResolver{r}
	return ch, nil
}

// givenResolver names a resolver of [NewWithResolver] for diagnostics.
type givenResolver struct{ Resolver }

func (g givenResolver) String() string {
	if s, ok := g.Resolver.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", g.Resolver)
}

// newResolver builds the resolver cfg describes.
func newResolver(cfg *Config) (namedResolver, error) {
	static, err := NewStatic(cfg.Hosts)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.ResolveTimeout < 0:
		return nil, fmt.Errorf("resolve_timeout: %v is negative", cfg.ResolveTimeout)
	case cfg.CacheTTL < 0:
		return nil, fmt.Errorf("cache_ttl: %v is negative", cfg.CacheTTL)
	case cfg.CacheSize < 0:
		return nil, fmt.Errorf("cache_size: %d is negative", cfg.CacheSize)
	case cfg.CacheSize > 0 && cfg.CacheTTL == 0:
		return nil, errors.New("cache_size: set without cache_ttl, so nothing is cached")
	}
	switch cfg.Resolver {
	case "static":
		if cfg.Nameserver != "" {
			return nil, errors.New("nameserver: the static resolver asks no nameserver")
		}
		if cfg.CacheTTL > 0 {
			return nil, errors.New("cache_ttl: the static resolver has nothing to cache")
		}
		if cfg.ResolveTimeout > 0 {
			return nil, errors.New("resolve_timeout: the static resolver does not wait")
		}
		return static, nil
	case "", "system":
	default:
		return nil, fmt.Errorf("resolver: %q (want system or static)", cfg.Resolver)
	}
	timeout := cfg.ResolveTimeout
	if timeout == 0 {
		timeout = defaultTimeout
	}
	system := System{Resolver: net.DefaultResolver, Timeout: timeout}
	if cfg.Nameserver != "" {
		ns, err := parseNameserver(cfg.Nameserver)
		if err != nil {
			return nil, fmt.Errorf("nameserver: %w", err)
		}
		system = System{Nameserver: ns, Timeout: timeout}
	}
	var sys namedResolver = system
	if cfg.CacheTTL > 0 {
		size := cfg.CacheSize
		if size == 0 {
			size = defaultCacheSize
		}
		sys = NewCache(sys, cfg.CacheTTL, size)
	}
	if len(static) == 0 {
		return sys, nil
	}
	return Chain{static, sys}, nil
}

// parseNameserver parses the nameserver setting: an IP address in
// standard form, IPv6 in brackets, with a port or without one (53).
// IPv4-mapped addresses are unmapped.
func parseNameserver(s string) (netip.AddrPort, error) {
	const want = "want an IP address with or without a port: 127.0.0.1:5353, 10.0.0.53, [::1]:53 or [fd00::53]"
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		inner, bracketed := strings.CutPrefix(s, "[")
		if bracketed {
			inner, bracketed = strings.CutSuffix(inner, "]")
		}
		a, aerr := netip.ParseAddr(inner)
		switch {
		case aerr != nil:
			return netip.AddrPort{}, fmt.Errorf("%q is not an IP address (%s)", s, want)
		case a.Is6() && !bracketed:
			// "::1:53" is [::1]:53 to one reader and [::1:53]:53 to another.
			return netip.AddrPort{}, fmt.Errorf("%q is ambiguous: write an IPv6 address in brackets, with or without a port ([::1]:53, [::1])", s)
		case a.Is4() && bracketed:
			return netip.AddrPort{}, fmt.Errorf("%q: only an IPv6 address goes in brackets (%s)", s, want)
		}
		ap = netip.AddrPortFrom(a, 53)
	} else if ap.Addr().Is4() && strings.HasPrefix(s, "[") {
		return netip.AddrPort{}, fmt.Errorf("%q: only an IPv6 address goes in brackets (%s)", s, want)
	}
	a := ap.Addr()
	switch {
	case a.Zone() != "":
		return netip.AddrPort{}, fmt.Errorf("%q has a zone, which names an interface of this machine", s)
	case a.IsUnspecified():
		return netip.AddrPort{}, fmt.Errorf("%q is the unspecified address, which names no server", s)
	case ap.Port() == 0:
		return netip.AddrPort{}, fmt.Errorf("%q has port 0", s)
	}
	return netip.AddrPortFrom(a.Unmap(), ap.Port()), nil
}

// parseClass parses a class name that may be blocked or admitted.
func parseClass(name string) (capability.Class, error) {
	c, err := capability.ParseClass(name)
	if err != nil {
		return 0, err
	}
	if c == capability.Public {
		return 0, fmt.Errorf("%q cannot be blocked or admitted; to allow only some hosts, list them in allow_hosts", name)
	}
	return c, nil
}

// schemeList returns the allowed schemes, sorted.
func (ch *Checker) schemeList() []string {
	var s []string
	for k := range ch.schemes {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// parseAddr parses an address of the configuration: the plain text form
// only (no zone, no IPv4 number forms), IPv4-mapped unmapped.
func parseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%q is not an IP address in standard form", s)
	}
	if a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%q has a zone, which names an interface of this machine", s)
	}
	return a.Unmap(), nil
}
