package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/coreos/go-oidc/v3/oidc"
)

// A JWT is checked twice over. go-oidc's verifier is the authority: it
// checks the algorithm, the signature (through our [keySet]), iss, aud,
// exp and nbf, and nothing it refuses is accepted. Our own checks then
// run on the payload whose signature verified, to name what was wrong
// (go-oidc's errors are strings), and to add what go-oidc leaves out: a
// required exp, iat not in the future, a tighter nbf leeway, and the
// principal and roles.

// outcome carries what our keySet saw out of go-oidc's Verify, whose
// errors flatten ours into strings.
type outcome struct {
	payload []byte // set when the signature verified
	err     error  // the keySet's *Error, if it refused
}

type outcomeKey struct{}

func (a *Authenticator) verifyJWT(ctx context.Context, raw string) (*Identity, error) {
	if a.verifier == nil {
		return nil, fail(JWTNotAccepted, "no issuer is configured (a credential with a dot is read as a JWT)")
	}
	if err := a.checkShape(raw); err != nil {
		return nil, err
	}
	var o outcome
	_, err := a.verifier.Verify(context.WithValue(ctx, outcomeKey{}, &o), raw)
	switch {
	case err == nil && o.payload == nil:
		// Our keySet did not run: go-oidc verified with something else.
		return nil, &Error{Reason: BadSignature, Detail: "verified without aegis's key set"}
	case err == nil:
		return a.identity(o.payload)
	case o.err != nil:
		return nil, o.err
	case o.payload == nil:
		return nil, &Error{Reason: MalformedToken, Err: err}
	}
	// The signature verified and go-oidc refused a claim: say which.
	if _, e := a.identity(o.payload); e != nil {
		return nil, e
	}
	var expired *oidc.TokenExpiredError
	if errors.As(err, &expired) {
		return nil, &Error{Reason: Expired, Err: err}
	}
	return nil, &Error{Reason: MalformedToken, Err: err}
}

// jwsHeader is what we read of a JWS header.
type jwsHeader struct {
	Alg  string          `json:"alg"`
	Crit json.RawMessage `json:"crit"`
}

// b64url is base64url without padding, strictly: RFC 7515 §2 forbids the
// padding, and Strict refuses non-zero trailing bits, so one token has
// one spelling.
var b64url = base64.RawURLEncoding.Strict()

// checkShape refuses what is not a JWS compact serialization with an
// allowed algorithm, before any key is looked at, with a reason more
// precise than go-jose's parse errors.
func (a *Authenticator) checkShape(raw string) error {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return fail(MalformedToken, "%d dot-separated parts, want 3 (a JWS; encrypted tokens are not accepted)", len(parts))
	}
	for i, name := range []string{"header", "payload", "signature"} {
		if i < 2 && parts[i] == "" {
			return fail(MalformedToken, "empty %s", name)
		}
		if _, err := b64url.DecodeString(parts[i]); err != nil {
			return fail(MalformedToken, "%s is not unpadded base64url", name)
		}
	}
	hb, _ := b64url.DecodeString(parts[0])
	var h jwsHeader
	if err := json.Unmarshal(hb, &h); err != nil || !bytes.HasPrefix(bytes.TrimSpace(hb), []byte("{")) {
		return fail(MalformedToken, "the header is not a JSON object")
	}
	switch {
	case h.Alg == "":
		return fail(MalformedToken, "the header has no alg")
	case !slices.Contains(a.algs, h.Alg):
		return fail(AlgorithmNotAllowed, "alg %s, want one of %s", quote(h.Alg), strings.Join(a.algs, ", "))
	case h.Crit != nil:
		return fail(MalformedToken, "the header has crit extensions, which aegis does not understand")
	}
	return nil
}

