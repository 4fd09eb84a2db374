package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// Resolver resolves a canonical host name (lower case, A-labels, no
// trailing dot) to all of its addresses, IPv4 and IPv6. An empty answer
// without error means the name exists but has no address. Resolve MUST be
// safe for concurrent use.
type Resolver interface {
	Resolve(ctx context.Context, name string) ([]netip.Addr, error)
}

// namedResolver is a Resolver that describes itself for diagnostics.
type namedResolver interface {
	Resolver
	fmt.Stringer
}

// ErrNotFound is returned, wrapped, by [Static] for a name the table does
// not hold; [Chain] branches on it to ask the next resolver. The system
// resolver reports a missing name with its own *net.DNSError.
var ErrNotFound = errors.New("name not found")

// Static is a hosts table: canonical name to addresses.
type Static map[string][]netip.Addr

// NewStatic builds a Static from the configuration's hosts table. Names are
// canonicalised; addresses must be in standard form and are unmapped. Two
// names that canonicalise alike are an error, as are IP literals and
// wildcards as names.
func NewStatic(hosts map[string][]string) (Static, error) {
	s := make(Static, len(hosts))
	from := make(map[string]string, len(hosts))
	keys := make([]string, 0, len(hosts))
	for k := range hosts {
		keys = append(keys, k)
	}
	slices.Sort(keys) // errors in a stable order
	for _, k := range keys {
		name, addr, err := capability.CanonHost(k)
		switch {
		case strings.IndexByte(k, '*') >= 0:
			return nil, fmt.Errorf("hosts[%q]: a wildcard; the table maps exact names", k)
		case err != nil:
			return nil, fmt.Errorf("hosts[%q]: %w", k, err)
		case addr.IsValid():
			return nil, fmt.Errorf("hosts[%q]: an address, not a name", k)
		}
		if prev, dup := from[name]; dup {
			return nil, fmt.Errorf("hosts[%q]: same name as hosts[%q]", k, prev)
		}
		from[name] = k
		as := make([]netip.Addr, 0, len(hosts[k]))
		for i, v := range hosts[k] {
			a, err := parseAddr(v)
			if err != nil {
				return nil, fmt.Errorf("hosts[%q][%d]: %w", k, i, err)
			}
			as = append(as, a)
		}
		s[name] = as
	}
	return s, nil
}

// Resolve returns the table's addresses for name, or an error wrapping
// [ErrNotFound]. The slice is a copy.
func (s Static) Resolve(_ context.Context, name string) ([]netip.Addr, error) {
	as, ok := s[name]
	if !ok {
		return nil, fmt.Errorf("resolving %s: %w in the hosts table", name, ErrNotFound)
	}
	if len(as) == 0 {
		return nil, nil
	}
	return slices.Clone(as), nil
}

// String describes the table for diagnostics.
func (s Static) String() string { return fmt.Sprintf("static(%d names)", len(s)) }

// System resolves with a [net.Resolver], asking for A and AAAA records.
type System struct {
	// Resolver is the resolver to use; nil means net.DefaultResolver.
	// It is not used when Nameserver is set.
	Resolver *net.Resolver
	// Nameserver, when valid, is the one DNS server asked, by Go's own
	// resolver (PreferGo), in place of the machine's nameservers; the
	// zero value means Resolver's.
	Nameserver netip.AddrPort
	// Timeout bounds one lookup; zero means no bound beyond ctx's.
	Timeout time.Duration
}

// Resolve looks name up.
func (s System) Resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	r := s.Resolver
	switch {
	case s.Nameserver.IsValid():
		ns := s.Nameserver.String()
		r = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			// network is udp or tcp, as the resolver chooses; the address
			// it would ask (resolv.conf's) is replaced by ours.
			var d net.Dialer
			return d.DialContext(ctx, network, ns)
		}}
	case r == nil:
		r = net.DefaultResolver
	}
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	// The name is looked up as the server's own resolver would, search
	// domains included: a name that only resolves through a search domain
	// is then checked at the address the server would reach.
	as, err := r.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", name, err)
	}
	return as, nil
}

// String describes the resolver for diagnostics.
func (s System) String() string {
	if s.Nameserver.IsValid() {
		return fmt.Sprintf("system(timeout %v, nameserver %v)", s.Timeout, s.Nameserver)
	}
	return fmt.Sprintf("system(timeout %v)", s.Timeout)
}

// Chain asks each resolver in turn until one knows the name: the first
// answer, or the first error other than [ErrNotFound], ends the lookup. A
// static table first in the chain overrides DNS for the names it holds.
type Chain []Resolver

// Resolve asks the resolvers in order.
func (c Chain) Resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	for _, r := range c {
		as, err := r.Resolve(ctx, name)
		if err != nil && errors.Is(err, ErrNotFound) {
			continue
		}
		return as, err
	}
	return nil, fmt.Errorf("resolving %s: %w by any resolver", name, ErrNotFound)
}

// String describes the chain for diagnostics.
func (c Chain) String() string {
	s := "chain("
	for i, r := range c {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(r)
	}
	return s + ")"
}

// Cache keeps a resolver's successful answers for a fixed time, for at most
// a fixed number of names; the oldest entry makes room for a new one.
// Errors are not cached. A cached answer was checked when it was stored and
// is checked again on every use, so caching changes when a name is looked
// up, never what is allowed.
type Cache struct {
	r    Resolver
	ttl  time.Duration
	size int

	mu      sync.Mutex
	entries map[string]cacheEntry
	order   []string // names in insertion order, for eviction; may hold stale names
}

type cacheEntry struct {
	addrs   []netip.Addr
	expires time.Time
}

// NewCache wraps r. ttl and size MUST be positive.
func NewCache(r Resolver, ttl time.Duration, size int) *Cache {
	if ttl <= 0 || size <= 0 {
		panic("egress: NewCache needs a positive ttl and size")
	}
	return &Cache{r: r, ttl: ttl, size: size, entries: make(map[string]cacheEntry)}
}

// Resolve answers from the cache, or asks the wrapped resolver and keeps a
// successful answer. The slice is a copy.
func (c *Cache) Resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[name]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return slices.Clone(e.addrs), nil
	}
	as, err := c.r.Resolve(ctx, name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[name]; !ok {
		for len(c.entries) >= c.size {
			c.evictOldest()
		}
		c.order = append(c.order, name)
	}
	c.entries[name] = cacheEntry{addrs: slices.Clone(as), expires: now.Add(c.ttl)}
	return as, nil
}

// evictOldest drops the oldest name. c.mu MUST be held.
func (c *Cache) evictOldest() {
	for len(c.order) > 0 {
		name := c.order[0]
		c.order = c.order[1:]
		if _, ok := c.entries[name]; ok {
			delete(c.entries, name)
			return
		}
	}
}

// Len returns the number of names in the cache.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// String describes the cache for diagnostics.
func (c *Cache) String() string {
	return fmt.Sprintf("cache(%v, ttl %v, size %d)", c.r, c.ttl, c.size)
}
