package auth

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// How an [Identity] was established.
const (
	MethodJWT    = "jwt"
	MethodAPIKey = "api-key"
)

// Limits on what a request may present. They bound the work one request
// can cause and keep names that reach the record and the console short
// and printable.
const (
	// MaxCredentialBytes caps a bearer credential. Tokens of identity
	// providers that list many groups reach 8 KiB; twice that is room.
	MaxCredentialBytes = 16 << 10
	// Leeway is how far in the future a token's nbf and iat may be, for an
	// issuer whose clock runs ahead of aegis's. exp gets none: a token is
	// never honoured past the life its issuer gave it.
	Leeway = time.Minute

	maxNameBytes = 512 // a principal or a role
	maxRoles     = 256
)

// An Identity is who made a request.
type Identity struct {
	// Principal is the JWT's principal claim (Config.PrincipalClaim), or
	// an API key's name. A JWT subject and an API key's name share one
	// namespace: policy that must tell them apart matches Method too.
	Principal string
	// Roles are the JWT's roles claim (Config.RolesClaim), or an API
	// key's roles; nil when there are none. Deduplicated, in the order
	// given.
	Roles []string
	// Method is MethodJWT or MethodAPIKey.
	Method string
}

// An APIKey is a service account's credential as the configuration holds
// it: never the key itself, only its hash.
type APIKey struct {
	// Name is the principal of a request that presents the key. It MUST
	// be unique among the keys.
	Name string
	// Hash is the hex SHA-256 of the key ([HashAPIKey]), in either case.
	Hash string
	// Roles are the identity's roles; nil for none.
	Roles []string
}

