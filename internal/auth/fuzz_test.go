package auth

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// FuzzAuthenticate feeds Authenticate any Authorization header and query:
// it never panics, an identity it returns is well-formed, and a refusal
// is an *Error of a known reason whose challenge is a valid header value
// and which does not repeat the credential.
func FuzzAuthenticate(f *testing.F) {
	is := newIssuer(f, rsaKey(), ecKey())
	a := newTestAuth(f, is, nil)
	good := rsaKey().sign(f, is.claims())
	for _, s := range []string{
		"Bearer " + good, "bearer " + ecKey().sign(f, is.claims()), "Bearer " + ciKey, "Basic YWxpY2U6cGFzcw==",
		"Bearer", "Bearer ", "Bearer a.b", "Bearer a.b.c", "Bearer ...", "Bearer =", "Bearer a=b",
		"Bearer " + rawJWT(f, map[string]any{"alg": "none"}, is.claims(), nil),
		"Bearer " + rawJWT(f, map[string]any{"alg": "RS256", "kid": strings.Repeat("k", 100)}, is.claims(), []byte("x")),
		"Bearer " + rawJWT(f, map[string]any{"alg": "RS256", "crit": []string{"b64"}, "b64": false}, is.claims(), []byte("x")),
		"Bearer eyJhbGciOiJSUzI1NiJ9.e30.", "Bearer e30.e30.e30",
	} {
		f.Add(s, "", false)
	}
	f.Add("Bearer "+good, "access_token=x", false)
	f.Add("Bearer "+good, "a=b;access_token", false)
	f.Add("Bearer "+ciKey, "", true)

	f.Fuzz(func(t *testing.T, header, query string, twice bool) {
		r, err := http.NewRequest("GET", "https://aegis.example/mcp", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.URL.RawQuery = query
		r.Header["Authorization"] = []string{header}
		if twice {
			r.Header["Authorization"] = append(r.Header["Authorization"], header)
		}
		id, err := a.Authenticate(r)
		if err == nil {
			checkIdentity(t, id)
			return
		}
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("err = %T %v, want an *Error under ErrUnauthenticated", err, err)
		}
		if _, known := reasonNames[e.Reason]; !known {
			t.Fatalf("unknown reason %d: %v", e.Reason, err)
		}
		status, challenge := a.Challenge(err)
		if status != 400 && status != 401 && status != 503 {
			t.Fatalf("status %d for %v", status, err)
		}
		if strings.ContainsAny(challenge, "\r\n\x00") {
			t.Fatalf("challenge %q is not a header value", challenge)
		}
		_, cred, _ := strings.Cut(header, " ")
		if cred = strings.TrimLeft(cred, " "); len(cred) >= 16 && strings.Contains(err.Error(), cred) {
			t.Fatalf("error %q repeats the credential", err)
		}
	})
}

// FuzzClaims signs any payload with the issuer's key: whatever the
// claims, Authenticate never panics, and an identity it returns is the
// one the payload's sub names, well-formed.
func FuzzClaims(f *testing.F) {
	is := newIssuer(f, ecKey())
	a := newTestAuth(f, is, func(c *Config) { c.RolesClaim = "realm_access.roles" })
	for _, c := range []map[string]any{
		is.claims(),
		is.claims(set("realm_access", map[string]any{"roles": []string{"a", "b", "a"}})),
		is.claims(set("realm_access", map[string]any{"roles": "a b"})),
		is.claims(set("realm_access", "x")),
		is.claims(set("realm_access.roles", []any{1})),
		is.claims(set("aud", []any{resource, 1})),
		is.claims(set("exp", 1e300)),
		is.claims(set("nbf", -1e300)),
		is.claims(set("sub", nil)),
	} {
		b, _ := json.Marshal(c)
		f.Add(b)
	}
	good, _ := json.Marshal(is.claims())
	f.Add(append(good[:len(good)-1], `,"sub":"mallory"}`...)) // duplicate keys: the last wins, for go-oidc and us alike
	f.Add(append(good[:len(good)-1], `,"SUB":"mallory"}`...))
	f.Add([]byte(`{"sub":"a","SUB":"b"}`))
	f.Add([]byte(`{} {}`))
	f.Add([]byte("\xff"))

	f.Fuzz(func(t *testing.T, payload []byte) {
		tok := ecKey().sign(t, payload)
		id, err := a.Authenticate(request(bearer(tok), ""))
		if err != nil {
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("a signed token refused outside ErrInvalidToken: %v", err)
			}
			return
		}
		checkIdentity(t, id)
		// The reference: encoding/json into a map (a struct would match
		// "SUB" too).
		var claims map[string]any
		if err := json.Unmarshal(payload, &claims); err != nil || claims["sub"] != id.Principal {
			t.Fatalf("principal %q, but the payload's sub decodes to %#v (%v)", id.Principal, claims["sub"], err)
		}
	})
}

func checkIdentity(t *testing.T, id *Identity) {
	t.Helper()
	if id == nil {
		t.Fatal("nil identity without an error")
	}
	if id.Method != MethodJWT && id.Method != MethodAPIKey {
		t.Fatalf("method %q", id.Method)
	}
	if err := checkName(id.Principal); err != nil {
		t.Fatalf("principal %q: %v", id.Principal, err)
	}
	for i, r := range id.Roles {
		if err := checkName(r); err != nil || slices.Contains(id.Roles[:i], r) {
			t.Fatalf("roles %q: role %d bad or repeated (%v)", id.Roles, i, err)
		}
	}
	if id.Roles != nil && len(id.Roles) == 0 {
		t.Fatal("empty, non-nil roles")
	}
}
