package gateway

import (
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// unattended declines at once an ask in an unattended session (R19): no
// person is there to answer, unless the tool allows the wait.
func unattended(v *Verdict, t *Tool, origin capability.Origin) error {
	if v.Effect == policy.Ask && origin == capability.Unattended && (t == nil || !t.AllowUnattended) {
		return refusal(RuleUnattended, "this call needs a person's approval, and no person is at an unattended session (%s)", v.Reason())
	}
	return nil
}
