package serve

import (
	"net/http"
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
