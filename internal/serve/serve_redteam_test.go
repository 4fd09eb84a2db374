package serve

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestSessionsPerPrincipal: one principal cannot hold every session
// aegis serves: past its share its initialize is refused, and another
// principal still gets a session.
func TestSessionsPerPrincipal(t *testing.T) {
	ts, _, _ := testServe(t, &Config{MaxSessions: 8})
	url := ts.URL + "/mcp/demo"
	opened := 0
	for range 8 {
		resp, _ := post(t, url, map[string]string{"X-Test-Principal": "mallory"}, initialize)
		if resp.StatusCode != http.StatusOK {
			break
		}
		opened++
	}
	if opened == 8 {
		t.Errorf("mallory opened all %d sessions", opened)
	}
	resp, body := post(t, url, map[string]string{"X-Test-Principal": "alice"}, initialize)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("alice's initialize after mallory's %d: %d %q", opened, resp.StatusCode, body)
	}
}

// TestSessionRoles: a session answers its principal only with the roles
// it was opened with, which decide its calls: a token whose roles were
// taken away does not keep them through a session opened before.
func TestSessionRoles(t *testing.T) {
	ts, _, _ := testServe(t, nil)
	url := ts.URL + "/mcp/demo"
	resp, _ := post(t, url, map[string]string{"X-Test-Principal": "alice", "X-Test-Roles": "admin,dev"}, initialize)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	for _, tt := range []struct {
		name, roles string
		status      int
	}{
		{"no roles", "", http.StatusNotFound},
		{"fewer roles", "dev", http.StatusNotFound},
		{"other roles", "admin,ops", http.StatusNotFound},
		{"more roles", "admin,dev,ops", http.StatusNotFound},
		{"the same roles", "admin,dev", http.StatusOK},
		{"the same roles in another order", "dev,admin", http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, url, map[string]string{"X-Test-Principal": "alice", "X-Test-Roles": tt.roles, "Mcp-Session-Id": sid}, ping)
			if resp.StatusCode != tt.status {
				t.Errorf("%d %q, want %d", resp.StatusCode, body, tt.status)
			}
		})
	}
}

// TestBacklogBytes: what waits for a stream is bounded in bytes, not
// only in messages: a server that sends large notifications to a client
// that opens no stream cannot make aegis hold gigabytes.
func TestBacklogBytes(t *testing.T) {
	h := New(&Config{})
	defer h.Shutdown(t.Context())
	s := newSession(h, "s", "demo", Identity{Principal: "alice"})
	line := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%s"}}`, strings.Repeat("x", 1<<20))
	for range 100 {
		s.unrelated(line)
	}
	held := 0
	for _, m := range s.backlog {
		held += len(m)
	}
	if want := 16<<20 + len(line); held > want {
		t.Errorf("the backlog holds %d bytes in %d messages, want at most %d", held, len(s.backlog), want)
	}
	if len(s.backlog) == 0 || string(s.backlog[len(s.backlog)-1]) != string(line) {
		t.Errorf("the newest message is not in the backlog")
	}
}
