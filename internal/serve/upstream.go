package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aegis-mcp/aegis/internal/proxy"
)

// This file is the other end: a remote MCP server over Streamable HTTP as
// the relay's upstream. The relay speaks to a server over stdio; Bridge
// is that server for one at a URL, run in aegis's process
// (proxy.RunBridge): each line it reads is POSTed, and each message of the
// answers, JSON or SSE, and of the session's GET stream is written back as
// a line. The relay decides and records as for any server; the bridge
// adds nothing of the client's: its credentials are the configuration's
// (Remote.Header), never the caller's.

// eventBuffer is the starting size of an SSE stream's read buffer.
const eventBuffer = 2 << 10

// endTimeout bounds the DELETE that ends the server's session.
const endTimeout = 5 * time.Second

// maxPosting bounds the client's notifications and responses being
// POSTed at once.
const maxPosting = 16

// A Remote is an MCP server at a URL, reached over Streamable HTTP.
type Remote struct {
	URL    string
	Client *http.Client
	// Header is sent with every request: the server's credentials, from
	// the configuration.
	Header http.Header
	// MaxMessage bounds one message of the server's (an answer's body,
	// an event of a stream): the relay's cap (proxy.Options'
	// MaxMessageBytes), past which it would drop the message anyway.
	// Zero is proxy.DefaultMaxMessageBytes.
	MaxMessage int
}

// Bridge relays the messages of in to the server and the server's
// messages to out, one per line, until in ends (then it ends the server's
// session) or ctx is done: a [proxy.Bridge]. A redirect is not followed,
// whatever r.Client says: the server is at the URL the configuration
// chose, and a server that sent the bridge elsewhere would have aegis's
// host ask what it names (a service of aegis's network, a cloud's
// metadata) and relay the answer. A message of the server's over
// r.MaxMessage answers its request with an error.
func (r Remote) Bridge(ctx context.Context, in proxy.MessageReader, out io.Writer) error {
	c := *r.Client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	max := r.MaxMessage
	if max <= 0 {
		max = proxy.DefaultMaxMessageBytes
	}
	b := &bridge{url: r.URL, client: &c, header: r.Header, out: out, max: max, posting: make(chan struct{}, maxPosting)}
	// The GET stream lasts as long as the session: it ends when in does.
	listenCtx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	var listening sync.WaitGroup
	var wg sync.WaitGroup
	var err error
	for {
		var m []byte
		if m, err = in.ReadMessage(); err != nil {
			break
		}
		line := bytes.Clone(bytes.TrimSpace(m))
		if len(line) == 0 {
			continue
		}
		msg, err := proxy.Inspect(line, 256)
		if err != nil {
			continue // the relay writes valid messages
		}
		if msg.Kind == proxy.Request && msg.Method == "initialize" {
			// The session id comes with its answer: the rest waits.
			b.post(ctx, line, msg)
			continue
		}
		// A request waits at the relay for a place (MaxInFlight); a
		// notification or response does not, and aegis serve accepts
		// one at once: were they not bounded here, a client sending
		// them faster than the server answers would have aegis hold a
		// goroutine and a connection to the server for each. The input
		// waits instead, as a process's stdin would.
		var posting chan struct{}
		if msg.Kind != proxy.Request {
			posting = b.posting
			posting <- struct{}{}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.post(ctx, line, msg)
			if posting != nil {
				<-posting
			}
		}()
		if msg.Kind == proxy.Notification && msg.Method == "notifications/initialized" {
			b.listenOnce(listenCtx, &listening)
		}
	}
	wg.Wait()
	stopListening()
	listening.Wait()
	b.end(ctx)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

type bridge struct {
	url    string
	client *http.Client
	header http.Header

	omu sync.Mutex
	out io.Writer

	max int // bounds one message of the server's

	posting chan struct{} // a place for each notification or response being POSTed

	mu        sync.Mutex
	session   string // Mcp-Session-Id, once the server gave one
	revision  string // the revision initialize agreed on
	listening bool
}

// write writes one message of the server's, as one line.
func (b *bridge) write(msg []byte) {
	var buf bytes.Buffer
	if json.Compact(&buf, msg) != nil {
		return
	}
	buf.WriteByte('\n')
	b.omu.Lock()
	b.out.Write(buf.Bytes())
	b.omu.Unlock()
}

// request builds an HTTP request of method with body.
func (b *bridge) request(ctx context.Context, method string, body []byte, msg *proxy.Inspected) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, b.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range b.header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	b.mu.Lock()
	session, revision := b.session, b.revision
	b.mu.Unlock()
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if msg != nil {
		// A request of revision 2026-07-28 names its revision, method and
		// target in headers too.
		var rev string
		if raw := proxy.Member(proxy.Member(msg.Params, "_meta"), metaProtocolVersion); len(raw) > 0 && raw[0] == '"' {
			json.Unmarshal(raw, &rev)
		}
		if rev >= statelessRevision {
			revision = rev
			req.Header.Set("Mcp-Method", msg.Method)
			// The member aegis read, not the first one present: a
			// resources/read may have a name too, and a router in
			// front of the server must see the call it makes.
			if raw := proxy.Member(msg.Params, nameKey(msg.Method)); len(raw) > 0 && raw[0] == '"' {
				var v string
				json.Unmarshal(raw, &v)
				req.Header.Set("Mcp-Name", v)
			}
		}
	}
	if revision != "" {
		req.Header.Set("Mcp-Protocol-Version", revision)
	}
	return req, nil
}

