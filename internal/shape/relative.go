package shape

import (
	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
)

// RelativeCaps checks the arguments constrained to paths on a base URL
// (R14) and returns the net.connect each one makes: its resolution against
// the base, so that the policy and the egress gate see the host the server
// will reach. t may be nil: no constraint. An error is a [*Refusal].
func (t *Fields) RelativeCaps(root args.Value) ([]capability.Capability, error) {
	if t == nil || len(t.RelativeURL) == 0 {
		return nil, nil
	}
	var caps []capability.Capability
	for _, r := range t.RelativeURL {
		var bad error
		key, variant := r.Pointer.SelectExact(root, func(v args.Value, at args.Loc) {
			if bad != nil {
				return
			}
			if v.Kind() != args.String {
				bad = refusal(CheckRelativeURL, "argument %s: want a string (a path on %s)", at, r.Base)
				return
			}
			abs, err := r.Base.Resolve(v.Str())
			if err != nil {
				bad = refusal(CheckRelativeURL, "argument %s must be a path on %s: %v", at, r.Base, err)
				return
			}
			cp, err := capability.FromURL(abs)
			if err != nil {
				bad = refusal(CheckRelativeURL, "argument %s: %v", at, err)
				return
			}
			caps = append(caps, cp)
		})
		if variant {
			// A key differing only in case would escape the check and reach a
			// server that matches keys without case as the URL argument.
			return nil, refusal(CheckRelativeURL, "argument %q differs from %s only in case", key, r.Pointer)
		}
		if bad != nil {
			return nil, bad
		}
	}
	return caps, nil
}
