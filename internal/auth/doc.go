// Package auth says who is calling `aegis serve` (DESIGN.md R27): it
// authenticates each HTTP request and yields the caller's [Identity], a
// principal and roles for policy and the record. It owns the credentials
// and their checks; what an identity may do is policy's, and sessions,
// endpoints and the log line are package serve's.
//
// # Two kinds of credential
//
// aegis is an OAuth 2.1 protected resource, as the MCP authorization spec
// asks: a client gets a JWT access token from the configured issuer and
// presents it as `Authorization: Bearer <token>`. The token is verified
// against the issuer's JWKS (from OpenID discovery, or Config.JWKSURL)
// with an asymmetric algorithm, and MUST name aegis itself in aud: a
// token minted for another service is refused, so no client can make
// aegis pass its token through. Service accounts that cannot run an OAuth
// flow present an API key the same way; aegis holds only its SHA-256 and
// compares in constant time.
//
// A credential with a dot is a JWT (a JWS compact serialization has two
// dots, and API keys have none); one without is an API key. Either kind
// may be left unconfigured, but not both: [New] refuses a [Config] that
// could authenticate nobody.
//
// # Claims
//
// The principal is a string claim, "sub" unless Config.PrincipalClaim
// says otherwise; roles come from "roles" or Config.RolesClaim, either a
// dotted path such as "realm_access.roles" (a top-level claim named with
// the dots wins). An array of strings is taken as it is; a string is
// split at spaces like OAuth's scope, so RolesClaim "scope" works; an
// absent or null claim is no roles. A roles claim of any other type
// refuses the token rather than reading as no roles, since policy may
// forbid by role. Principals and roles MUST be printable and short.
//
// # Refusals
//
// Every refusal is an [*Error] with a [Reason] for the log and one of four
// classes for the answer: [ErrNoCredentials] (401 with a bare challenge
// that names the resource metadata, where an MCP client starts its OAuth
// flow), [ErrInvalidRequest] (400), [ErrInvalidToken] (401,
// error="invalid_token") and [ErrUnavailable] (503, when the issuer's keys
// cannot be fetched). No error repeats a credential. Tokens in the query
// string are refused, not ignored.
//
// # Use
//
//	a, err := auth.New(ctx, &auth.Config{
//		Issuer:   "https://idp.example.com/realms/acme",
//		Resource: "https://aegis.example.com/mcp",
//		RolesClaim: "realm_access.roles",
//		APIKeys:  []auth.APIKey{{Name: "ci", Hash: "9f86d0…", Roles: []string{"ci"}}},
//	}, nil)
//	if err != nil { ... }
//	mux.Handle("/.well-known/oauth-protected-resource", a.MetadataHandler())
//	mux.Handle("/.well-known/oauth-protected-resource/", a.MetadataHandler())
//	mux.Handle("/mcp", a.Middleware(gateway))
//
// and in the gateway, id, _ := auth.FromContext(r.Context()).
package auth
