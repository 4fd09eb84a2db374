package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestNew: a configuration that could authenticate nobody, or names a
// setting wrongly, stops aegis at start with an error that says what.
func TestNew(t *testing.T) {
	is := newIssuer(t, rsaKey())
	empty := httptest.NewTLSServer(http.NotFoundHandler()) // no discovery, no JWKS
	t.Cleanup(empty.Close)
	noKeys := newIssuer(t) // a JWKS with no keys

	good := HashAPIKey(ciKey)
	for _, tt := range []struct {
		name string
		c    *Config
		want string // "" for success, else a substring of the error
	}{
		{"nil", nil, "no issuer and no API keys"},
		{"zero", &Config{}, "no issuer and no API keys"},
		{"resource alone", &Config{Resource: resource}, "no issuer and no API keys"},
		{"api keys only", &Config{APIKeys: testKeys()}, ""},
		{"issuer only, audience from resource", &Config{Issuer: is.url(), Resource: resource}, ""},
		{"issuer only, audience alone", &Config{Issuer: is.url(), Audience: "aegis"}, ""},
		{"issuer without audience or resource", &Config{Issuer: is.url()}, "without an audience"},
		{"issuer not a URL", &Config{Issuer: "idp.example", Resource: resource}, "want an absolute https URL"},
		{"issuer http, not loopback", &Config{Issuer: "http://idp.example", Resource: resource}, "http is allowed for loopback hosts only"},
		{"issuer with user info", &Config{Issuer: "https://u:p@idp.example", Resource: resource}, "user info"},
		{"resource with fragment", &Config{APIKeys: testKeys(), Resource: resource + "#x"}, "fragment"},
		{"resource with query", &Config{APIKeys: testKeys(), Resource: resource + "?tenant=a"}, "query"},
		{"resource ftp", &Config{APIKeys: testKeys(), Resource: "ftp://aegis.example"}, "want an absolute https URL"},
		{"resource http loopback", &Config{APIKeys: testKeys(), Resource: "http://127.0.0.1:8080/mcp"}, ""},
		{"resource http localhost", &Config{APIKeys: testKeys(), Resource: "http://localhost:8080/mcp"}, ""},
		{"resource http ::1", &Config{APIKeys: testKeys(), Resource: "http://[::1]:8080/mcp"}, ""},
		{"alg none", &Config{Issuer: is.url(), Resource: resource, Algorithms: []string{"RS256", "none"}}, `algorithm "none"`},
		{"alg HS256", &Config{Issuer: is.url(), Resource: resource, Algorithms: []string{"HS256"}}, `algorithm "HS256"`},
		{"alg lower case", &Config{Issuer: is.url(), Resource: resource, Algorithms: []string{"rs256"}}, `algorithm "rs256"`},
		{"algorithms empty, not nil", &Config{Issuer: is.url(), Resource: resource, Algorithms: []string{}}, "Algorithms is empty"},
		{"PS256 and EdDSA", &Config{Issuer: is.url(), Resource: resource, Algorithms: []string{"PS256", "EdDSA"}}, ""},
		{"JWKS URL skips discovery", &Config{Issuer: empty.URL, JWKSURL: is.url() + "/jwks", Resource: resource}, ""},
		{"discovery fails", &Config{Issuer: empty.URL, Resource: resource}, "discovering issuer"},
		{"discovery names another issuer", &Config{Issuer: is.url() + "/", Resource: resource}, "discovering issuer"},
		{"JWKS fails", &Config{Issuer: is.url(), JWKSURL: empty.URL + "/jwks", Resource: resource}, "404"},
		{"JWKS without keys", &Config{Issuer: noKeys.url(), Resource: resource}, "no usable signing key"},
		{"JWKS URL http, not loopback", &Config{Issuer: is.url(), JWKSURL: "http://idp.example/jwks", Resource: resource}, "loopback hosts only"},
		{"bad scope", &Config{APIKeys: testKeys(), ScopesSupported: []string{"mcp read"}}, "scope token"},
		{"key without name", &Config{APIKeys: []APIKey{{Hash: good}}}, "name"},
		{"key name with newline", &Config{APIKeys: []APIKey{{Name: "ci\nadmin", Hash: good}}}, "unprintable"},
		{"key hash short", &Config{APIKeys: []APIKey{{Name: "ci", Hash: good[:62]}}}, "64 hex digits"},
		{"key hash the key itself", &Config{APIKeys: []APIKey{{Name: "ci", Hash: ciKey}}}, "64 hex digits"},
		{"key names twice", &Config{APIKeys: []APIKey{{Name: "ci", Hash: good}, {Name: "ci", Hash: HashAPIKey(backupKey)}}}, "used twice"},
		{"key hashes twice", &Config{APIKeys: []APIKey{{Name: "ci", Hash: good}, {Name: "ci2", Hash: strings.ToUpper(good)}}}, "same hash"},
		{"key role empty", &Config{APIKeys: []APIKey{{Name: "ci", Hash: good, Roles: []string{""}}}}, "role 0: empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(context.Background(), tt.c, is.srv.Client())
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.want == "":
				if a == nil {
					t.Fatal("nil Authenticator")
				}
			case err == nil:
				t.Fatalf("New succeeded, want an error with %q", tt.want)
			case !strings.Contains(err.Error(), tt.want):
				t.Fatalf("err = %v, want one with %q", err, tt.want)
			default:
				t.Log(err)
			}
		})
	}
}

