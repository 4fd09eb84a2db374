package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aegis-mcp/aegis/internal/auth"
	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/serve"
)

// authn is how aegis serve tells who calls: wrap authenticates each
// request in front of the handler, identity reads what it found, and
// metadata serves the RFC 9728 document (nil when there is none).
type authn struct {
	wrap     func(http.Handler) http.Handler
	identity func(*http.Request) (serve.Identity, bool)
	metadata http.Handler
}

// authenticator is the serve: section's auth:.
func authenticator(ctx context.Context, sv *config.Serve) (*authn, error) {
	a := sv.Auth
	if a.None != "" {
		// On a loopback address only (checked before): anyone who
		// reaches it acts as this principal.
		id := serve.Identity{Principal: a.None}
		return &authn{
			wrap:     func(h http.Handler) http.Handler { return h },
			identity: func(*http.Request) (serve.Identity, bool) { return id, true },
		}, nil
	}
	c := &auth.Config{
		Issuer: a.Issuer, Audience: a.Audience, JWKSURL: a.JWKSURL, Algorithms: a.Algorithms,
		PrincipalClaim: a.PrincipalClaim, RolesClaim: a.RolesClaim,
		Resource: sv.PublicURL,
	}
	for _, k := range a.APIKeys {
		c.APIKeys = append(c.APIKeys, auth.APIKey{Name: k.Name, Hash: k.SHA256, Roles: k.Roles})
	}
	au, err := auth.New(ctx, c, &http.Client{Timeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	return &authn{
		wrap: au.Middleware,
		identity: func(r *http.Request) (serve.Identity, bool) {
			id, ok := auth.FromContext(r.Context())
			if !ok {
				return serve.Identity{}, false
			}
			return serve.Identity{Principal: id.Principal, Roles: id.Roles}, true
		},
		metadata: au.MetadataHandler(),
	}, nil
}

// cmdAPIKey prints a new API key for a service account and the SHA-256
// that serve.auth.api_keys takes: the key goes to the account, only the
// hash into the configuration.
func cmdAPIKey(argv []string, stdout, stderr io.Writer) error {
	if len(argv) != 0 {
		return usageError(stderr, "usage: aegis api-key")
	}
	key, hash := auth.NewAPIKey()
	fmt.Fprintf(stdout, "key:    %s\nsha256: %s\n", key, hash)
	return nil
}
