package auth

import (
	"errors"
	"fmt"
)

// The classes of failure. Every error [Authenticator.Authenticate] returns
// is an [*Error] that wraps exactly one of them; [Authenticator.Middleware]
// turns each into its RFC 6750 answer. They share the root
// [ErrUnauthenticated], so a caller that only wants "deny" tests that.
var (
	// ErrUnauthenticated is the root of every failure: the request has
	// no identity, and the gateway denies it.
	ErrUnauthenticated = errors.New("auth: not authenticated")
	// ErrNoCredentials: the request carries no bearer credential (no
	// Authorization header, or another scheme). Answered 401 with a bare
	// challenge, which tells an MCP client to start the OAuth flow.
	ErrNoCredentials = fmt.Errorf("%w: no credentials", ErrUnauthenticated)
	// ErrInvalidRequest: the request is malformed as an RFC 6750 request
	// (two Authorization headers, a token in the query, an empty or
	// ill-formed bearer value). Answered 400, error="invalid_request".
	ErrInvalidRequest = fmt.Errorf("%w: invalid request", ErrUnauthenticated)
	// ErrInvalidToken: a credential was presented and is not good: bad
	// signature, expired, wrong audience, unknown API key, … Answered
	// 401, error="invalid_token".
	ErrInvalidToken = fmt.Errorf("%w: invalid token", ErrUnauthenticated)
	// ErrUnavailable: aegis could not check the token because the
	// issuer's keys could not be fetched. Answered 503: the token may be
	// good, and telling the client it is not would send it through a
	// needless new authorization.
	ErrUnavailable = fmt.Errorf("%w: keys unavailable", ErrUnauthenticated)
)

// A Reason names why a request was not authenticated, for the log line
// and the error_description of the challenge. Its String is a fixed
// phrase: it never carries a credential or anything taken from one.
type Reason int

const (
	NoCredentials       Reason = iota + 1 // no Authorization header
	UnsupportedScheme                     // an Authorization scheme other than Bearer
	MultipleHeaders                       // more than one Authorization header
	TokenInQuery                          // access_token in the URL's query (RFC 6750 §2.3 is not supported)
	MalformedHeader                       // empty bearer value, or characters outside RFC 6750's b64token
	MalformedToken                        // not a JWS compact serialization we can read, or too large
	AlgorithmNotAllowed                   // a JWT's alg is not in Config.Algorithms (none, HS256, …)
	UnknownKey                            // no key in the issuer's JWKS has the JWT's kid
	BadSignature                          // the signature does not verify with the issuer's keys
	Expired                               // exp is past
	NotYetValid                           // nbf or iat is in the future beyond Leeway
	WrongIssuer                           // iss is not Config.Issuer
	WrongAudience                         // aud does not contain Config.Audience
	BadPrincipal                          // the principal claim is missing, empty, not a string, or not printable
	BadRoles                              // the roles claim has a type or value we do not accept
	JWTNotAccepted                        // a JWT was presented but no issuer is configured
	UnknownAPIKey                         // the key matches no configured API key
	KeysUnavailable                       // the issuer's JWKS could not be fetched
)

var reasonNames = map[Reason]string{
	NoCredentials:       "no credentials",
	UnsupportedScheme:   "unsupported authorization scheme",
	MultipleHeaders:     "more than one Authorization header",
	TokenInQuery:        "access token in the query string",
	MalformedHeader:     "malformed Authorization header",
	MalformedToken:      "malformed token",
	AlgorithmNotAllowed: "signing algorithm not allowed",
	UnknownKey:          "unknown signing key",
	BadSignature:        "bad signature",
	Expired:             "token expired",
	NotYetValid:         "token not yet valid",
	WrongIssuer:         "wrong issuer",
	WrongAudience:       "wrong audience",
	BadPrincipal:        "bad principal claim",
	BadRoles:            "bad roles claim",
	JWTNotAccepted:      "JWTs not accepted",
	UnknownAPIKey:       "unknown API key",
	KeysUnavailable:     "issuer keys unavailable",
}

func (r Reason) String() string {
	if s, ok := reasonNames[r]; ok {
		return s
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// class is the sentinel a reason falls under.
func (r Reason) class() error {
	switch r {
	case NoCredentials, UnsupportedScheme:
		return ErrNoCredentials
	case MultipleHeaders, TokenInQuery, MalformedHeader:
		return ErrInvalidRequest
	case KeysUnavailable:
		return ErrUnavailable
	}
	return ErrInvalidToken
}

// An Error says why a request was not authenticated. Detail names what
// was wrong (the claim, the expected and the found value) and MUST NOT
// contain the credential; it may contain claim values of a token whose
// signature verified, and a kid, quoted and cut short.
type Error struct {
	Reason Reason
	Detail string
	Err    error // the underlying error, if any (a JWKS fetch, go-oidc)
}

func (e *Error) Error() string {
	s := "auth: " + e.Reason.String()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap lets errors.Is find the reason's class ([ErrInvalidToken], …)
// and the underlying error.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason.class()}
	}
	return []error{e.Reason.class(), e.Err}
}

func fail(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// quote quotes an attacker-chosen string for an error, cut to 64 bytes so
// a huge kid does not flood the log.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
