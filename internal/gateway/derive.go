package gateway

import (
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// requestCaps is a policy request with room for the capabilities of most
// calls.
type requestCaps struct {
	req  policy.Request
	caps [1]capability.Capability
}
