package egressproxy

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/egress"
)

// Stage names the check that refused a request.
type Stage uint8

// The stages, in the order a request meets them.
const (
	// Request: the request is not one the proxy serves (origin-form,
	// a method it does not forward, a malformed or ambiguous target,
	// CONNECT with a body). Requests that net/http's own parser rejects
	// (duplicate Host, bad header syntax, oversized headers) are answered
	// 400 or 431 before the proxy sees them and are not reported.
	Request Stage = iota + 1
	// Limit: MaxTunnels tunnels are open.
	Limit
	// Policy: Decide refused the capability.
	Policy
	// Egress: the egress checker refused it (scheme, name, an address
	// of the name, resolution).
	Egress
	// Upstream: the host of an intercepted CONNECT failed the proxy's
	// check of it: its TLS certificate did not verify.
	Upstream
)

var stageNames = [...]string{Request: "request", Limit: "limit", Policy: "policy", Egress: "egress", Upstream: "upstream"}

// String returns the stage's name for logs.
func (s Stage) String() string {
	if int(s) < len(stageNames) && stageNames[s] != "" {
		return stageNames[s]
	}
	return fmt.Sprintf("stage(%d)", uint8(s))
}

// Refusal is one refused request, for the log and the chain: a decision of
// the server's own, not of a call.
type Refusal struct {
	// Target is what the server asked for, as it wrote it but never with a
	// path, query or userinfo: "host:port" for CONNECT, "http://host[:port]"
	// for a plain request, at most 256 bytes. Empty when there was none.
	Target string
	// Capability is the net.connect the target derives, when it parsed:
	// canonical host, port, scheme, and for a plain request the URL,
	// query included, as the policy saw it.
	Capability capability.Capability
	Stage      Stage
	// Reason says why in one line: Decide's reason, the egress verdict,
	// or what was wrong with the request. It holds no secret.
	Reason string
	// Verdict is the egress checker's verdict for Stage Egress.
	Verdict egress.Verdict
}

// maxTarget bounds Refusal.Target.
const maxTarget = 256

// clip bounds s for Refusal.Target: valid UTF-8, at most maxTarget bytes.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxTarget {
		return s
	}
	i := maxTarget
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// refuse answers w with status and a one-line text naming the target and
// the reason, and reports the refusal.
func (p *Proxy) refuse(w http.ResponseWriter, status int, rf Refusal, closeConn bool) {
	if p.onRefuse != nil {
		p.onRefuse(rf)
	}
	if closeConn {
		w.Header().Set("Connection", "close")
	}
	msg := "aegis egress proxy: refused"
	if rf.Target != "" {
		msg += " " + rf.Target
	}
	http.Error(w, msg+": "+rf.Reason, status)
}
