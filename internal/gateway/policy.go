package gateway

import "github.com/aegis-mcp/aegis/internal/policy"

// decide asks the policy. In a shadow policy the call goes through whatever
// the rules say, and Decision.Would() says what enforcing them would do.
func (e *Engine) decide(req *policy.Request, c *Call) Verdict {
	var v Verdict
	e.decideInto(&v, req, c.Arguments)
	return v
}

// decideInto is decide writing to v, which carries fwd, the arguments as
// they will be forwarded, unless the call is denied.
func (e *Engine) decideInto(v *Verdict, req *policy.Request, fwd []byte) {
	// Every field is set, as a composite literal would, one by one: the
	// literal is built aside and copied.
	v.Decision = e.policy.Decide(req)
	v.Caps, v.Bound, v.Tier, v.Origin, v.Taint = req.Caps, req.Bound, req.Tier, req.Origin, req.Taint
	v.Ask, v.Findings, v.Err, v.Arguments = nil, nil, nil, nil
	v.Effect = v.Decision.Effect()
	if e.policy.Mode() == policy.Shadow {
		v.Effect = policy.Allow
	}
	if v.Effect != policy.Deny {
		v.Arguments = fwd
	}
}
