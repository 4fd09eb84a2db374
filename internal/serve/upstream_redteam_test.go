package serve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// bridgeOnce runs the bridge to url over the lines in, and returns what
// it wrote to the relay.
func bridgeOnce(t *testing.T, url string, in string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := Bridge(ctx, strings.NewReader(in), &out, url, &http.Client{}, nil); err != nil {
		t.Fatalf("bridge: %v", err)
	}
	return out.String()
}

// TestBridgeRedirects: a remote server cannot send the bridge elsewhere
// with a redirect: the URL is the configuration's choice, and a redirect
// would make aegis's host request what the server names (its network's
// services, a cloud's metadata) and relay the answer.
func TestBridgeRedirects(t *testing.T) {
	var reached atomic.Int64
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"secret":"internal"}}`)
	}))
	defer internal.Close()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, internal.URL+"/latest/meta-data", code)
			}))
			defer remote.Close()
			got := bridgeOnce(t, remote.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
			if n := reached.Load(); n != 0 || strings.Contains(got, "secret") {
				t.Errorf("the redirect was followed (%d requests): %s", n, got)
			}
			if !strings.Contains(got, `"id":1,"error"`) {
				t.Errorf("the request was not answered with an error: %q", got)
			}
		})
	}
}
