package dnstest

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var (
	allowed = netip.MustParseAddr("127.0.0.2")
	denied  = netip.MustParseAddr("127.0.0.3")
	six     = netip.MustParseAddr("::1")
)

// resolver asks only s, over network ("udp" or "tcp"), with Go's resolver.
func resolver(s *Server, network string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, s.Addr().String())
	}}
}

func TestServer(t *testing.T) {
	s, err := NewServer(map[string]Answers{
		"rebind.test":    Sequence([]netip.Addr{allowed}, []netip.Addr{denied}),
		"FLIP.test.":     Alternate([]netip.Addr{allowed}, []netip.Addr{denied}),
		"both.test":      Sequence([]netip.Addr{allowed, six}),
		"no-answer.test": Sequence(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		name    string
		network string
		host    string
		want    [][]netip.Addr // one lookup each
		wantErr bool
	}{
		{"first allowed, then denied", "udp", "rebind.test", [][]netip.Addr{{allowed}, {denied}, {denied}}, false},
		{"alternating, any case, over tcp", "tcp", "flip.TEST", [][]netip.Addr{{allowed}, {denied}, {allowed}}, false},
		{"A and AAAA", "udp", "both.test", [][]netip.Addr{{allowed, six}}, false},
		{"a held name without addresses", "udp", "no-answer.test", nil, true},
		{"a name not held", "udp", "other.test", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := resolver(s, tt.network)
			if tt.wantErr {
				as, err := r.LookupNetIP(t.Context(), "ip", tt.host)
				var dnsErr *net.DNSError
				if !errors.As(err, &dnsErr) {
					t.Fatalf("LookupNetIP = %v, %v; want a DNS error", as, err)
				}
				return
			}
			var got [][]netip.Addr
			for range tt.want {
				as, err := r.LookupNetIP(t.Context(), "ip", tt.host)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, as)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
				// in the order the resolver sorts them (RFC 6724), not as served
				cmpopts.SortSlices(func(a, b netip.Addr) bool { return a.Less(b) })); diff != "" {
				t.Errorf("lookups (-want +got):\n%s", diff)
			}
		})
	}
	var rebind []netip.Addr
	for _, sv := range s.Served() {
		if sv.Name == "rebind.test." {
			rebind = append(rebind, sv.Addrs...)
		}
	}
	if len(rebind) != 3 {
		t.Errorf("served for rebind.test: %v, want three addresses", rebind)
	}
}
