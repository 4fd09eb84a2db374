package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// authAt builds an Authenticator on the settable clock c.
func authAt(t *testing.T, is *issuer, c *clock) *Authenticator {
	t.Helper()
	return newTestAuth(t, is, func(cfg *Config) { cfg.Now = c.now })
}

// longLived are claims that outlive the clock moves of these tests.
func longLived(is *issuer) map[string]any {
	return is.claims(set("exp", now.Add(3*maxKeyAge).Unix()))
}

func mustAuth(t *testing.T, a *Authenticator, tok, want string) {
	t.Helper()
	id, err := a.Authenticate(request(bearer(tok), ""))
	if err != nil {
		t.Fatalf("%s: %v", want, err)
	}
	if id.Principal != "alice" {
		t.Fatalf("%s: principal %q", want, id.Principal)
	}
}

func mustRefuse(t *testing.T, a *Authenticator, tok string, reason Reason) {
	t.Helper()
	id, err := a.Authenticate(request(bearer(tok), ""))
	checkRefused(t, id, err, reason, bearer(tok))
}

// TestKeyRotation: a key the issuer rotates in is fetched on first sight
// of its kid, at most once per minRefresh however many tokens ask; a key
// it withdraws stops verifying within maxKeyAge.
func TestKeyRotation(t *testing.T) {
	c := newClock()
	is := newIssuer(t, rsaKey())
	a := authAt(t, is, c)
	old := rsaKey().sign(t, longLived(is))
	rotated := rotatedKey().sign(t, longLived(is))
	base := is.fetches.Load()

	mustAuth(t, a, old, "the published key")
	mustRefuse(t, a, rotated, UnknownKey)
	is.publish(rsaKey(), rotatedKey())
	mustRefuse(t, a, rotated, UnknownKey) // the last fetch was under minRefresh ago
	if n := is.fetches.Load() - base; n != 0 {
		t.Fatalf("%d JWKS fetches within minRefresh of the last, want 0", n)
	}

	c.add(minRefresh)
	mustAuth(t, a, rotated, "the rotated key, once minRefresh passed")
	if n := is.fetches.Load() - base; n != 1 {
		t.Fatalf("%d JWKS fetches for the rotation, want 1", n)
	}

	// A flood of forged kids costs the issuer nothing more.
	for i := range 50 {
		forged := signingKey{fmt.Sprintf("forged-%d", i), jose.ES256, ecPriv()}.sign(t, longLived(is))
		mustRefuse(t, a, forged, UnknownKey)
	}
	if n := is.fetches.Load() - base; n != 1 {
		t.Fatalf("%d JWKS fetches after 50 forged kids, want still 1", n)
	}

	// Withdrawn: good until the keys are older than maxKeyAge.
	is.publish(rotatedKey())
	mustAuth(t, a, old, "a withdrawn key before maxKeyAge")
	c.add(maxKeyAge)
	mustRefuse(t, a, old, UnknownKey)
	mustAuth(t, a, rotated, "the key that stayed")
}

// TestKeysUnavailable: while the issuer's JWKS is down, tokens of known
// keys still verify, and an unknown kid is refused as unavailable (503),
// not invalid, once per minRefresh.
func TestKeysUnavailable(t *testing.T) {
	c := newClock()
	is := newIssuer(t, rsaKey())
	a := authAt(t, is, c)
	good := rsaKey().sign(t, longLived(is))
	unknown := rotatedKey().sign(t, longLived(is))
	is.fail.Store(true)

	mustAuth(t, a, good, "a cached key while the JWKS is down")
	c.add(minRefresh)
	_, err := a.Authenticate(request(bearer(unknown), ""))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("unknown kid, JWKS down: %v, want ErrUnavailable", err)
	}
	if status, _ := a.Challenge(err); status != 503 {
		t.Errorf("status %d, want 503", status)
	}
	mustRefuse(t, a, unknown, UnknownKey) // no second try within minRefresh

	c.add(maxKeyAge)
	mustAuth(t, a, good, "stale keys while the JWKS stays down")

	is.fail.Store(false)
	is.publish(rsaKey(), rotatedKey())
	c.add(minRefresh)
	mustAuth(t, a, unknown, "the JWKS back")
}

