package auth

import (
	"bytes"
	"flag"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/ golden files")

// TestMetadataURL: RFC 9728 §3.1 puts the well-known path between host
// and path.
func TestMetadataURL(t *testing.T) {
	for _, tt := range []struct{ resource, want string }{
		{"https://aegis.example", "https://aegis.example/.well-known/oauth-protected-resource"},
		{"https://aegis.example/", "https://aegis.example/.well-known/oauth-protected-resource"},
		{"https://aegis.example/mcp", "https://aegis.example/.well-known/oauth-protected-resource/mcp"},
		{"https://aegis.example/mcp/", "https://aegis.example/.well-known/oauth-protected-resource/mcp/"},
		{"https://aegis.example:8443/team/a/mcp", "https://aegis.example:8443/.well-known/oauth-protected-resource/team/a/mcp"},
		{"https://aegis.example/a%20b", "https://aegis.example/.well-known/oauth-protected-resource/a%20b"},
		{"https://aegis.example/a%22b", "https://aegis.example/.well-known/oauth-protected-resource/a%22b"},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"},
	} {
		u, err := url.Parse(tt.resource)
		if err != nil {
			t.Fatal(err)
		}
		if got := metadataURL(u); got != tt.want {
			t.Errorf("metadataURL(%s) = %s, want %s", tt.resource, got, tt.want)
		}
	}
}

// TestMetadataDocument: the document an MCP client reads, as a golden
// file (the issuer's loopback URL written as ISSUER).
func TestMetadataDocument(t *testing.T) {
	is := newIssuer(t, rsaKey())
	a := newTestAuth(t, is, func(c *Config) { c.ScopesSupported = []string{"mcp:tools", "mcp:resources"} })
	got := bytes.ReplaceAll(a.metadata, []byte(is.url()), []byte("ISSUER"))
	golden(t, "metadata.json", got)

	keysOnly := newTestAuth(t, is, func(c *Config) { c.Issuer = "" })
	golden(t, "metadata-keys-only.json", keysOnly.metadata)
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(got)) {
		t.Errorf("%s: got\n%s\nwant\n%s\n(go test -update rewrites it)", name, got, want)
	}
}

// TestMetadataHandler: which requests get the document.
func TestMetadataHandler(t *testing.T) {
	is := newIssuer(t, rsaKey())
	h := newTestAuth(t, is, nil).MetadataHandler()
	none := newTestAuth(t, is, func(c *Config) { c.Resource, c.Audience = "", "aegis" }).MetadataHandler()
	for _, tt := range []struct {
		name   string
		h      http.Handler
		method string
		path   string
		status int
		body   bool
	}{
		{"suffixed", h, "GET", "/.well-known/oauth-protected-resource/mcp", 200, true},
		{"bare", h, "GET", "/.well-known/oauth-protected-resource", 200, true},
		{"head", h, "HEAD", "/.well-known/oauth-protected-resource/mcp", 200, false},
		{"preflight", h, "OPTIONS", "/.well-known/oauth-protected-resource/mcp", 204, false},
		{"post", h, "POST", "/.well-known/oauth-protected-resource/mcp", 405, false},
		{"another resource", h, "GET", "/.well-known/oauth-protected-resource/other", 404, false},
		{"a path below", h, "GET", "/.well-known/oauth-protected-resource/mcp/x", 404, false},
		{"trailing slash", h, "GET", "/.well-known/oauth-protected-resource/mcp/", 404, false},
		{"no resource configured", none, "GET", "/.well-known/oauth-protected-resource", 404, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			tt.h.ServeHTTP(w, httptest.NewRequest(tt.method, "https://aegis.example"+tt.path, nil))
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d", w.Code, tt.status)
			}
			if got := w.Body.Len() > 0; tt.status != 404 && tt.status != 405 && got != tt.body {
				t.Errorf("body %q, want one: %v", w.Body, tt.body)
			}
			if tt.status == 200 {
				if ct := w.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
				if w.Header().Get("Access-Control-Allow-Origin") != "*" {
					t.Error("no CORS header: browser clients cannot read the metadata")
				}
			}
		})
	}
}
