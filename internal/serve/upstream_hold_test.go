package serve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aegis-mcp/aegis/internal/proxy"
)

// holdingServer is a remote MCP server, in memory (a RoundTripper), that
// answers initialize with a session and holds every other request of
// the methods in hold until the request is cancelled or stop is closed,
// counting how many it holds at once.
type holdingServer struct {
	hold func(r *http.Request) bool
	stop chan struct{}

	mu       sync.Mutex
	held     int
	mostHeld int
}

func (s *holdingServer) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	if r.Method == http.MethodPost && strings.Contains(string(body), `"initialize"`) {
		h := http.Header{"Content-Type": {"application/json"}, "Mcp-Session-Id": {"s1"}}
		return &http.Response{StatusCode: http.StatusOK, Header: h, Request: r,
			Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}`))}, nil
	}
	if s.hold(r) {
		s.mu.Lock()
		s.held++
		s.mostHeld = max(s.mostHeld, s.held)
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.held--
			s.mu.Unlock()
		}()
		select {
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-s.stop:
		}
	}
	return &http.Response{StatusCode: http.StatusAccepted, Header: http.Header{}, Request: r, Body: http.NoBody}, nil
}

// TestBridgeHoldsLittle: what a remote server holds unanswered holds
// little of aegis. A client's notifications and responses, which aegis
// serve accepts at once (202), are POSTed by the bridge as they come:
// before the fix each went on a goroutine of its own with nothing to
// bound them, so a client that sent them faster than the server answered
// (or a server that did not answer) had aegis open as many connections
// to the server, and hold as many goroutines, as it liked. And a server
// that never answered the DELETE that ends its session held the bridge,
// with its goroutine and connection, for good: nothing cancels that
// request (it is sent after the session's context may be done).
func TestBridgeHoldsLittle(t *testing.T) {
	const n = 500
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}` + "\n"
	for _, tt := range []struct {
		name string
		msg  string // one of n the client sends after initialize
		hold func(*http.Request) bool
		most int // the most requests the server may hold at once
	}{
		{"notifications", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`,
			func(r *http.Request) bool { return r.Method == http.MethodPost }, maxPosting},
		{"responses", `{"jsonrpc":"2.0","id":7,"result":{}}`,
			func(r *http.Request) bool { return r.Method == http.MethodPost }, maxPosting},
		{"the session's end", "",
			func(r *http.Request) bool { return r.Method == http.MethodDelete }, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &holdingServer{hold: tt.hold, stop: make(chan struct{})}
				defer close(srv.stop)
				in := initialize
				if tt.msg != "" {
					in += strings.Repeat(tt.msg+"\n", n)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() {
					done <- (Remote{URL: "http://upstream.test/mcp", Client: &http.Client{Transport: srv}}).Bridge(ctx, proxy.Messages(strings.NewReader(in), 1<<20), io.Discard)
				}()
				synctest.Wait()
				srv.mu.Lock()
				most := srv.mostHeld
				srv.mu.Unlock()
				if most > tt.most {
					t.Errorf("the server held %d requests of the bridge at once, want at most %d", most, tt.most)
				}
				// The session's context ends (the relay stops the bridge):
				// the bridge returns, whatever the server holds.
				cancel()
				select {
				case err := <-done:
					if err != nil && !errors.Is(err, context.Canceled) {
						t.Errorf("Bridge = %v", err)
					}
				case <-time.After(time.Hour):
					t.Errorf("the bridge still waits for the server an hour after its context ended")
				}
			})
		})
	}
}