// TestOneKind: with only an issuer, or only API keys, the other kind of
// credential is refused for what it is.
func TestOneKind(t *testing.T) {
	is := newIssuer(t, rsaKey())
	tok := rsaKey().sign(t, is.claims())

	onlyIssuer := newTestAuth(t, is, func(c *Config) { c.APIKeys = nil })
	if id, err := onlyIssuer.Authenticate(request(bearer(tok), "")); err != nil || id.Principal != "alice" {
		t.Errorf("issuer only, JWT: %+v, %v", id, err)
	}
	id, err := onlyIssuer.Authenticate(request(bearer(ciKey), ""))
	checkRefused(t, id, err, UnknownAPIKey, bearer(ciKey))

	onlyKeys, err := New(context.Background(), &Config{APIKeys: testKeys()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := onlyKeys.Authenticate(request(bearer(ciKey), "")); err != nil || id.Principal != "ci-bot" {
		t.Errorf("keys only, key: %+v, %v", id, err)
	}
	id, err = onlyKeys.Authenticate(request(bearer(tok), ""))
	checkRefused(t, id, err, JWTNotAccepted, bearer(tok))
}

// TestClaimForms: where the principal and roles are read from, as
// identity providers put them.
func TestClaimForms(t *testing.T) {
	is := newIssuer(t, ecKey())
	for _, tt := range []struct {
		name                  string
		principalClaim, roles string
		claims                []func(map[string]any)
		want                  *Identity
		reason                Reason
	}{
		{
			name: "keycloak realm roles", roles: "realm_access.roles",
			claims: []func(map[string]any){set("realm_access", map[string]any{"roles": []string{"admin", "dev"}})},
			want:   &Identity{Principal: "alice", Roles: []string{"admin", "dev"}, Method: MethodJWT},
		},
		{
			name: "deeper path", roles: "resource_access.aegis.roles",
			claims: []func(map[string]any){set("resource_access", map[string]any{"aegis": map[string]any{"roles": []string{"ops"}}})},
			want:   &Identity{Principal: "alice", Roles: []string{"ops"}, Method: MethodJWT},
		},
		{
			name: "path absent: no roles", roles: "realm_access.roles",
			want: &Identity{Principal: "alice", Method: MethodJWT},
		},
		{
			name: "path through a string", roles: "realm_access.roles",
			claims: []func(map[string]any){set("realm_access", "admin")},
			reason: BadRoles,
		},
		{
			name: "path through an array", roles: "realm_access.roles",
			claims: []func(map[string]any){set("realm_access", []any{map[string]any{"roles": []string{"admin"}}})},
			reason: BadRoles,
		},
		{
			name: "path ends in an object", roles: "realm_access",
			claims: []func(map[string]any){set("realm_access", map[string]any{"roles": []string{"admin"}})},
			reason: BadRoles,
		},
		{
			name: "namespaced claim with dots wins over the path", roles: "https://aegis.example/roles",
			claims: []func(map[string]any){
				set("https://aegis.example/roles", []string{"auditor"}),
				set("https://aegis", map[string]any{"example/roles": []string{"admin"}}),
			},
			want: &Identity{Principal: "alice", Roles: []string{"auditor"}, Method: MethodJWT},
		},
		{
			name: "scope as roles", roles: "scope",
			claims: []func(map[string]any){set("scope", "mcp:tools mcp:resources")},
			want:   &Identity{Principal: "alice", Roles: []string{"mcp:tools", "mcp:resources"}, Method: MethodJWT},
		},
		{
			name: "empty scope: no roles", roles: "scope",
			claims: []func(map[string]any){set("scope", "")},
			want:   &Identity{Principal: "alice", Method: MethodJWT},
		},
		{
			name: "scope split at spaces only", roles: "scope",
			claims: []func(map[string]any){set("scope", "a\tb")},
			reason: BadRoles,
		},
		{
			name: "role with a space, in an array", roles: "groups",
			claims: []func(map[string]any){set("groups", []string{"Domain Admins"})},
			want:   &Identity{Principal: "alice", Roles: []string{"Domain Admins"}, Method: MethodJWT},
		},
		{
			name: "principal from email", principalClaim: "email",
			claims: []func(map[string]any){set("email", "alice@example.com")},
			want:   &Identity{Principal: "alice@example.com", Roles: []string{"dev"}, Method: MethodJWT},
		},
		{
			name: "principal from a nested claim", principalClaim: "user.name",
			claims: []func(map[string]any){set("user", map[string]any{"name": "Alice Liddell"})},
			want:   &Identity{Principal: "Alice Liddell", Roles: []string{"dev"}, Method: MethodJWT},
		},
		{
			name: "principal claim absent, sub present", principalClaim: "email",
			reason: BadPrincipal,
		},
		{
			name: "principal null", principalClaim: "email",
			claims: []func(map[string]any){set("email", nil)},
			reason: BadPrincipal,
		},
		{
			name: "principal through a string", principalClaim: "user.name",
			claims: []func(map[string]any){set("user", "alice")},
			reason: BadPrincipal,
		},
		{
			name: "principal with a bidi override", principalClaim: "email",
			claims: []func(map[string]any){set("email", "alice\u202e@evil")},
			reason: BadPrincipal,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := newTestAuth(t, is, func(c *Config) { c.PrincipalClaim, c.RolesClaim = tt.principalClaim, tt.roles })
			tok := ecKey().sign(t, is.claims(tt.claims...))
			got, err := a.Authenticate(request(bearer(tok), ""))
			if tt.want == nil {
				checkRefused(t, got, err, tt.reason, bearer(tok))
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPrincipalNotUTF8: a signed payload with bytes that are not UTF-8
// is refused, not repaired into U+FFFD (json.Marshal would repair it, so
// the payload is written by hand).
func TestPrincipalNotUTF8(t *testing.T) {
	is := newIssuer(t, ecKey())
	a := newTestAuth(t, is, nil)
	payload := []byte(`{"iss":"` + is.url() + `","aud":"` + resource + `","exp":` +
		strconv.FormatInt(now.Add(time.Hour).Unix(), 10) + `,"sub":"alice` + "\xff" + `"}`)
	tok := ecKey().sign(t, payload)
	got, err := a.Authenticate(request(bearer(tok), ""))
	checkRefused(t, got, err, MalformedToken, bearer(tok))
}

// TestAPIKeys: NewAPIKey makes keys that authenticate, and the identity
// returned is the caller's to change.
func TestAPIKeys(t *testing.T) {
	key, hash := NewAPIKey()
	if strings.Contains(key, ".") || !isB64Token(key) || len(key) < 32 {
		t.Fatalf("NewAPIKey() = %q: want a dot-free b64token of 128 bits", key)
	}
	if other, _ := NewAPIKey(); other == key {
		t.Fatal("NewAPIKey returned the same key twice")
	}
	a, err := New(context.Background(), &Config{APIKeys: []APIKey{{Name: "svc", Hash: hash, Roles: []string{"r"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := a.Authenticate(request(bearer(key), ""))
	if err != nil {
		t.Fatal(err)
	}
	id.Roles[0] = "admin"
	id, _ = a.Authenticate(request(bearer(key), ""))
	if id.Roles[0] != "r" {
		t.Errorf("changing a returned identity changed the configured key: roles %v", id.Roles)
	}
}
