package auth

import (
	"encoding/json"
	"net/http"
	"net/url"
)

// wellKnown is RFC 9728's well-known path.
const wellKnown = "/.well-known/oauth-protected-resource"

// metadataURL is where RFC 9728 §3.1 puts a resource's metadata: the
// well-known path between the host and the resource's path. A path of
// "/" is no path; any other is kept as it is, trailing slash and all,
// since clients derive this URL from the resource's themselves.
func metadataURL(u *url.URL) string {
	p := u.EscapedPath()
	if p == "/" {
		p = ""
	}
	return u.Scheme + "://" + u.Host + wellKnown + p
}

// MetadataURL is the URL of this resource's metadata, which challenges
// name as resource_metadata; "" when Config.Resource is unset.
func (a *Authenticator) MetadataURL() string { return a.metadataURL }

// metadata is the RFC 9728 document.
type metadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
}

func (a *Authenticator) buildMetadata(scopes []string) ([]byte, error) {
	if a.resource == "" {
		return nil, nil
	}
	m := metadata{
		Resource:               a.resource,
		ScopesSupported:        scopes,
		BearerMethodsSupported: []string{"header"},
	}
	if a.issuer != "" {
		m.AuthorizationServers = []string{a.issuer}
	}
	return json.MarshalIndent(m, "", "  ")
}

// MetadataHandler serves this resource's RFC 9728 metadata, which tells
// an MCP client which authorization server to get a token from. It
// answers GET and HEAD at the well-known path, both the path-suffixed
// form of §3.1 (/.well-known/oauth-protected-resource/mcp for a resource
// https://host/mcp) and the bare one that earlier MCP clients ask for,
// with CORS open, since browser-based clients read it cross-origin and
// it holds nothing secret. Mount it on the bare path and the subtree:
//
//	mux.Handle("/.well-known/oauth-protected-resource", a.MetadataHandler())
//	mux.Handle("/.well-known/oauth-protected-resource/", a.MetadataHandler())
//
// Without Config.Resource it answers 404: there is no resource to
// describe.
func (a *Authenticator) MetadataHandler() http.Handler {
	suffixed := ""
	if a.metadataURL != "" {
		u, _ := url.Parse(a.metadataURL)
		suffixed = u.EscapedPath()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		if a.metadata == nil || (p != wellKnown && p != suffixed) {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "*")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=300")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(a.metadata)
		}
	})
}