// identity checks the claims of a payload whose signature verified and
// reads the identity from them.
func (a *Authenticator) identity(payload []byte) (*Identity, error) {
	claims, err := decodeClaims(payload)
	if err != nil {
		return nil, err
	}
	exp, ok, err := numericDate(claims, "exp")
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, fail(MalformedToken, "no exp claim: aegis accepts only tokens that expire")
	}
	nbf, hasNBF, err := numericDate(claims, "nbf")
	if err != nil {
		return nil, err
	}
	iat, hasIAT, err := numericDate(claims, "iat")
	if err != nil {
		return nil, err
	}
	if iss, _ := claims["iss"].(string); iss != a.issuer {
		return nil, fail(WrongIssuer, "iss %s, want %q", quote(iss), a.issuer)
	}
	if err := a.checkAudience(claims["aud"]); err != nil {
		return nil, err
	}
	now := a.now()
	if !now.Before(exp) {
		return nil, fail(Expired, "expired at %s, now %s", exp.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	if hasNBF && nbf.After(now.Add(Leeway)) {
		return nil, fail(NotYetValid, "nbf %s is after now %s plus %s", nbf.Format(time.RFC3339), now.Format(time.RFC3339), Leeway)
	}
	if hasIAT && iat.After(now.Add(Leeway)) {
		return nil, fail(NotYetValid, "iat %s is after now %s plus %s", iat.Format(time.RFC3339), now.Format(time.RFC3339), Leeway)
	}
	principal, err := a.principal(claims)
	if err != nil {
		return nil, err
	}
	roles, err := a.roles(claims)
	if err != nil {
		return nil, err
	}
	return &Identity{Principal: principal, Roles: roles, Method: MethodJWT}, nil
}

// decodeClaims decodes the payload. Invalid UTF-8 is refused, not
// repaired: encoding/json would turn every bad byte into U+FFFD, and two
// different subjects would become one principal.
func decodeClaims(payload []byte) (map[string]any, error) {
	if !utf8.Valid(payload) {
		return nil, fail(MalformedToken, "the payload is not UTF-8")
	}
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	var claims map[string]any
	if err := d.Decode(&claims); err != nil || claims == nil {
		return nil, fail(MalformedToken, "the payload is not a JSON object")
	}
	if _, err := d.Token(); err == nil {
		return nil, fail(MalformedToken, "the payload has data after its JSON object")
	}
	return claims, nil
}

// numericDate reads an RFC 7519 NumericDate claim: seconds since the
// epoch, possibly fractional.
func numericDate(claims map[string]any, name string) (time.Time, bool, error) {
	v, ok := claims[name]
	if !ok {
		return time.Time{}, false, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return time.Time{}, false, fail(MalformedToken, "%s is %s, want a number", name, jsonType(v))
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.Abs(f) > 1<<50 {
		return time.Time{}, false, fail(MalformedToken, "%s %s is out of range", name, quote(string(n)))
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true, nil
}

func (a *Authenticator) checkAudience(v any) error {
	var auds []string
	switch v := v.(type) {
	case nil:
		return fail(WrongAudience, "no aud, want %q", a.audience)
	case string:
		auds = []string{v}
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return fail(MalformedToken, "aud has %s, want strings", jsonType(e))
			}
			auds = append(auds, s)
		}
	default:
		return fail(MalformedToken, "aud is %s, want a string or an array of strings", jsonType(v))
	}
	if !slices.Contains(auds, a.audience) {
		shown := auds
		if len(shown) > 4 {
			shown = shown[:4]
		}
		return fail(WrongAudience, "aud %q, want %q", shown, a.audience)
	}
	return nil
}

func (a *Authenticator) principal(claims map[string]any) (string, error) {
	v, ok, err := lookup(claims, a.principalClaim)
	if err != nil {
		return "", fail(BadPrincipal, "%v", err)
	}
	if !ok {
		return "", fail(BadPrincipal, "no %q claim", a.principalClaim)
	}
	s, ok := v.(string)
	if !ok {
		return "", fail(BadPrincipal, "%q is %s, want a string", a.principalClaim, jsonType(v))
	}
	if err := checkName(s); err != nil {
		return "", fail(BadPrincipal, "%q: %v", a.principalClaim, err)
	}
	return s, nil
}

// roles reads the roles claim. Absent or null means no roles. An array
// of strings is taken element by element, so a role may contain spaces.
// A string is split at spaces, as OAuth's scope is (RFC 8693 §4.2), so
// RolesClaim "scope" works. Any other type is an error, not "no roles":
// policy may forbid by role, and a claim we misread must not lift that.
func (a *Authenticator) roles(claims map[string]any) ([]string, error) {
	v, _, err := lookup(claims, a.rolesClaim)
	if err != nil {
		return nil, fail(BadRoles, "%v", err)
	}
	var roles []string
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		roles = strings.FieldsFunc(v, func(r rune) bool { return r == ' ' })
	case []any:
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fail(BadRoles, "%q[%d] is %s, want a string", a.rolesClaim, i, jsonType(e))
			}
			roles = append(roles, s)
		}
	default:
		return nil, fail(BadRoles, "%q is %s, want an array of strings or a space-separated string", a.rolesClaim, jsonType(v))
	}
	roles, err = normalizeRoles(roles)
	if err != nil {
		return nil, &Error{Reason: BadRoles, Detail: fmt.Sprintf("%q: %v", a.rolesClaim, err)}
	}
	return roles, nil
}

// normalizeRoles checks each role and drops repeats; nil for none.
func normalizeRoles(roles []string) ([]string, error) {
	if len(roles) > maxRoles {
		return nil, fmt.Errorf("%d roles, over the limit of %d", len(roles), maxRoles)
	}
	var out []string
	for i, r := range roles {
		if err := checkName(r); err != nil {
			return nil, fmt.Errorf("role %d: %v", i, err)
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// checkName accepts a principal or role: non-empty, short, valid UTF-8,
// printable (no control or format characters: they forge log lines and
// reorder what the console shows).
func checkName(s string) error {
	switch {
	case s == "":
		return errors.New("empty")
	case len(s) > maxNameBytes:
		return fmt.Errorf("%d bytes, over the limit of %d", len(s), maxNameBytes)
	case !utf8.ValidString(s):
		return errors.New("not valid UTF-8")
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("has the unprintable character %U", r)
		}
	}
	return nil
}

// lookup finds a claim by name: the top-level claim of exactly that name
// if there is one, else the dotted path through nested objects. found is
// false when the claim is absent; err is set when a step of the path is
// present but not an object, which is a malformed claim, not an absent one.
func lookup(claims map[string]any, name string) (v any, found bool, err error) {
	if v, ok := claims[name]; ok {
		return v, true, nil
	}
	path := strings.Split(name, ".")
	cur := claims
	for i, p := range path {
		v, ok := cur[p]
		if !ok {
			return nil, false, nil
		}
		if i == len(path)-1 {
			return v, true, nil
		}
		if cur, ok = v.(map[string]any); !ok {
			return nil, false, fmt.Errorf("%q is %s, want an object", strings.Join(path[:i+1], "."), jsonType(v))
		}
	}
	return nil, false, nil
}

// jsonType names v's JSON type with its article, for errors.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a bool"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}