// TestRefreshCancelled: a request cancelled while the keys are being
// fetched gives up alone; the fetch goes on for everyone else.
func TestRefreshCancelled(t *testing.T) {
	c := newClock()
	is := newIssuer(t, rsaKey())
	a := authAt(t, is, c)
	rotated := rotatedKey().sign(t, longLived(is))
	is.publish(rsaKey(), rotatedKey())
	hold := make(chan struct{})
	is.hold.Store(&hold)
	c.add(minRefresh)

	ctx, cancel := context.WithCancel(context.Background())
	r := request(bearer(rotated), "").WithContext(ctx)
	done := make(chan error)
	go func() {
		_, err := a.Authenticate(r)
		done <- err
	}()
	for is.fetches.Load() == 1 { // wait for the fetch to reach the issuer
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v, want ErrUnavailable wrapping context.Canceled", err)
	}
	close(hold)
	for {
		_, err := a.Authenticate(request(bearer(rotated), ""))
		if err == nil {
			break
		}
		if !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("after the fetch: %v", err)
		}
		time.Sleep(time.Millisecond) // the fetch is finishing
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("%d JWKS fetches, want 2: the load and the one shared fetch", n)
	}
}

// TestConcurrent: requests verify while the keys rotate under them (run
// with -race).
func TestConcurrent(t *testing.T) {
	c := newClock()
	is := newIssuer(t, rsaKey(), ecKey())
	a := authAt(t, is, c)
	toks := []string{rsaKey().sign(t, longLived(is)), ecKey().sign(t, longLived(is)), rotatedKey().sign(t, longLived(is))}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				_, err := a.Authenticate(request(bearer(toks[(g+i)%len(toks)]), ""))
				if err != nil && !errors.Is(err, ErrInvalidToken) && !errors.Is(err, ErrUnavailable) {
					t.Errorf("unexpected error: %v", err)
				}
			}
		})
	}
	for i := range 10 {
		if i%2 == 0 {
			is.publish(rsaKey(), ecKey(), rotatedKey())
		} else {
			is.publish(rsaKey(), ecKey())
		}
		c.add(minRefresh)
	}
	wg.Wait()
}

// TestJWKSContents: what a JWKS may hold. Keys aegis cannot use for
// signatures (symmetric, for encryption, of an unknown type) are skipped;
// a set with none left, or one too big, is an error.
func TestJWKSContents(t *testing.T) {
	rsaPub := jwkJSON(t, rsaKey().jwk())
	rsaPrivate := jwkJSON(t, jose.JSONWebKey{Key: rsaPriv(), KeyID: "rsa-1", Algorithm: "RS256"})
	encKey := strings.Replace(rsaPub, `"use":"sig"`, `"use":"enc"`, 1)
	for _, tt := range []struct {
		name string
		jwks string
		want string // "" if the RS256 token verifies, else New's error
	}{
		{"one key", `{"keys":[` + rsaPub + `]}`, ""},
		{"unknown kty skipped", `{"keys":[{"kty":"OKP","crv":"X448","x":"AAAA","kid":"x"},` + rsaPub + `]}`, ""},
		{"secp256k1 skipped", `{"keys":[{"kty":"EC","crv":"secp256k1","alg":"ES256K","x":"AA","y":"AA"},` + rsaPub + `]}`, ""},
		{"private key published: its public half is used", `{"keys":[` + rsaPrivate + `]}`, ""},
		{"symmetric key only", `{"keys":[{"kty":"oct","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0","kid":"rsa-1","alg":"HS256"}]}`, "no usable signing key"},
		{"encryption key only", `{"keys":[` + encKey + `]}`, "no usable signing key"},
		{"empty", `{"keys":[]}`, "no usable signing key"},
		{"not JSON", `<html>`, "not a JWKS"},
		{"too big", `{"keys":[` + rsaPub + `],"pad":"` + strings.Repeat("x", maxJWKSBytes) + `"}`, "over 1048576 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := newIssuer(t)
			raw := []byte(tt.jwks)
			is.raw.Store(&raw)
			a, err := New(context.Background(), &Config{Issuer: is.url(), Resource: resource, Now: func() time.Time { return now }}, is.srv.Client())
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("New: %v, want an error with %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mustAuth(t, a, rsaKey().sign(t, is.claims()), tt.name)
		})
	}
}

func jwkJSON(t *testing.T, k jose.JSONWebKey) string {
	b, err := k.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
