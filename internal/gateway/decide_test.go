package gateway

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// decideIntoRef is decideInto as a composite literal: the reference its
// field-by-field writes are held to.
func decideIntoRef(e *Engine, v *Verdict, req *policy.Request, fwd []byte) {
	*v = Verdict{
		Effect:   policy.Deny,
		Decision: e.policy.Decide(req),
		Caps:     req.Caps,
		Bound:    req.Bound,
		Tier:     req.Tier,
		Origin:   req.Origin,
		Taint:    req.Taint,
	}
	v.Effect = v.Decision.Effect()
	if e.policy.Mode() == policy.Shadow {
		v.Effect = policy.Allow
	}
	if v.Effect != policy.Deny {
		v.Arguments = fwd
	}
}

// TestDecideIntoSetsEveryField checks that decideInto leaves nothing of a
// verdict it overwrites: every field as the reference sets it.
func TestDecideIntoSetsEveryField(t *testing.T) {
	tests := []struct {
		name string
		req  policy.Request
	}{
		{"allowed read", policy.Request{Server: "fs", Tool: "read_text_file", Bound: true, Tier: capability.TierDataRead,
			Caps: []capability.Capability{{Kind: capability.FSRead, Path: "/home/u/projects/a"}}, Origin: capability.Interactive}},
		{"denied read", policy.Request{Server: "fs", Tool: "read_text_file", Bound: true, Tier: capability.TierDataRead,
			Caps: []capability.Capability{{Kind: capability.FSRead, Path: "/etc/shadow"}}, Taint: true}},
		{"unbound", policy.Request{Server: "misc", Tool: "x", Origin: capability.Unattended}},
	}
	for _, mode := range []string{"", "shadow"} {
		e := newEngine(t, mode)
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s mode %q", tt.name, mode), func(t *testing.T) {
				stale := Verdict{Effect: policy.Ask, Decision: e.policy.Decide(&tests[0].req),
					Caps: []capability.Capability{{Kind: capability.FSWrite, Path: "/stale"}}, Bound: true, Tier: capability.TierMutating,
					Ask: &Refusal{}, Findings: []dlp.Located{{}}, Origin: capability.Unattended, Taint: true,
					Err: errors.New("stale"), Arguments: []byte(`{"stale":1}`)}
				fwd := []byte(`{"path":"a"}`)
				got, want := stale, stale
				e.decideInto(&got, &tt.req, fwd)
				decideIntoRef(e, &want, &tt.req, fwd)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("decideInto = %+v\nreference  = %+v", got, want)
				}
			})
		}
	}
}
