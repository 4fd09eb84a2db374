package gateway

import "strconv"

// takeCap counts an allowed call against its tool's caps (R18): per turn,
// per minute and per session.
func (e *Engine) takeCap(c *Call, t *Tool) error {
	if t == nil {
		return nil
	}
	if c.Method != "" {
		// A method's caps are the method's, whatever it names.
		if ok, cp := e.sessions.Take(c.Session, strconv.Itoa(c.Turn), c.Method, t.Caps); !ok {
			return refusal(RuleCap, "method %s reached its %s cap", c.Method, cp)
		}
		return nil
	}
	if ok, cp := e.sessions.Take(c.Session, strconv.Itoa(c.Turn), c.Tool, t.Caps); !ok {
		return refusal(RuleCap, "tool %q reached its %s cap", c.Tool, cp)
	}
	return nil
}
