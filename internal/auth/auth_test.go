package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"
)

// The API keys of the tests. A key is what a service account holds; the
// configuration holds only its hash.
const (
	ciKey     = "aegis_3f1c0b6e9d2a4c7f8e5b1a0d9c8b7a6f"
	backupKey = "aegis_0a1b2c3d4e5f60718293a4b5c6d7e8f9"
)

func testKeys() []APIKey {
	return []APIKey{
		{Name: "ci-bot", Hash: HashAPIKey(ciKey), Roles: []string{"ci", "deploy"}},
		{Name: "backup", Hash: strings.ToUpper(HashAPIKey(backupKey))}, // hex in either case
	}
}

// newTestAuth builds an Authenticator against is, with both JWTs and API
// keys, and the fixed clock; edit changes the configuration first.
func newTestAuth(t testing.TB, is *issuer, edit func(*Config)) *Authenticator {
	t.Helper()
	c := &Config{
		Issuer:   is.url(),
		Resource: resource,
		APIKeys:  testKeys(),
		Now:      func() time.Time { return now },
	}
	if edit != nil {
		edit(c)
	}
	a, err := New(context.Background(), c, is.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func bearer(tok string) []string { return []string{"Bearer " + tok} }

// request builds a request with these Authorization values and query.
func request(auth []string, query string) *http.Request {
	r, err := http.NewRequest("POST", resource+"?"+query, nil)
	if err != nil {
		panic(err)
	}
	for _, v := range auth {
		r.Header.Add("Authorization", v)
	}
	return r
}

// rsaPublicPEM is the issuer's RSA public key as PEM, the bytes an
// algorithm-confusion attacker uses as an HMAC secret.
func rsaPublicPEM(t *testing.T) []byte {
	der, err := x509.MarshalPKIXPublicKey(rsaPriv().Public())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func hs256(t *testing.T, secret []byte, header, claims any) string {
	unsigned := rawJWT(t, header, claims, nil)
	unsigned = unsigned[:len(unsigned)-1] // drop the empty signature's dot
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(unsigned))
	return unsigned + "." + b64(m.Sum(nil))
}

// TestAuthenticate is the adversarial table: every way a request can
// claim an identity it does not have, and the reason it is refused.
func TestAuthenticate(t *testing.T) {
	is := newIssuer(t, rsaKey(), ecKey())
	a := newTestAuth(t, is, nil)

	good := rsaKey().sign(t, is.claims())
	alice := &Identity{Principal: "alice", Roles: []string{"dev"}, Method: MethodJWT}
	der, _ := x509.MarshalPKIXPublicKey(rsaPriv().Public())
	parts := strings.Split(good, ".")
	tampered := rsaKey().sign(t, is.claims(set("sub", "admin")))
	tparts := strings.Split(tampered, ".")

	for _, tt := range []struct {
		name   string
		auth   []string // Authorization header values
		query  string
		want   *Identity // nil: refused with reason
		reason Reason
	}{
		// What must work.
		{name: "RS256", auth: bearer(good), want: alice},
		{name: "ES256", auth: bearer(ecKey().sign(t, is.claims())), want: alice},
		{name: "lowercase scheme", auth: []string{"bearer " + good}, want: alice},
		{name: "uppercase scheme", auth: []string{"BEARER " + good}, want: alice},
		{name: "spaces after scheme", auth: []string{"Bearer   " + good}, want: alice},
		{name: "audience array with aegis", auth: bearer(rsaKey().sign(t, is.claims(set("aud", []string{"other", resource})))), want: alice},
		{name: "nbf and iat within leeway", auth: bearer(rsaKey().sign(t, is.claims(set("nbf", now.Add(Leeway/2).Unix()), set("iat", now.Add(Leeway/2).Unix())))), want: alice},
		{name: "no nbf no iat", auth: bearer(rsaKey().sign(t, is.claims(del("nbf"), del("iat")))), want: alice},
		{name: "no kid tries every key", auth: bearer(signingKey{"", rsaKey().alg, rsaKey().priv}.sign(t, is.claims())), want: alice},
		{name: "no roles claim", auth: bearer(rsaKey().sign(t, is.claims(del("roles")))), want: &Identity{Principal: "alice", Method: MethodJWT}},
		{name: "roles null", auth: bearer(rsaKey().sign(t, is.claims(set("roles", nil)))), want: &Identity{Principal: "alice", Method: MethodJWT}},
		{name: "roles string splits like scope", auth: bearer(rsaKey().sign(t, is.claims(set("roles", "dev  ops")))), want: &Identity{Principal: "alice", Roles: []string{"dev", "ops"}, Method: MethodJWT}},
		{name: "roles deduplicated", auth: bearer(rsaKey().sign(t, is.claims(set("roles", []string{"dev", "ops", "dev"})))), want: &Identity{Principal: "alice", Roles: []string{"dev", "ops"}, Method: MethodJWT}},
		{name: "api key", auth: bearer(ciKey), want: &Identity{Principal: "ci-bot", Roles: []string{"ci", "deploy"}, Method: MethodAPIKey}},
		{name: "api key, hash configured upper case", auth: bearer(backupKey), want: &Identity{Principal: "backup", Method: MethodAPIKey}},

		// The request.
		{name: "no header", reason: NoCredentials},
		{name: "basic scheme", auth: []string{"Basic YWxpY2U6cGFzcw=="}, reason: UnsupportedScheme},
		{name: "api key under basic", auth: []string{"Basic " + ciKey}, reason: UnsupportedScheme},
		{name: "two headers", auth: []string{"Bearer " + good, "Bearer " + good}, reason: MultipleHeaders},
		{name: "two headers, second a key", auth: []string{"Bearer " + good, "Bearer " + ciKey}, reason: MultipleHeaders},
		{name: "token in query", query: "access_token=" + good, reason: TokenInQuery},
		{name: "token in query and header", auth: bearer(good), query: "access_token=" + good, reason: TokenInQuery},
		{name: "token in query, key percent-encoded", query: "access%5Ftoken=" + good, reason: TokenInQuery},
		{name: "token in query after a semicolon", auth: bearer(good), query: "a=b;access_token=" + good, reason: TokenInQuery},
		{name: "empty access_token in query", auth: bearer(good), query: "access_token=", reason: TokenInQuery},
		{name: "empty bearer", auth: []string{"Bearer"}, reason: MalformedHeader},
		{name: "empty bearer with space", auth: []string{"Bearer "}, reason: MalformedHeader},
		{name: "two tokens in one header", auth: []string{"Bearer " + good + ", Bearer " + good}, reason: MalformedHeader},
		{name: "token then junk", auth: []string{"Bearer " + good + " x"}, reason: MalformedHeader},
		{name: "tab after scheme", auth: []string{"Bearer\t" + good}, reason: MalformedHeader},
		{name: "control character", auth: []string{"Bearer a\x00b"}, reason: MalformedHeader},
		{name: "non-ascii", auth: []string{"Bearer aegis_é"}, reason: MalformedHeader},

		// The token's shape.
		{name: "two parts", auth: bearer(parts[0] + "." + parts[1]), reason: MalformedToken},
		{name: "four parts", auth: bearer(good + ".x"), reason: MalformedToken},
		{name: "five parts (JWE)", auth: bearer(good + ".x.y"), reason: MalformedToken},
		{name: "empty header part", auth: bearer("." + parts[1] + "." + parts[2]), reason: MalformedToken},
		{name: "bad base64 in header", auth: bearer("e/+J." + parts[1] + "." + parts[2]), reason: MalformedToken},
		{name: "padded base64", auth: bearer(parts[0] + "." + parts[1] + "." + parts[2] + "=="), reason: MalformedToken},
		{name: "padding inside", auth: bearer(parts[0] + "==." + parts[1] + "." + parts[2]), reason: MalformedHeader},
		{name: "bad base64 in payload", auth: bearer(parts[0] + ".e/+J." + parts[2]), reason: MalformedToken},
		{name: "header not JSON", auth: bearer(b64([]byte("RS256")) + "." + parts[1] + "." + parts[2]), reason: MalformedToken},
		{name: "header a JSON array", auth: bearer(b64([]byte(`["RS256"]`)) + "." + parts[1] + "." + parts[2]), reason: MalformedToken},
		{name: "header without alg", auth: bearer(b64([]byte(`{"kid":"rsa-1"}`)) + "." + parts[1] + "." + parts[2]), reason: MalformedToken},
		{name: "huge header", auth: bearer(b64([]byte(`{"alg":"RS256","x":"`+strings.Repeat("A", 1<<20)+`"}`)) + "." + parts[1] + "." + parts[2]), reason: MalformedToken},
		{name: "crit header", auth: bearer(rawJWT(t, map[string]any{"alg": "RS256", "kid": "rsa-1", "crit": []string{"exp"}, "exp": 1}, is.claims(), []byte("sig"))), reason: MalformedToken},
		{name: "payload not an object", auth: bearer(rsaKey().sign(t, []byte(`["alice"]`))), reason: MalformedToken},
		{name: "payload not JSON", auth: bearer(rsaKey().sign(t, []byte(`alice`))), reason: MalformedToken},
		{name: "no exp", auth: bearer(rsaKey().sign(t, is.claims(del("exp")))), reason: MalformedToken},
		{name: "exp a string", auth: bearer(rsaKey().sign(t, is.claims(set("exp", "tomorrow")))), reason: MalformedToken},

		// The signature.
		{name: "alg none", auth: bearer(rawJWT(t, map[string]any{"alg": "none", "typ": "JWT"}, is.claims(), nil)), reason: AlgorithmNotAllowed},
		{name: "alg None", auth: bearer(rawJWT(t, map[string]any{"alg": "None"}, is.claims(), nil)), reason: AlgorithmNotAllowed},
		{name: "HS256 keyed with the RSA public key PEM", auth: bearer(hs256(t, rsaPublicPEM(t), map[string]any{"alg": "HS256", "kid": "rsa-1"}, is.claims())), reason: AlgorithmNotAllowed},
		{name: "HS256 keyed with the RSA public key DER", auth: bearer(hs256(t, der, map[string]any{"alg": "HS256"}, is.claims())), reason: AlgorithmNotAllowed},
		{name: "PS256 not configured", auth: bearer(signingKey{"rsa-1", "PS256", rsaPriv()}.sign(t, is.claims())), reason: AlgorithmNotAllowed},
		{name: "signed by a key not in the JWKS, same kid", auth: bearer(strangerKey().sign(t, is.claims())), reason: BadSignature},
		{name: "signed by a key not in the JWKS, no kid", auth: bearer(signingKey{"", jose.RS256, rsaOther()}.sign(t, is.claims())), reason: BadSignature},
		{name: "unknown kid", auth: bearer(signingKey{"rsa-9", jose.RS256, rsaOther()}.sign(t, is.claims())), reason: UnknownKey},
		{name: "kid of an EC key, alg RS256", auth: bearer(signingKey{"ec-1", jose.RS256, rsaOther()}.sign(t, is.claims())), reason: BadSignature},
		{name: "payload swapped under a good signature", auth: bearer(parts[0] + "." + tparts[1] + "." + parts[2]), reason: BadSignature},
		{name: "signature stripped", auth: bearer(parts[0] + "." + parts[1] + "."), reason: BadSignature},

		// The claims.
		{name: "expired", auth: bearer(rsaKey().sign(t, is.claims(set("exp", now.Add(-time.Second).Unix())))), reason: Expired},
		{name: "nbf in the future", auth: bearer(rsaKey().sign(t, is.claims(set("nbf", now.Add(2*Leeway).Unix())))), reason: NotYetValid},
		{name: "iat in the future", auth: bearer(rsaKey().sign(t, is.claims(set("iat", now.Add(2*Leeway).Unix())))), reason: NotYetValid},
		{name: "wrong audience", auth: bearer(rsaKey().sign(t, is.claims(set("aud", "https://other.example/mcp")))), reason: WrongAudience},
		{name: "audience array without aegis", auth: bearer(rsaKey().sign(t, is.claims(set("aud", []string{"https://other.example", "client-123"})))), reason: WrongAudience},
		{name: "audience a prefix of aegis's", auth: bearer(rsaKey().sign(t, is.claims(set("aud", "https://aegis.example")))), reason: WrongAudience},
		{name: "no audience", auth: bearer(rsaKey().sign(t, is.claims(del("aud")))), reason: WrongAudience},
		{name: "wrong issuer", auth: bearer(rsaKey().sign(t, is.claims(set("iss", "https://evil.example")))), reason: WrongIssuer},
		{name: "issuer with trailing slash", auth: bearer(rsaKey().sign(t, is.claims(set("iss", is.url()+"/")))), reason: WrongIssuer},
		{name: "no issuer", auth: bearer(rsaKey().sign(t, is.claims(del("iss")))), reason: WrongIssuer},
		{name: "no sub", auth: bearer(rsaKey().sign(t, is.claims(del("sub")))), reason: BadPrincipal},
		{name: "empty sub", auth: bearer(rsaKey().sign(t, is.claims(set("sub", "")))), reason: BadPrincipal},
		{name: "sub a number", auth: bearer(rsaKey().sign(t, is.claims(set("sub", 42)))), reason: BadPrincipal},
		{name: "sub an object", auth: bearer(rsaKey().sign(t, is.claims(set("sub", map[string]any{"id": "alice"})))), reason: BadPrincipal},
		{name: "sub with a newline", auth: bearer(rsaKey().sign(t, is.claims(set("sub", "alice\nprincipal=admin")))), reason: BadPrincipal},
		{name: "sub too long", auth: bearer(rsaKey().sign(t, is.claims(set("sub", strings.Repeat("a", maxNameBytes+1))))), reason: BadPrincipal},
		{name: "roles a number", auth: bearer(rsaKey().sign(t, is.claims(set("roles", 7)))), reason: BadRoles},
		{name: "roles an object", auth: bearer(rsaKey().sign(t, is.claims(set("roles", map[string]any{"admin": true})))), reason: BadRoles},
		{name: "roles a bool", auth: bearer(rsaKey().sign(t, is.claims(set("roles", true)))), reason: BadRoles},
		{name: "roles array with a number", auth: bearer(rsaKey().sign(t, is.claims(set("roles", []any{"dev", 1})))), reason: BadRoles},
		{name: "roles array with an empty string", auth: bearer(rsaKey().sign(t, is.claims(set("roles", []any{"dev", ""})))), reason: BadRoles},
		{name: "roles array with a nested array", auth: bearer(rsaKey().sign(t, is.claims(set("roles", []any{[]string{"admin"}})))), reason: BadRoles},
		{name: "roles with a control character", auth: bearer(rsaKey().sign(t, is.claims(set("roles", []any{"dev\x00admin"})))), reason: BadRoles},
		{name: "too many roles", auth: bearer(rsaKey().sign(t, is.claims(set("roles", make([]string, maxRoles+1))))), reason: BadRoles},

		// API keys.
		{name: "wrong api key", auth: bearer("aegis_ffffffffffffffffffffffffffffffff"), reason: UnknownAPIKey},
		{name: "api key prefix", auth: bearer(ciKey[:len(ciKey)-1]), reason: UnknownAPIKey},
		{name: "api key extended", auth: bearer(ciKey + "0"), reason: UnknownAPIKey},
		{name: "api key other case", auth: bearer(strings.ToUpper(ciKey)), reason: UnknownAPIKey},
		{name: "api key's hash as the key", auth: bearer(HashAPIKey(ciKey)), reason: UnknownAPIKey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.Authenticate(request(tt.auth, tt.query))
			if tt.want != nil {
				if err != nil {
					t.Fatalf("err = %v, want %+v", err, tt.want)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("identity (-want +got):\n%s", diff)
				}
				return
			}
			checkRefused(t, got, err, tt.reason, tt.auth)
		})
	}
}

// checkRefused: err is an *Error of the reason, in the reason's class,
// and says nothing of the credentials.
func checkRefused(t *testing.T, got *Identity, err error, reason Reason, auth []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("authenticated %+v, want %v", got, reason)
	}
	if got != nil {
		t.Errorf("identity %+v alongside error %v", got, err)
	}
	t.Log(err)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %T %v, want *Error", err, err)
	}
	if e.Reason != reason {
		t.Errorf("reason = %v (%v), want %v", e.Reason, err, reason)
	}
	if !errors.Is(err, reason.class()) || !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("err = %v, not in class %v", err, reason.class())
	}
	for _, v := range auth {
		_, cred, _ := strings.Cut(v, " ")
		for _, part := range strings.Split(strings.TrimSpace(cred), ".") {
			if len(part) >= 16 && strings.Contains(err.Error(), part) {
				t.Errorf("error %q repeats the credential", err)
			}
		}
	}
}
