package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aegis-mcp/aegis/internal/serve"
)

// upstreamBearer is the environment variable through which aegis hands
// the bridge the token it presents to a remote server (never on a
// command line, which other users may read).
const upstreamBearer = "AEGIS_UPSTREAM_BEARER"

// cmdUpstream is the bridge to a remote MCP server at a URL, which aegis
// starts as a server's process: it speaks stdio to the relay and
// Streamable HTTP to the server (serve.Bridge).
func cmdUpstream(argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("upstream", stderr)
	url := fs.String("url", "", "the remote MCP server's `URL`")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 0 || *url == "" {
		return usageError(stderr, "usage: aegis upstream --url URL  (started by aegis for a server configured with url:)")
	}
	header := http.Header{}
	if token := os.Getenv(upstreamBearer); token != "" {
		header.Set("Authorization", "Bearer "+token)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, ResponseHeaderTimeout: 0, IdleConnTimeout: 90 * time.Second}}
	return serve.Bridge(ctx, stdin, stdout, *url, client, header)
}
