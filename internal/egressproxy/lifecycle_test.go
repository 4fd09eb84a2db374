package egressproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// echoThrough writes msg into a tunnel and reads it back from an echoing
// origin.
func echoThrough(t testing.TB, c net.Conn, br *bufio.Reader, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != msg {
		t.Fatalf("echo through the tunnel: %q, %v", got, err)
	}
}

func TestTunnelEchoesAndHalfCloses(t *testing.T) {
	o := rawOrigin(t, "127.0.0.1:0", "hello\n")
	rec := &recorder{}
	_, proxy := startProxy(t, &Config{Checker: loopbackChecker(t, nil), Decide: rec.allowPorts(o.port())}, rec)
	c, br, resp := dialConnect(t, proxy, o.addr())
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	line, err := br.ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("greeting %q, %v", line, err)
	}
	echoThrough(t, c, br, "ping")
	// The client half-closes; the origin sees EOF, stops echoing and
	// closes; the client sees EOF.
	c.(*net.TCPConn).CloseWrite()
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the half-close: %q, %v", rest, err)
	}
	if s := rec.seen(); len(s) != 1 || s[0].Scheme != "" || s[0].URL != "" {
		t.Errorf("a tunnel to port %d was decided as %+v; want no scheme", o.port(), s)
	}
}

// TestConnectEagerBytes: bytes the client sends right after its CONNECT,
// before the 200 (a TLS ClientHello, eagerly), reach the origin.
func TestConnectEagerBytes(t *testing.T) {
	o := rawOrigin(t, "127.0.0.1:0", "")
	rec := &recorder{}
	_, proxy := startProxy(t, &Config{Checker: loopbackChecker(t, nil), Decide: rec.allowPorts(o.port())}, rec)
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\neager", o.addr(), o.addr())
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "eager" {
		t.Fatalf("echo of the eager bytes: %q, %v", got, err)
	}
}

func TestMaxTunnels(t *testing.T) {
	o := rawOrigin(t, "127.0.0.1:0", "")
	rec := &recorder{}
	_, proxy := startProxy(t, &Config{Checker: loopbackChecker(t, nil), Decide: rec.allowPorts(o.port()), MaxTunnels: 1}, rec)
	c, br, resp := dialConnect(t, proxy, o.addr())
	if resp.StatusCode != 200 {
		t.Fatalf("first CONNECT: %d", resp.StatusCode)
	}
	echoThrough(t, c, br, "x") // the tunnel is open and counted
	_, _, resp = dialConnect(t, proxy, o.addr())
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second CONNECT over MaxTunnels 1: %d, want 503", resp.StatusCode)
	}
	if rf := rec.refused(); len(rf) != 1 || rf[0].Stage != Limit {
		t.Errorf("refusals %+v, want one at stage limit", rf)
	}
	c.Close()
	// The slot comes back when the tunnel ends.
	for i := 0; ; i++ {
		c, _, resp := dialConnect(t, proxy, o.addr())
		c.Close()
		if resp.StatusCode == 200 {
			break
		}
		if i == 1000 {
			t.Fatal("the tunnel's slot never came back")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestIdleTunnelCloses: a tunnel with no byte either way is closed; one
// whose origin streams bytes while the client only reads is not.
func TestIdleTunnelCloses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		// A byte every 10 ms for 60 bytes, three idle periods; then
		// silence, with the connection left open.
		for i := 0; i < 60; i++ {
			if _, err := c.Write([]byte{'d'}); err != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		io.Copy(io.Discard, c)
	}()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	rec := &recorder{}
	_, proxy := startProxy(t, &Config{Checker: loopbackChecker(t, nil), Decide: rec.allowPorts(port), IdleTimeout: 200 * time.Millisecond}, rec)
	c, br, resp := dialConnect(t, proxy, ln.Addr().String())
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	got := make([]byte, 60)
	if _, err := io.ReadFull(br, got); err != nil {
		t.Fatalf("the streaming tunnel closed after %d bytes: %v", bytesRead(got), err)
	}
	// Then silence: the proxy closes the tunnel.
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("read a byte from an idle tunnel")
	}
	c.Close()
}

