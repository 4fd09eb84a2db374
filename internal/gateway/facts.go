package gateway

import "github.com/aegis-mcp/aegis/internal/capability"

// sessionFacts merges what the call says of its session with what the
// session store knows: taint is never lost, and an origin the call does not
// know is the store's.
func (e *Engine) sessionFacts(c *Call) (capability.Origin, bool) {
	origin, taint := c.Origin, c.Taint
	if c.Session == "" {
		return origin, taint
	}
	o, tainted, _ := e.sessions.State(c.Session)
	if tainted || e.sharedTainted(c.Session) {
		taint = true
	}
	if origin == capability.OriginUnknown {
		origin = o
	}
	if origin == capability.Unattended {
		taint = true
	}
	return origin, taint
}

// OpenSession starts session id with its origin, once, when the session
// starts: an unattended session is tainted from its start. A call in a
// session the engine never opened (or has forgotten) is treated as tainted.
func (e *Engine) OpenSession(id string, origin capability.Origin) {
	e.sessions.Open(id, origin)
}