// Config says which credentials aegis accepts. Its zero value accepts
// none, and [New] refuses it: an issuer, API keys or both must be set.
type Config struct {
	// Issuer is the OAuth authorization server (OpenID provider) whose
	// JWTs are accepted, compared byte for byte with a token's iss. ""
	// accepts no JWTs. It MUST be https, but for a loopback host.
	Issuer string
	// Audience is the aud a JWT MUST carry: aegis's own identifier, never
	// a downstream server's (the MCP authorization spec forbids token
	// passthrough). "" means Resource; with Issuer set, one of them
	// MUST be set.
	Audience string
	// JWKSURL is where the issuer's keys are. "" means the jwks_uri of
	// the issuer's OpenID discovery document.
	JWKSURL string
	// Algorithms are the JWS algorithms accepted. nil means RS256 and
	// ES256. Only asymmetric algorithms may be listed: never "none", never
	// HS256/384/512, whose key would be the issuer's public key.
	Algorithms []string
	// PrincipalClaim names the claim that holds the principal; "" means
	// "sub". RolesClaim names the roles claim; "" means "roles". Either
	// may be a dotted path into nested objects ("realm_access.roles"); a
	// top-level claim whose name is the whole string, dots and all
	// ("https://aegis.example/roles"), is taken first.
	PrincipalClaim, RolesClaim string
	// APIKeys are the service accounts' keys.
	APIKeys []APIKey
	// Resource is this protected resource's URL (RFC 9728), the URL MCP
	// clients connect to. "" serves no metadata and names none in
	// challenges; it MUST be set with Issuer unless Audience is.
	Resource string
	// ScopesSupported, optional, are listed in the metadata.
	ScopesSupported []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// An Authenticator says who made a request. It is safe for concurrent
// use.
type Authenticator struct {
	now func() time.Time

	// JWTs; verifier is nil when no issuer is configured.
	verifier       *oidc.IDTokenVerifier
	keys           *keySet
	algs           []string
	issuer         string
	audience       string
	principalClaim string
	rolesClaim     string

	apiKeys []apiKey

	resource    string // "" when none is configured
	metadataURL string
	metadata    []byte // the RFC 9728 document
}

var defaultAlgorithms = []string{"RS256", "ES256"}

// asymmetric are the algorithms Config.Algorithms may name.
var asymmetric = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// New checks c and, when it names an issuer, fetches the issuer's
// discovery document (unless JWKSURL is set) and keys through client
// (nil: a client with a 10 s timeout). A configuration that could
// authenticate nobody, or that names a setting wrongly, is an error: aegis
// does not start half-configured. ctx bounds the fetches New makes and
// carries no cancellation into later key refreshes.
func New(ctx context.Context, c *Config, client *http.Client) (*Authenticator, error) {
	if c == nil {
		c = &Config{}
	}
	if c.Issuer == "" && len(c.APIKeys) == 0 {
		return nil, errors.New("auth: no issuer and no API keys: nothing could authenticate a request")
	}
	a := &Authenticator{
		now:            c.Now,
		principalClaim: cmp.Or(c.PrincipalClaim, "sub"),
		rolesClaim:     cmp.Or(c.RolesClaim, "roles"),
	}
	if a.now == nil {
		a.now = time.Now
	}
	if c.Resource != "" {
		u, err := checkURL("resource", c.Resource)
		if err != nil {
			return nil, err
		}
		if u.RawQuery != "" || u.ForceQuery {
			return nil, fmt.Errorf("auth: resource %s has a query; RFC 8707 resource identifiers should not", c.Resource)
		}
		a.resource = c.Resource
		a.metadataURL = metadataURL(u)
	}
	for _, s := range c.ScopesSupported {
		if !isScopeToken(s) {
			return nil, fmt.Errorf("auth: scope %q: not an RFC 6749 scope token", s)
		}
	}
	keys, err := apiKeys(c.APIKeys)
	if err != nil {
		return nil, err
	}
	a.apiKeys = keys
	if c.Issuer != "" {
		if err := a.setIssuer(ctx, c, client); err != nil {
			return nil, err
		}
	}
	if a.metadata, err = a.buildMetadata(c.ScopesSupported); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *Authenticator) setIssuer(ctx context.Context, c *Config, client *http.Client) error {
	if _, err := checkURL("issuer", c.Issuer); err != nil {
		return err
	}
	a.issuer = c.Issuer
	a.audience = cmp.Or(c.Audience, c.Resource)
	if a.audience == "" {
		return fmt.Errorf("auth: issuer %s is configured without an audience: set Audience or Resource to aegis's own URL", c.Issuer)
	}
	algs := c.Algorithms
	if algs == nil {
		algs = defaultAlgorithms
	}
	if len(algs) == 0 {
		return errors.New("auth: Algorithms is empty: no JWT could be verified")
	}
	for _, alg := range algs {
		if !slices.Contains(asymmetric, alg) {
			return fmt.Errorf("auth: algorithm %q: want one of %s (asymmetric only)", alg, strings.Join(asymmetric, ", "))
		}
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	jwksURL := c.JWKSURL
	if jwksURL == "" {
		p, err := oidc.NewProvider(oidc.ClientContext(ctx, client), c.Issuer)
		if err != nil {
			return fmt.Errorf("auth: discovering issuer %s (set JWKSURL to skip discovery): %w", c.Issuer, err)
		}
		var doc struct {
			JWKSURL string `json:"jwks_uri"`
		}
		if err := p.Claims(&doc); err != nil || doc.JWKSURL == "" {
			return fmt.Errorf("auth: the discovery document of issuer %s has no jwks_uri", c.Issuer)
		}
		jwksURL = doc.JWKSURL
	}
	if _, err := checkURL("JWKS URL", jwksURL); err != nil {
		return err
	}
	a.algs = slices.Clone(algs)
	a.keys = newKeySet(ctx, jwksURL, client, algs, a.now)
	if err := a.keys.load(ctx); err != nil {
		return fmt.Errorf("auth: loading the keys of issuer %s: %w", c.Issuer, err)
	}
	a.verifier = oidc.NewVerifier(c.Issuer, a.keys, &oidc.Config{
		ClientID:             a.audience,
		SupportedSigningAlgs: algs,
		Now:                  a.now,
	})
	return nil
}

// Authenticate says who made r, from its Authorization header alone: a
// bearer credential with a dot is a JWT (a JWS compact serialization has
// two), one without is an API key. Every error is an [*Error]; none
// repeats the credential.
func (a *Authenticator) Authenticate(r *http.Request) (*Identity, error) {
	cred, err := credential(r)
	if err != nil {
		return nil, err
	}
	if strings.Contains(cred, ".") {
		return a.verifyJWT(r.Context(), cred)
	}
	return a.checkAPIKey(cred)
}

// checkURL parses a configured URL: absolute, https or http to a loopback
// host (an issuer in a test or on the same machine), no user info, no
// fragment.
func checkURL(what, s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("auth: %s %q: %w", what, s, err)
	case u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return nil, fmt.Errorf("auth: %s %q: want an absolute https URL", what, s)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return nil, fmt.Errorf("auth: %s %q: http is allowed for loopback hosts only; use https", what, s)
	case u.User != nil:
		return nil, fmt.Errorf("auth: %s %q: user info in a URL is not allowed", what, s)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return nil, fmt.Errorf("auth: %s %q: a fragment is not allowed", what, s)
	}
	return u, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// apiKey is an APIKey checked and decoded.
type apiKey struct {
	name  string
	hash  [32]byte
	roles []string
}

func apiKeys(keys []APIKey) ([]apiKey, error) {
	var out []apiKey
	for i, k := range keys {
		if err := checkName(k.Name); err != nil {
			return nil, fmt.Errorf("auth: API key %d: name %q: %v", i, k.Name, err)
		}
		var ak apiKey
		ak.name = k.Name
		if b, err := hex.DecodeString(k.Hash); err != nil || len(b) != len(ak.hash) {
			return nil, fmt.Errorf("auth: API key %s: hash: want 64 hex digits, the SHA-256 of the key", k.Name)
		} else {
			copy(ak.hash[:], b)
		}
		roles, err := normalizeRoles(k.Roles)
		if err != nil {
			return nil, fmt.Errorf("auth: API key %s: %v", k.Name, err)
		}
		ak.roles = roles
		for _, prev := range out {
			if prev.name == ak.name {
				return nil, fmt.Errorf("auth: API key name %s is used twice", k.Name)
			}
			if prev.hash == ak.hash {
				return nil, fmt.Errorf("auth: API keys %s and %s have the same hash", prev.name, k.Name)
			}
		}
		out = append(out, ak)
	}
	return out, nil
}
