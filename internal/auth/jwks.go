package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// aegis keeps the issuer's keys itself rather than use go-oidc's
// RemoteKeySet, which refetches the JWKS on every token that fails to
// verify (so a stream of forged tokens becomes a stream of requests to
// the issuer), never drops a key the issuer withdrew, and reads the
// response without a size limit. keySet implements oidc.KeySet, so
// go-oidc's verifier still makes every check it makes.
const (
	// minRefresh: an unknown kid refetches the JWKS at most this often.
	// A key the issuer just rotated in is usable within minRefresh.
	minRefresh = 30 * time.Second
	// maxKeyAge: keys are refetched when older, so a key the issuer
	// withdrew stops verifying within maxKeyAge. If the refetch fails
	// the old keys stay in use (an outage of the issuer does not lock
	// everyone out), and the refetch is tried again after minRefresh.
	maxKeyAge    = time.Hour
	maxJWKSBytes = 1 << 20
	fetchTimeout = 10 * time.Second
)

// errTooSoon: a refresh was asked for within minRefresh of the last.
var errTooSoon = errors.New("refreshed less than a while ago")

type keySet struct {
	url    string
	client *http.Client
	algs   []jose.SignatureAlgorithm
	now    func() time.Time
	base   context.Context // New's, without its cancellation: values only

	mu      sync.Mutex
	keys    []jose.JSONWebKey // public keys for signing, as published
	fetched time.Time         // of keys
	tried   time.Time         // the last fetch, successful or not
	flight  *flight           // the fetch under way, if any
}

// A flight is one fetch, which every caller that wants fresh keys waits
// for.
type flight struct {
	done chan struct{}
	keys []jose.JSONWebKey
	err  error
}

func newKeySet(ctx context.Context, url string, client *http.Client, algs []string, now func() time.Time) *keySet {
	s := &keySet{url: url, client: client, now: now, base: context.WithoutCancel(ctx)}
	for _, a := range algs {
		s.algs = append(s.algs, jose.SignatureAlgorithm(a))
	}
	return s
}

// load fetches the keys once, for New.
func (s *keySet) load(ctx context.Context) error {
	keys, err := s.fetch(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys, s.fetched, s.tried = keys, s.now(), s.now()
	return nil
}

// VerifySignature implements oidc.KeySet. It reports to the outcome in
// ctx, if any, so that Authenticate can name what went wrong.
func (s *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	payload, err := s.verify(ctx, raw)
	if o, ok := ctx.Value(outcomeKey{}).(*outcome); ok {
		o.payload, o.err = payload, err
	}
	return payload, err
}

func (s *keySet) verify(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(raw, s.algs)
	if err != nil {
		return nil, &Error{Reason: MalformedToken, Err: err}
	}
	if len(jws.Signatures) != 1 {
		return nil, fail(MalformedToken, "%d signatures, want 1", len(jws.Signatures))
	}
	keys := s.current(ctx)
	payload, m := try(jws, keys)
	if payload != nil {
		return payload, nil
	}
	if m.kidKnown {
		// The issuer has this key and it does not verify: a forgery, not
		// a rotation. No refetch.
		return nil, m.failure()
	}
	// An unknown kid, or no kid and no key verified: the issuer may have
	// rotated its keys since we fetched them.
	keys, err = s.refresh(ctx)
	switch {
	case errors.Is(err, errTooSoon):
	case err != nil:
		return nil, &Error{Reason: KeysUnavailable, Detail: "fetching " + s.url, Err: err}
	default:
		if payload, m = try(jws, keys); payload != nil {
			return payload, nil
		}
	}
	return nil, m.failure()
}

// miss says why no key verified a signature.
type miss struct {
	kid      string
	kidKnown bool   // a published key has the token's kid
	wrongAlg string // that key's alg, when it is not the token's
	alg      string
}

func (m miss) failure() error {
	switch {
	case m.kid == "":
		return fail(BadSignature, "no key of the issuer verifies the signature (the token has no kid)")
	case !m.kidKnown:
		return fail(UnknownKey, "the issuer publishes no key with kid %s", quote(m.kid))
	case m.wrongAlg != "":
		return fail(BadSignature, "key %s is for %s, the token says %s", quote(m.kid), m.wrongAlg, m.alg)
	}
	return fail(BadSignature, "key %s does not verify the signature", quote(m.kid))
}

// try verifies jws with the keys that may have signed it: those with its
// kid, or every key when it has none (an issuer with one key may omit it).
func try(jws *jose.JSONWebSignature, keys []jose.JSONWebKey) ([]byte, miss) {
	h := jws.Signatures[0].Header
	m := miss{kid: h.KeyID, alg: h.Algorithm}
	for i := range keys {
		k := &keys[i]
		if m.kid != "" && k.KeyID != m.kid {
			continue
		}
		m.kidKnown = m.kid != ""
		if k.Algorithm != "" && k.Algorithm != h.Algorithm {
			m.wrongAlg = k.Algorithm
			continue
		}
		if payload, err := jws.Verify(k); err == nil {
			return payload, miss{}
		}
	}
	return nil, m
}

// current returns the keys, refetched first if they are older than
// maxKeyAge.
func (s *keySet) current(ctx context.Context) []jose.JSONWebKey {
	s.mu.Lock()
	keys, fetched := s.keys, s.fetched
	s.mu.Unlock()
	if s.now().Sub(fetched) < maxKeyAge {
		return keys
	}
	if fresh, err := s.refresh(ctx); err == nil {
		return fresh
	}
	return keys
}

// refresh fetches the keys, unless the last fetch was within minRefresh
// (errTooSoon). Concurrent callers share one fetch, which runs apart from
// any caller's context so that one cancelled request does not fail it
// for the others.
func (s *keySet) refresh(ctx context.Context) ([]jose.JSONWebKey, error) {
	s.mu.Lock()
	f := s.flight
	if f == nil {
		t := s.now()
		if t.Sub(s.tried) < minRefresh {
			s.mu.Unlock()
			return nil, errTooSoon
		}
		s.tried = t
		f = &flight{done: make(chan struct{})}
		s.flight = f
		go s.run(f)
	}
	s.mu.Unlock()
	select {
	case <-f.done:
		return f.keys, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *keySet) run(f *flight) {
	ctx, cancel := context.WithTimeout(s.base, fetchTimeout)
	defer cancel()
	keys, err := s.fetch(ctx)
	s.mu.Lock()
	if err == nil {
		s.keys, s.fetched = keys, s.now()
	}
	s.flight = nil
	s.mu.Unlock()
	f.keys, f.err = keys, err
	close(f.done)
}

// fetch GETs the JWKS and keeps the public signing keys it can use. A key
// it cannot use (an unknown kty, a symmetric key, one for encryption) is
// skipped, as RFC 7517 §5 asks; a set with none left is an error.
func (s *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", s.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", s.url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", s.url, err)
	}
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("GET %s: the JWKS is over %d bytes", s.url, maxJWKSBytes)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("GET %s: not a JWKS: %w", s.url, err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if json.Unmarshal(raw, &k) != nil {
			continue
		}
		pub := k.Public()
		if !pub.Valid() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		keys = append(keys, pub)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("GET %s: no usable signing key among %d", s.url, len(set.Keys))
	}
	return keys, nil
}
