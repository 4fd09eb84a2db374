package auth

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

type identityKey struct{}

// NewContext returns ctx carrying id, as [Authenticator.Middleware] passes
// it on; tests of handlers behind the middleware use it too.
func NewContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the identity [Authenticator.Middleware] put in ctx.
// A handler behind the middleware always finds one; ok is false anywhere
// else, and a handler that finds none MUST refuse the request.
func FromContext(ctx context.Context) (*Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(*Identity)
	return id, ok && id != nil
}

// Middleware authenticates every request before next sees it: next runs
// only with an identity in the request's context ([FromContext]), and
// every other request is answered here, as [Authenticator.Challenge]
// says. It logs nothing: the caller's one log line per request takes the
// [*Error]'s Reason, which is why it is there.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := a.Authenticate(r)
		if err != nil {
			status, challenge := a.Challenge(err)
			if challenge != "" {
				w.Header().Set("WWW-Authenticate", challenge)
			}
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, http.StatusText(status), status)
			return
		}
		next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), id)))
	})
}

// Challenge is the answer to a request that err refused: its status and
// its WWW-Authenticate value ("" for none), per RFC 6750 §3 and RFC 9728
// §5.1. A request without credentials gets a bare challenge naming the
// resource metadata, which an MCP client follows to the authorization
// server; a bad token gets error="invalid_token" (401), a malformed
// request error="invalid_request" (400); keys that could not be fetched
// get 503 and no challenge, since the token may well be good. The
// error_description is the Reason's fixed phrase.
func (a *Authenticator) Challenge(err error) (status int, challenge string) {
	reason, code := Reason(0), "invalid_token"
	var e *Error
	if errors.As(err, &e) {
		reason = e.Reason
	}
	status = http.StatusUnauthorized
	switch {
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable, ""
	case errors.Is(err, ErrNoCredentials):
		code = ""
	case errors.Is(err, ErrInvalidRequest):
		status, code = http.StatusBadRequest, "invalid_request"
	}
	var params []string
	if a.metadataURL != "" {
		params = append(params, `resource_metadata="`+a.metadataURL+`"`)
	}
	if code != "" {
		params = append(params, `error="`+code+`"`)
		if reason != 0 {
			params = append(params, `error_description="`+reason.String()+`"`)
		}
	}
	if len(params) == 0 {
		return status, "Bearer"
	}
	return status, "Bearer " + strings.Join(params, ", ")
}
