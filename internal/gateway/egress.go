package gateway

import (
	"context"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// egress gates every net.connect capability of a call (R15) with the
// server's egress checker, or the default one.
func (e *Engine) egress(ctx context.Context, s *Server, caps []capability.Capability) error {
	for i := range caps {
		if caps[i].Kind != capability.NetConnect {
			continue
		}
		gate := s.Egress
		if gate == nil {
			gate = e.defaultEgress
		}
		if ev := gate.CheckCapability(ctx, &caps[i]); !ev.Allow {
			return refusal(RuleEgress, "%s", ev.String())
		}
	}
	return nil
}
