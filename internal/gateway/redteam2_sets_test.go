package gateway

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/session"
)

// TestRedteamSetGlobs: a trusted set's pattern `*@corp.example` is meant
// to trust the company's addresses, not a string a mail server reads as
// several recipients or one elsewhere.
func TestRedteamSetGlobs(t *testing.T) {
	p := policyFile(t, "testdata/links.yaml")
	to, _ := args.ParsePointer("/to")
	colleagues, _ := policy.NewValueSet(binding.IDKindEmail, []string{"*@corp.example"})
	for _, flag := range []bool{false, true} {
		e, err := New(p, []*Server{{Name: "mail", Bindings: binding.Table{
			"send": {Tool: "send", Tier: capability.TierMutating, Args: []binding.Arg{{Pointer: to, Kind: capability.ID, IDKind: binding.IDKindEmail, FlagUnproven: flag}}},
		}}}, &Options{Sessions: session.New(nil), Trusted: []*policy.ValueSet{colleagues}})
		if err != nil {
			t.Fatal(err)
		}
		e.OpenSession("s", capability.Interactive)
		for _, to := range []string{
			"mallory@evil.example, bob@corp.example",
			"mallory@evil.example;bob@corp.example",
			"mallory@evil.example\nbob@corp.example",
			"Mallory <mallory@evil.example>, <bob@corp.example",
			`"x@corp.example"@evil.example, @corp.example`,
			"mallory@evil.example (@corp.example",
			"mallory%evil.example@corp.example",
			"@evil.example:mallory@corp.example",
		} {
			b, _ := json.Marshal(map[string]string{"to": to})
			v := e.Check(context.Background(), &Call{Session: "s", Server: "mail", Tool: "send", Origin: capability.Interactive, Arguments: b})
			if v.Effect == policy.Allow {
				t.Errorf("flag %v, to %q: %s (%s), want not allow", flag, to, v.Effect, v.Reason())
			}
		}
	}
}
