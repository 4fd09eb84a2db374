package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// The test issuer: an OpenID provider on loopback (TLS, so the https rule
// of New is exercised as in production) with a discovery document and a
// JWKS it can change while the test runs, and keys generated here.

// now is the tests' fixed clock.
var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// resource is aegis's own URL in the tests: the audience tokens must carry.
const resource = "https://aegis.example/mcp"

// A signingKey signs JWTs as the issuer would.
type signingKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

// Keys are slow to make under -race; make each once.
var (
	rsaPriv   = sync.OnceValue(func() *rsa.PrivateKey { return mustRSA() })
	rsaOther  = sync.OnceValue(func() *rsa.PrivateKey { return mustRSA() })
	ecPriv    = sync.OnceValue(func() *ecdsa.PrivateKey { return mustEC() })
	ecRotated = sync.OnceValue(func() *ecdsa.PrivateKey { return mustEC() })
)

func mustRSA() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
}

func mustEC() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

func rsaKey() signingKey      { return signingKey{"rsa-1", jose.RS256, rsaPriv()} }
func ecKey() signingKey       { return signingKey{"ec-1", jose.ES256, ecPriv()} }
func strangerKey() signingKey { return signingKey{"rsa-1", jose.RS256, rsaOther()} } // same kid, not published
func rotatedKey() signingKey  { return signingKey{"ec-2", jose.ES256, ecRotated()} }

// jwk is the key as the issuer publishes it.
func (k signingKey) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
}

// sign signs claims (a map, or raw JSON bytes) as a compact JWS.
func (k signingKey) sign(t testing.TB, claims any) string {
	t.Helper()
	payload, ok := claims.([]byte)
	if !ok {
		var err error
		if payload, err = json.Marshal(claims); err != nil {
			t.Fatal(err)
		}
	}
	opts := (&jose.SignerOptions{}).WithType("JWT")
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// b64 is base64url without padding, as JWS uses.
func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// rawJWT assembles a token from a header and claims without signing it
// with go-jose, for the tokens a well-behaved signer refuses to make.
func rawJWT(t testing.TB, header, claims any, sig []byte) string {
	t.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	c, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return b64(h) + "." + b64(c) + "." + b64(sig)
}

// An issuer serves discovery and a JWKS on loopback.
type issuer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetches atomic.Int32 // JWKS requests served

	// Knobs for the JWKS endpoint: fail answers 500, raw replaces the
	// set with these bytes, and hold, when set, is waited on before
	// answering.
	fail atomic.Bool
	raw  atomic.Pointer[[]byte]
	hold atomic.Pointer[chan struct{}]
}

func newIssuer(t testing.TB, published ...signingKey) *issuer {
	t.Helper()
	is := &issuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                is.srv.URL,
			"jwks_uri":                              is.srv.URL + "/jwks",
			"authorization_endpoint":                is.srv.URL + "/authorize",
			"token_endpoint":                        is.srv.URL + "/token",
			"response_types_supported":              []string{"code"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		if h := is.hold.Load(); h != nil {
			select {
			case <-*h:
			case <-r.Context().Done():
				return
			}
		}
		if is.fail.Load() {
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
			return
		}
		if raw := is.raw.Load(); raw != nil {
			w.Write(*raw)
			return
		}
		is.mu.Lock()
		set := jose.JSONWebKeySet{Keys: is.keys}
		is.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(set)
	})
	is.srv = httptest.NewTLSServer(mux)
	t.Cleanup(is.srv.Close)
	is.publish(published...)
	return is
}

func (is *issuer) url() string { return is.srv.URL }

// publish replaces the JWKS.
func (is *issuer) publish(keys ...signingKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys = is.keys[:0]
	for _, k := range keys {
		is.keys = append(is.keys, k.jwk())
	}
}

// claims are a good token's claims for this issuer, changed by edits.
func (is *issuer) claims(edits ...func(map[string]any)) map[string]any {
	c := map[string]any{
		"iss":   is.url(),
		"aud":   resource,
		"sub":   "alice",
		"iat":   now.Add(-time.Minute).Unix(),
		"nbf":   now.Add(-time.Minute).Unix(),
		"exp":   now.Add(time.Hour).Unix(),
		"roles": []string{"dev"},
	}
	for _, e := range edits {
		e(c)
	}
	return c
}

// set and del are claim edits.
func set(k string, v any) func(map[string]any) { return func(c map[string]any) { c[k] = v } }
func del(k string) func(map[string]any)        { return func(c map[string]any) { delete(c, k) } }

// clock is a settable clock for Config.Now.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(now.UnixNano())
	return c
}
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }
