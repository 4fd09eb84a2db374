package auth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const wantMetadataURL = "https://aegis.example/.well-known/oauth-protected-resource/mcp"

// whoami answers with the principal the middleware passed on.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	id, ok := FromContext(r.Context())
	if !ok {
		http.Error(w, "no identity", http.StatusInternalServerError)
		return
	}
	io.WriteString(w, id.Principal)
})

// TestMiddleware: what a client sees for each kind of request, and that
// the handler behind runs only with an identity.
func TestMiddleware(t *testing.T) {
	is := newIssuer(t, rsaKey())
	a := newTestAuth(t, is, nil)
	h := a.Middleware(whoami)
	good := rsaKey().sign(t, is.claims())
	expired := rsaKey().sign(t, is.claims(set("exp", now.Add(-time.Second).Unix())))

	for _, tt := range []struct {
		name      string
		auth      []string
		query     string
		status    int
		challenge string
		body      string
	}{
		{"jwt", bearer(good), "", 200, "", "alice"},
		{"api key", bearer(ciKey), "", 200, "", "ci-bot"},
		{"no credentials", nil, "", 401, `Bearer resource_metadata="` + wantMetadataURL + `"`, ""},
		{"basic", []string{"Basic YWxpY2U6cGFzcw=="}, "", 401, `Bearer resource_metadata="` + wantMetadataURL + `"`, ""},
		{"expired", bearer(expired), "", 401, `Bearer resource_metadata="` + wantMetadataURL + `", error="invalid_token", error_description="token expired"`, ""},
		{"unknown key", bearer("aegis_nope"), "", 401, `Bearer resource_metadata="` + wantMetadataURL + `", error="invalid_token", error_description="unknown API key"`, ""},
		{"two headers", []string{"Bearer " + good, "Bearer " + good}, "", 400, `Bearer resource_metadata="` + wantMetadataURL + `", error="invalid_request", error_description="more than one Authorization header"`, ""},
		{"token in query", nil, "access_token=" + good, 400, `Bearer resource_metadata="` + wantMetadataURL + `", error="invalid_request", error_description="access token in the query string"`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, request(tt.auth, tt.query))
			if w.Code != tt.status {
				t.Errorf("status %d, want %d (body %q)", w.Code, tt.status, w.Body)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate:\n got %s\nwant %s", got, tt.challenge)
			}
			if tt.status == 200 && w.Body.String() != tt.body {
				t.Errorf("body %q, want %q", w.Body, tt.body)
			}
			if tt.status != 200 && w.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("a refusal without Cache-Control: no-store")
			}
		})
	}
}

// TestChallenge: each class's answer, with and without a resource.
func TestChallenge(t *testing.T) {
	withResource := &Authenticator{metadataURL: wantMetadataURL}
	without := &Authenticator{}
	for _, tt := range []struct {
		name      string
		a         *Authenticator
		err       error
		status    int
		challenge string
	}{
		{"keys unavailable", withResource, &Error{Reason: KeysUnavailable}, 503, ""},
		{"no credentials, no resource", without, &Error{Reason: NoCredentials}, 401, "Bearer"},
		{"bad token, no resource", without, &Error{Reason: BadSignature}, 401, `Bearer error="invalid_token", error_description="bad signature"`},
		{"malformed header, no resource", without, &Error{Reason: MalformedHeader}, 400, `Bearer error="invalid_request", error_description="malformed Authorization header"`},
		{"not an *Error", withResource, errors.New("boom"), 401, `Bearer resource_metadata="` + wantMetadataURL + `", error="invalid_token"`},
		{"wrapped", withResource, wrap(&Error{Reason: Expired}), 401, `Bearer resource_metadata="` + wantMetadataURL + `", error="invalid_token", error_description="token expired"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, challenge := tt.a.Challenge(tt.err)
			if status != tt.status || challenge != tt.challenge {
				t.Errorf("Challenge = %d %q, want %d %q", status, challenge, tt.status, tt.challenge)
			}
		})
	}
}

func wrap(err error) error { return &wrapped{err} }

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "serving: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

// TestContext: an identity is found only where one was put.
func TestContext(t *testing.T) {
	if id, ok := FromContext(context.Background()); ok {
		t.Errorf("FromContext(Background) = %+v, true", id)
	}
	if id, ok := FromContext(NewContext(context.Background(), nil)); ok {
		t.Errorf("FromContext of a nil identity = %+v, true", id)
	}
	want := &Identity{Principal: "alice", Method: MethodJWT}
	got, ok := FromContext(NewContext(context.Background(), want))
	if !ok || got != want {
		t.Errorf("FromContext = %+v %v, want %+v", got, ok, want)
	}
}

// TestOverTheWire: an MCP client's view through a real server on
// loopback: a 401 that names the metadata, the metadata that names the
// issuer, and then the token gets through. Two Authorization header
// lines arrive as two values and are refused.
func TestOverTheWire(t *testing.T) {
	is := newIssuer(t, ecKey())
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	a := newTestAuth(t, is, func(c *Config) { c.Resource = srv.URL + "/mcp" })
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource", a.MetadataHandler())
	mux.Handle("/.well-known/oauth-protected-resource/", a.MetadataHandler())
	mux.Handle("/mcp", a.Middleware(whoami))
	srv.Config.Handler = mux

	resp := do(t, "POST", srv.URL+"/mcp", nil)
	want := `Bearer resource_metadata="` + srv.URL + `/.well-known/oauth-protected-resource/mcp"`
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != want {
		t.Fatalf("no token: %s %q, want 401 %q", resp.Status, resp.Header.Get("WWW-Authenticate"), want)
	}
	md := do(t, "GET", srv.URL+"/.well-known/oauth-protected-resource/mcp", nil)
	body, _ := io.ReadAll(md.Body)
	if md.StatusCode != 200 || !cmp.Equal(string(body), string(a.metadata)) {
		t.Fatalf("metadata: %s %s", md.Status, body)
	}

	tok := ecKey().sign(t, is.claims(set("aud", srv.URL+"/mcp")))
	resp = do(t, "POST", srv.URL+"/mcp", []string{"Bearer " + tok + "  "}) // the server trims the trailing spaces
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "alice" {
		t.Fatalf("with a token: %s %s", resp.Status, body)
	}
	resp = do(t, "POST", srv.URL+"/mcp", []string{"Bearer " + tok, "Bearer " + ciKey})
	if resp.StatusCode != 400 {
		t.Fatalf("two headers: %s, want 400", resp.Status)
	}
}

func do(t *testing.T, method, url string, auth []string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range auth {
		req.Header.Add("Authorization", v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
