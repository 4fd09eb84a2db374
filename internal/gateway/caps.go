package gateway

import (
	"context"
	"strconv"

	"github.com/aegis-mcp/aegis/internal/session"
)

// A CapStore counts calls against their caps where several processes
// share the sessions (replicas of aegis serve): Take is
// session.Store.Take, atomic across them; an error refuses the call.
type CapStore interface {
	Take(ctx context.Context, session, turn, tool string, l session.Limits) (bool, session.Cap, error)
}

// ShareCaps makes e count caps in s rather than in its own memory. Call
// it before e decides anything.
func (e *Engine) ShareCaps(s CapStore) { e.sharedCaps = s }

// takeCap counts an allowed call against its tool's caps (R18): per turn,
// per minute and per session.
func (e *Engine) takeCap(ctx context.Context, c *Call, t *Tool) error {
	if t == nil {
		return nil
	}
	name, what := c.Tool, "tool "+strconv.Quote(c.Tool)
	if c.Method != "" {
		// A method's caps are the method's, whatever it names.
		name, what = c.Method, "method "+c.Method
	}
	turn := strconv.Itoa(c.Turn)
	if e.sharedCaps != nil && t.Caps != (session.Limits{}) {
		ok, cp, err := e.sharedCaps.Take(ctx, c.Session, turn, name, t.Caps)
		if err != nil {
			return refusal(RuleCap, "%s has caps, and they could not be counted: %v", what, err)
		}
		if !ok {
			return refusal(RuleCap, "%s reached its %s cap", what, cp)
		}
		return nil
	}
	if ok, cp := e.sessions.Take(c.Session, turn, name, t.Caps); !ok {
		return refusal(RuleCap, "%s reached its %s cap", what, cp)
	}
	return nil
}
