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

	"github.com/aegis-mcp/aegis/internal/proxy"
)

// bridgeOnce runs the bridge to url over the lines in, and returns what
// it wrote to the relay.
func bridgeOnce(t *testing.T, url string, in string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := (Remote{URL: url, Client: &http.Client{}, MaxMessage: testMaxMessage}).Bridge(ctx, proxy.Messages(strings.NewReader(in), 1<<20), &out); err != nil {
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

// testMaxMessage is the bridges' cap in these tests.
const testMaxMessage = 4 << 20

// TestBridgeAnswerBound: an answer of the server's over the cap answers
// the request with an error saying so, where the cut body would not parse
// and the request would wait for good.
func TestBridgeAnswerBound(t *testing.T) {
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"text":"`+strings.Repeat("x", testMaxMessage)+`"}}`)
	}))
	defer remote.Close()
	got := bridgeOnce(t, remote.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	if !strings.Contains(got, `"id":1,"error"`) || !strings.Contains(got, "over 4194304 bytes") || len(got) > 1000 {
		t.Errorf("the request was not answered with an error: %.200q", got)
	}
}

// TestBridgeEventBound: one SSE event of the server's is bounded like a
// line: a server that sends data lines without ever ending the event
// loses its stream, rather than growing the bridge's memory without
// end.
func TestBridgeEventBound(t *testing.T) {
	var sent atomic.Int64
	const giveUp = 16 * testMaxMessage // well past the cap and what sockets buffer
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		line := []byte("data: " + strings.Repeat("x", 1<<20) + "\n")
		for sent.Load() < giveUp {
			if _, err := w.Write(line); err != nil {
				return
			}
			sent.Add(int64(len(line)))
		}
	}))
	defer remote.Close()
	got := bridgeOnce(t, remote.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	if n := sent.Load(); n >= giveUp {
		t.Errorf("the bridge read %d bytes of one event", n)
	}
	if !strings.Contains(got, `"id":1,"error"`) {
		t.Errorf("the request was not answered with an error: %.200q", got)
	}
}

// TestBridgeNameHeader: the bridge names a request's target in Mcp-Name
// as aegis reads it (headersAgree): a resources/read's uri, whatever
// name it also has, so that a router in front of the server sees the
// call the server makes.
func TestBridgeNameHeader(t *testing.T) {
	got := make(chan string, 1)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Mcp-Name")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"contents":[]}}`)
	}))
	defer remote.Close()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	for _, tt := range []struct{ name, params, want string }{
		{"a read with a name", `{"name":"public","uri":"file:///secret",` + meta + `}`, "file:///secret"},
		{"a read with the name after", `{"uri":"file:///secret","name":"public",` + meta + `}`, "file:///secret"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bridgeOnce(t, remote.URL, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":`+tt.params+"}\n")
			if h := <-got; h != tt.want {
				t.Errorf("Mcp-Name %q, want %q", h, tt.want)
			}
		})
	}
}
