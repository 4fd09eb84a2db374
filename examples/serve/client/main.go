// Command client calls a server through aegis serve as the official Go
// SDK's MCP client, with an API key or a bearer token: with a tool name it
// calls the tool and prints what came back, without one it lists the
// server's tools.
//
//	go run ./examples/serve/client -key KEY http://127.0.0.1:8347/mcp/notes
//	go run ./examples/serve/client -key KEY http://127.0.0.1:8347/mcp/notes read_file '{"path": "/tmp/x/notes/hello.txt"}'
//
// The exit status is 0 when the call was forwarded and its result is not an
// error, 1 when its result is an error (aegis's refusal or the tool's own)
// or it failed, 2 for bad usage.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(argv []string) int {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	key := fs.String("key", os.Getenv("AEGIS_KEY"), "the API key or bearer token (default $AEGIS_KEY)")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long to wait for the answer (a call a person must approve waits)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: client [-key KEY] URL [TOOL [ARGUMENTS-JSON]]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	if fs.NArg() < 1 || fs.NArg() > 3 {
		fs.Usage()
		return 2
	}
	endpoint := fs.Arg(0)
	var args map[string]any
	if fs.NArg() == 3 {
		if err := json.Unmarshal([]byte(fs.Arg(2)), &args); err != nil {
			fmt.Fprintf(os.Stderr, "client: the arguments are not a JSON object: %v\n", err)
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	httpClient := &http.Client{Transport: bearer{token: *key, next: http.DefaultTransport}}
	client := mcp.NewClient(&mcp.Implementation{Name: "aegis-example-client", Version: "v1"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: httpClient, MaxRetries: -1}, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "client: connecting to %s: %v\n", endpoint, err)
		return 1
	}
	defer session.Close()

	// A client lists the tools before it calls one, as the models' clients
	// do: aegis checks a call against the definition its server listed.
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "client: tools/list: %v\n", err)
		return 1
	}
	if fs.NArg() == 1 {
		for _, t := range tools.Tools {
			fmt.Printf("%s\t%s\n", t.Name, t.Description)
		}
		return 0
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: fs.Arg(1), Arguments: args})
	if err != nil {
		fmt.Fprintf(os.Stderr, "client: tools/call %s: %v\n", fs.Arg(1), err)
		return 1
	}
	var text []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text = append(text, t.Text)
		}
	}
	if res.IsError {
		// aegis's refusal ("aegis denied this call: …") or the tool's own
		// error: the text says which.
		fmt.Printf("ERROR: %s\n", strings.Join(text, "\n"))
		return 1
	}
	fmt.Println(strings.Join(text, "\n"))
	return 0
}

// bearer sets the Authorization header of every request the client makes.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}
