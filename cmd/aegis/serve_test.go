package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLoopbackHosts: a loopback listener answers only loopback names
// and public_url's host, so that a page DNS rebinding points at it is
// refused; any other listener answers any host.
func TestLoopbackHosts(t *testing.T) {
	for _, tt := range []struct {
		name      string
		addr      string
		publicURL string
		want      []string
	}{
		{"loopback", "127.0.0.1:8347", "", []string{"localhost", "127.0.0.1", "::1", "127.0.0.1"}},
		{"another loopback address", "127.0.0.2:0", "", []string{"localhost", "127.0.0.1", "::1", "127.0.0.2"}},
		{"IPv6 loopback", "[::1]:8347", "", []string{"localhost", "127.0.0.1", "::1", "::1"}},
		{"behind a proxy on loopback", "localhost:8347", "https://aegis.example.com/", []string{"localhost", "127.0.0.1", "::1", "localhost", "aegis.example.com"}},
		{"every interface", "0.0.0.0:8347", "", nil},
		{"a public address", "192.0.2.1:8347", "https://aegis.example.com", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, loopbackHosts(tt.addr, tt.publicURL)); diff != "" {
				t.Errorf("loopbackHosts(%q, %q) (-want +got):\n%s", tt.addr, tt.publicURL, diff)
			}
		})
	}
}