// bytesRead counts the bytes io.ReadFull filled.
func bytesRead(b []byte) int {
	n := 0
	for _, x := range b {
		if x != 0 {
			n++
		}
	}
	return n
}

func TestServeConn(t *testing.T) {
	allowed := newOrigin(t, "127.0.0.1:0", nil)
	rec := &recorder{}
	p, err := New(&Config{Checker: loopbackChecker(t, nil), Decide: rec.allowPorts(allowed.port())})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Over a pipe: no TCP, no splice, no CloseWrite.
	client, server := net.Pipe()
	if err := p.ServeConn(server); err != nil {
		t.Fatal(err)
	}
	go fmt.Fprintf(client, "GET http://%s/ HTTP/1.1\r\nHost: x\r\n\r\nCONNECT %s HTTP/1.1\r\n\r\n", allowed.addr(), allowed.addr())
	br := bufio.NewReader(client)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET over ServeConn: %v %v", resp, err)
	}
	body(t, resp)
	resp, err = http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT over ServeConn: %v %v", resp, err)
	}
	go fmt.Fprintf(client, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(body(t, resp), "ok from") {
		t.Fatalf("GET through the tunnel: %v %v", resp, err)
	}
	client.Close()

	p.Close()
	a, b := net.Pipe()
	defer a.Close()
	if err := p.ServeConn(b); !errors.Is(err, ErrClosed) {
		t.Errorf("ServeConn after Close: %v, want ErrClosed", err)
	}
	if _, err := b.Write([]byte("x")); err == nil {
		t.Error("ServeConn after Close left the connection open")
	}
}

// TestShutdown: Shutdown waits for a tunnel until its context ends, then
// closes it; Serve returns ErrClosed.
func TestShutdown(t *testing.T) {
	o := rawOrigin(t, "127.0.0.1:0", "")
	rec := &recorder{}
	p, err := New(&Config{Checker: loopbackChecker(t, nil), Decide: rec.allowPorts(o.port())})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	c, br, resp := dialConnect(t, ln.Addr().String(), o.addr())
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	echoThrough(t, c, br, "x")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown with a tunnel open and ctx done: %v, want context.Canceled", err)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Error("the tunnel is still open after Shutdown")
	}
	if err := <-served; !errors.Is(err, ErrClosed) {
		t.Errorf("Serve returned %v, want ErrClosed", err)
	}
	if err := p.Serve(ln); !errors.Is(err, ErrClosed) {
		t.Errorf("Serve after Shutdown: %v", err)
	}
}

// TestNoGoroutineLeak: after Close, every goroutine the proxy started has
// ended, with tunnels, kept-alive connections and requests in flight at
// the time.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		raw := rawOrigin(t, "127.0.0.1:0", "")
		slow := make(chan struct{})
		defer close(slow)
		web := newOrigin(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				w.WriteHeader(200)
				w.(http.Flusher).Flush()
				<-slow
				return
			}
			io.WriteString(w, "ok")
		})
		rec := &recorder{}
		p, err := New(&Config{Checker: loopbackChecker(t, nil), Decide: rec.allowPorts(raw.port(), web.port())})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go p.Serve(ln)
		proxy := ln.Addr().String()
		var conns []net.Conn
		for i := 0; i < 3; i++ {
			c, br, resp := dialConnect(t, proxy, raw.addr())
			if resp.StatusCode != 200 {
				t.Fatal(resp.Status)
			}
			echoThrough(t, c, br, "x")
			conns = append(conns, c)
		}
		// A kept-alive plain connection, and one with a response in flight.
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: x\r\n\r\n", web.addr())
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body(t, resp)
		c2, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c2)
		fmt.Fprintf(c2, "GET http://%s/slow HTTP/1.1\r\nHost: x\r\n\r\n", web.addr())
		if _, err := http.ReadResponse(bufio.NewReader(c2), nil); err != nil {
			t.Fatal(err)
		}
		p.Close()
		for _, c := range conns {
			c.Close()
		}
		web.srv.Close()
		raw.ln.Close()
	}()
	// Goroutines end asynchronously after their connections close; wait
	// for them, without a bound on how long that takes beyond the test's.
	for i := 0; ; i++ {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if i == 2000 {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