// post sends one message and writes what the server answers.
func (b *bridge) post(ctx context.Context, line []byte, msg proxy.Inspected) {
	req, err := b.request(ctx, http.MethodPost, line, &msg)
	if err != nil {
		b.fail(msg, err)
		return
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.fail(msg, err)
		return
	}
	defer resp.Body.Close()
	if msg.Method == "initialize" {
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			b.mu.Lock()
			b.session = id
			b.mu.Unlock()
		}
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return
	case resp.StatusCode/100 != 2:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		// A JSON-RPC error in the body is the server's answer.
		if m, err := proxy.Inspect(bytes.TrimSpace(body), 256); err == nil && m.Kind == proxy.Response {
			b.write(body)
			return
		}
		b.fail(msg, fmt.Errorf("HTTP %s: %s", resp.Status, strings.TrimSpace(string(body))))
		return
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b.events(resp.Body, msg)
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(b.max)+1))
	if err != nil {
		b.fail(msg, err)
		return
	}
	if len(body) > b.max {
		// Cut short, it would not parse and the request would never be
		// answered.
		b.fail(msg, fmt.Errorf("the server's answer is over %d bytes", b.max))
		return
	}
	b.answered(msg, body)
	b.write(body)
}

// answered notes what initialize agreed on.
func (b *bridge) answered(msg proxy.Inspected, body []byte) {
	if msg.Method != "initialize" {
		return
	}
	var r struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(body, &r) == nil && r.Result.ProtocolVersion != "" {
		b.mu.Lock()
		b.revision = r.Result.ProtocolVersion
		b.mu.Unlock()
	}
}

// events writes the messages of an SSE stream. An event is bounded as a
// line is: a server whose event grows past b.max (data lines without
// the blank line that ends it) loses the stream, and the request of the
// stream, if not answered yet, is answered with an error.
func (b *bridge) events(body io.Reader, msg proxy.Inspected) {
	// A session's GET stream is read for as long as the session lasts,
	// mostly idle: its buffer starts small (a longer line grows it).
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, eventBuffer), b.max+len("data: \r\n"))
	var data []byte
	// answered says the stream carried the answer to msg: an error
	// then would answer a later request that reused its id.
	answered := msg.Kind != proxy.Request
	key, _ := proxy.IDKey(msg.ID)
	for sc.Scan() {
		l := sc.Bytes()
		switch {
		case len(l) == 0:
			if len(data) > 0 {
				b.answered(msg, data)
				if !answered {
					m, err := proxy.Inspect(data, 256)
					k, _ := proxy.IDKey(m.ID)
					answered = err == nil && m.Kind == proxy.Response && k == key
				}
				b.write(data)
				data = data[:0]
			}
		case bytes.HasPrefix(l, []byte("data:")):
			l = bytes.TrimPrefix(bytes.TrimPrefix(l, []byte("data:")), []byte(" "))
			if len(data)+1+len(l) > b.max {
				if !answered {
					b.fail(msg, fmt.Errorf("an event of the server's is over %d bytes", b.max))
				}
				return
			}
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, l...)
		}
	}
	if err := sc.Err(); err != nil {
		if !answered {
			b.fail(msg, fmt.Errorf("reading the server's events: %w", err))
		}
		return
	}
	if len(data) > 0 {
		b.write(data)
	}
}

// fail answers a request the server could not be asked with an error
// saying why; a notification or response is dropped.
func (b *bridge) fail(msg proxy.Inspected, err error) {
	if msg.Kind != proxy.Request {
		return
	}
	text, _ := json.Marshal("aegis: the upstream server could not be reached: " + err.Error())
	b.write(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":%s}}`, msg.ID, text))
}

// listenOnce opens the session's GET stream, once, for what the server
// sends unasked; a server without one says 405.
func (b *bridge) listenOnce(ctx context.Context, wg *sync.WaitGroup) {
	b.mu.Lock()
	if b.listening || b.revision >= statelessRevision {
		b.mu.Unlock()
		return
	}
	b.listening = true
	b.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		req, err := b.request(ctx, http.MethodGet, nil, nil)
		if err != nil {
			return
		}
		resp, err := b.client.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			b.events(resp.Body, proxy.Inspected{})
		}
	}()
}

// end ends the server's session, if it gave one.
func (b *bridge) end(ctx context.Context) {
	b.mu.Lock()
	session := b.session
	b.mu.Unlock()
	if session == "" {
		return
	}
	// Sent even when ctx is done (the relay stopped the bridge), but
	// not waited for without end: nothing else would end a DELETE that
	// the server never answers, and the bridge, its goroutine and its
	// connection would stay for good.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endTimeout)
	defer cancel()
	req, err := b.request(ctx, http.MethodDelete, nil, nil)
	if err != nil {
		return
	}
	if resp, err := b.client.Do(req); err == nil {
		resp.Body.Close()
	}
}
