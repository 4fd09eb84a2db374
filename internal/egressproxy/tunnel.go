package egressproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegis-mcp/aegis/internal/egress"
)

// established is the answer to a CONNECT whose tunnel is open.
const established = "HTTP/1.1 200 Connection established\r\n\r\n"

// connect serves a CONNECT: derive the capability, decide it, dial it
// through the egress checker, then answer 200 and copy bytes both ways
// until both sides are done, the tunnel is idle, or the proxy closes.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	c, err := connectTarget(r)
	if err != nil {
		p.refuse(w, http.StatusBadRequest, Refusal{Target: askedTarget(r), Stage: Request, Reason: err.Error()}, true)
		return
	}
	rf := Refusal{Target: askedTarget(r), Capability: c}
	select {
	case p.tunnels <- struct{}{}:
		defer func() { <-p.tunnels }()
	default:
		rf.Stage, rf.Reason = Limit, "too many tunnels open"
		p.refuse(w, http.StatusServiceUnavailable, rf, true)
		return
	}
	// A CONNECT to an https credential's host and port is intercepted,
	// and carries https by construction.
	t := p.creds[credKey{c.Host, c.Port, true}]
	if t != nil {
		c.Scheme = "https"
		rf.Capability = c
	}
	if ok, reason := p.decide(r.Context(), c); !ok {
		rf.Stage, rf.Reason = Policy, reasonOr(reason, "denied by policy")
		p.refuse(w, http.StatusForbidden, rf, true)
		return
	}
	if !p.begin() {
		http.Error(w, "aegis egress proxy: shutting down", http.StatusServiceUnavailable)
		return
	}
	defer p.work.Done()
	if t != nil {
		p.intercept(w, r, c, rf, t)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.dialTimeout)
	up, v, err := p.checker.DialCapability(ctx, "tcp", &c)
	cancel()
	if err != nil {
		p.dialFailed(w, rf, v, err, true)
		return
	}
	if !p.track(p.upstream, up) {
		return
	}
	defer func() {
		up.Close()
		p.untrack(p.upstream, up)
	}()

	client, buf, ok := p.establish(w)
	if !ok {
		return
	}
	defer func() {
		client.Close()
		p.untrack(p.clients, client)
	}()
	// Bytes the client sent after its CONNECT (a TLS ClientHello, eagerly)
	// are in the server's read buffer.
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	p.pipe(unwrap(client), up)
}

// reasonOr returns reason, or def when it is empty.
func reasonOr(reason, def string) string {
	if reason == "" {
		return def
	}
	return reason
}

// dialFailed answers a dial that did not connect: 403 for an egress or
// policy refusal, 502 for an upstream certificate that did not verify
// (all three reported), 504 for a timeout, 502 otherwise.
func (p *Proxy) dialFailed(w http.ResponseWriter, rf Refusal, v egress.Verdict, err error, closeConn bool) {
	var (
		de *egress.DenyError
		pe *deniedError
		ce *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &de):
		rf.Stage, rf.Reason, rf.Verdict = Egress, de.Verdict.String(), de.Verdict
		p.refuse(w, http.StatusForbidden, rf, closeConn)
	case errors.As(err, &pe):
		rf.Stage, rf.Reason = Policy, pe.reason
		p.refuse(w, http.StatusForbidden, rf, closeConn)
	case errors.As(err, &ce):
		rf.Stage, rf.Reason = Upstream, "its TLS certificate does not verify: "+clip(ce.Err.Error())
		p.refuse(w, http.StatusBadGateway, rf, closeConn)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		p.log.Debug("egress proxy: dial timed out", "target", rf.Target, "host", v.Host)
		http.Error(w, "aegis egress proxy: connecting to "+rf.Target+" timed out", http.StatusGatewayTimeout)
	default:
		p.log.Debug("egress proxy: dial failed", "target", rf.Target, "host", v.Host, "err", err)
		http.Error(w, "aegis egress proxy: could not connect to "+rf.Target, http.StatusBadGateway)
	}
}

// chunk is how many bytes one copy moves before the idle deadline is set
// again: large enough that the deadline costs nothing, small enough that
// a busy tunnel is seen as busy.
const chunk = 1 << 20

// pipe copies a and b both ways until both directions have ended (a
// direction ends at EOF, passed on with CloseWrite) or the tunnel has been
// idle, then closes both.
func (p *Proxy) pipe(a, b net.Conn) {
	var (
		active atomic.Bool // a byte moved since a direction last looked
		wg     sync.WaitGroup
		once   sync.Once
	)
	active.Store(true)
	kill := func() {
		once.Do(func() {
			a.Close()
			b.Close()
		})
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.copyIdle(b, a, &active, kill)
	}()
	p.copyIdle(a, b, &active, kill)
	wg.Wait()
	kill()
}

// copyIdle copies src to dst, chunk by chunk, each with a read deadline of
// p.idle. A copy that times out having moved nothing counts a strike
// unless the other direction moved bytes since; two strikes in a row close
// the tunnel. At EOF it closes dst for writing; on any other error it
// closes the tunnel. io.Copy of an *io.LimitedReader over a TCP or Unix
// connection into a TCP connection splices on Linux.
func (p *Proxy) copyIdle(dst, src net.Conn, active *atomic.Bool, kill func()) {
	strikes := 0
	for {
		src.SetReadDeadline(time.Now().Add(p.idle))
		n, err := io.Copy(dst, &io.LimitedReader{R: src, N: chunk})
		switch {
		case err == nil && n == chunk:
			strikes = 0
			active.Store(true)
			continue
		case err == nil:
			// EOF from src: pass it on, and let the other direction run.
			if cw, ok := dst.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
				return
			}
			kill()
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			if n > 0 || active.Swap(false) {
				active.Store(n > 0)
				strikes = 0
				continue
			}
			if strikes++; strikes < 2 {
				continue
			}
			p.log.Debug("egress proxy: tunnel idle, closing")
		}
		kill()
		return
	}
}

// establish takes over a CONNECT's connection from the HTTP server and
// answers it 200: the client's connection, tracked (the caller closes and
// untracks it), and what the server had read of it beyond the request.
// ok is false when there is no connection to go on with.
func (p *Proxy) establish(w http.ResponseWriter) (client net.Conn, buf *bufio.ReadWriter, ok bool) {
	client, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		p.log.Debug("egress proxy: hijack", "err", err)
		return nil, nil, false
	}
	if !p.track(p.clients, client) {
		return nil, nil, false
	}
	client.SetDeadline(time.Time{}) // the server's header and idle deadlines
	if _, err := io.WriteString(client, established); err != nil {
		client.Close()
		p.untrack(p.clients, client)
		return nil, nil, false
	}
	return client, buf, true
}
