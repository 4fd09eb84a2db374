package console

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/approval"
)

// served is a console on a loopback listener, with one pending approval
// whose arguments hold markup.
type served struct {
	c     *Console
	url   string // with the token
	base  string
	store *approval.Store
	id    string
}

func serve(t *testing.T) *served {
	t.Helper()
	st, err := approval.Open(filepath.Join(t.TempDir(), "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	req := &approval.Request{ID: approval.NewID(), Created: time.Now(), Expires: time.Now().Add(time.Minute),
		Session: "s1", Principal: "alice", Server: "fs", Tool: "write_file",
		Caps: []string{"fs.write /home/alice/p/x"}, Rules: []string{"ask-writes"}, Reason: "writes ask",
		Arguments: []byte(`{"path":"/home/alice/p/x","content":"<script>alert(1)</script>"}`)}
	if err := st.Put(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, u, err := New(Config{Approvals: st, By: "bob",
		Decisions: func(int) ([]Decision, error) {
			return []Decision{{Name: "1", Decision: "ask", Target: "fs/write_file", Reason: "<b>not bold</b>"}}, nil
		},
		Pins:     func() ([]Pin, error) { return []Pin{{Server: "fs", Tool: "write_file", Shape: "abc"}}, nil },
		Bindings: func() ([]string, error) { return []string{"fs: write_file (mutating): /path fs.write <x>"}, nil },
	}, ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: c}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &served{c: c, url: u, base: c.origin, store: st, id: req.ID}
}

// client does not follow redirects, so that each answer is seen.
var client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// signIn returns the console's cookie.
func (s *served) signIn(t *testing.T) *http.Cookie {
	req, _ := http.NewRequest("GET", s.url, nil)
	resp, _ := do(t, req)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign in: %s to %q", resp.Status, resp.Header.Get("Location"))
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == s.c.cookie {
			if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
				t.Errorf("cookie %+v: want HttpOnly and SameSite=Strict", ck)
			}
			return ck
		}
	}
	t.Fatal("no cookie")
	return nil
}

// TestConsoleAccess: nothing without the token; the page escapes what it
// shows of a call; a page of another name (DNS rebinding) is refused.
func TestConsoleAccess(t *testing.T) {
	s := serve(t)
	ck := s.signIn(t)
	for _, tt := range []struct {
		name   string
		path   string
		host   string
		cookie *http.Cookie
		want   int
	}{
		{"no token", "/", "", nil, http.StatusUnauthorized},
		{"a wrong token", "/?token=" + strings.Repeat("0", 64), "", nil, http.StatusUnauthorized},
		{"a wrong cookie", "/", "", &http.Cookie{Name: s.c.cookie, Value: "x"}, http.StatusUnauthorized},
		{"the cookie", "/", "", ck, http.StatusOK},
		{"another host name", "/", "evil.example:" + strings.Split(s.base, ":")[2], ck, http.StatusMisdirectedRequest},
		{"another port", "/", "127.0.0.1:1", ck, http.StatusMisdirectedRequest},
		{"a path it does not serve", "/etc/passwd", "", ck, http.StatusNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", s.base+tt.path, nil)
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.cookie != nil {
				req.AddCookie(tt.cookie)
			}
			resp, body := do(t, req)
			if resp.StatusCode != tt.want {
				t.Fatalf("%s, want %d: %s", resp.Status, tt.want, body)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Errorf("CSP %q", csp)
			}
			if tt.want != http.StatusOK {
				if strings.Contains(body, s.id) {
					t.Errorf("a refused request saw the approval")
				}
				return
			}
			for _, want := range []string{s.id, "fs.write /home/alice/p/x", "&lt;script&gt;", "&lt;b&gt;not bold&lt;/b&gt;", s.c.csrf, "fs: write_file (mutating): /path fs.write &lt;x&gt;"} {
				if !strings.Contains(body, want) {
					t.Errorf("the page does not hold %q", want)
				}
			}
			if strings.Contains(body, "<script>") || strings.Contains(body, "<b>not bold") {
				t.Errorf("the page holds unescaped markup from a call")
			}
		})
	}
	if _, _, err := New(Config{}, &net.TCPAddr{IP: net.IPv4(0, 0, 0, 0), Port: 80}); err == nil {
		t.Error("a console on every address was made")
	}
}

// TestConsoleAnswer: an answer needs the cookie, the form's token and the
// console's own origin; then it answers the approval, as the console.
func TestConsoleAnswer(t *testing.T) {
	s := serve(t)
	ck := s.signIn(t)
	form := func(csrf, verdict, scope string) string {
		return url.Values{"csrf": {csrf}, "id": {s.id}, "verdict": {verdict}, "scope": {scope}}.Encode()
	}
	for _, tt := range []struct {
		name          string
		body          string
		origin, fetch string
		cookie        bool
		want          int
	}{
		{"no cookie", form(s.c.csrf, "approve", "call"), s.base, "same-origin", false, http.StatusUnauthorized},
		{"no origin", form(s.c.csrf, "approve", "call"), "", "", true, http.StatusForbidden},
		{"another origin", form(s.c.csrf, "approve", "call"), "http://evil.example", "cross-site", true, http.StatusForbidden},
		{"a null origin", form(s.c.csrf, "approve", "call"), "null", "", true, http.StatusForbidden},
		{"same origin claimed, cross-site fetch", form(s.c.csrf, "approve", "call"), s.base, "cross-site", true, http.StatusForbidden},
		{"no form token", form("", "approve", "call"), s.base, "same-origin", true, http.StatusForbidden},
		{"a wrong form token", form(strings.Repeat("a", 64), "approve", "call"), s.base, "same-origin", true, http.StatusForbidden},
		{"a scope never offered", form(s.c.csrf, "approve", "forever"), s.base, "same-origin", true, http.StatusBadRequest},
		{"a verdict never offered", form(s.c.csrf, "yes", "call"), s.base, "same-origin", true, http.StatusBadRequest},
		{"approve", form(s.c.csrf, "approve", "session"), s.base, "same-origin", true, http.StatusSeeOther},
		{"approve again", form(s.c.csrf, "deny", ""), s.base, "same-origin", true, http.StatusSeeOther},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", s.base+"/answer", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			if tt.fetch != "" {
				req.Header.Set("Sec-Fetch-Site", tt.fetch)
			}
			if tt.cookie {
				req.AddCookie(ck)
			}
			resp, body := do(t, req)
			if resp.StatusCode != tt.want {
				t.Fatalf("%s, want %d: %s", resp.Status, tt.want, body)
			}
			ap, err := s.store.Get(context.Background(), s.id)
			if err != nil {
				t.Fatal(err)
			}
			switch tt.name {
			case "approve":
				if ap.State != approval.Approved || ap.Answer.Channel != approval.ChannelConsole || ap.Answer.By != "bob" || ap.Answer.Scope != approval.ScopeSession {
					t.Errorf("approval %s %+v, want approved for the session by bob through the console", ap.State, ap.Answer)
				}
			case "approve again":
				if loc := resp.Header.Get("Location"); !strings.Contains(loc, "msg=") || ap.State != approval.Approved {
					t.Errorf("a second answer: to %q, state %s; want refused, said on the page", loc, ap.State)
				}
			default:
				if ap.State != approval.Pending {
					t.Errorf("a refused request answered the approval: %s", ap.State)
				}
			}
		})
	}
}
