package gateway

import (
	"context"
	"os"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// TestRedteamValueEvasion: amounts a server reads as large must not pass
// `has(value.amount) && value.amount > 1000` as if absent.
func TestRedteamValueEvasion(t *testing.T) {
	src, err := os.ReadFile("testdata/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse("testdata/values.yaml", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	ptr := func(s string) args.Pointer {
		pp, err := args.ParsePointer(s)
		if err != nil {
			t.Fatal(err)
		}
		return pp
	}
	e, err := New(p, []*Server{{Name: "bank", Bindings: binding.Table{
		"pay": {Tool: "pay", Tier: capability.TierMutating, Values: []binding.ValueArg{
			{Pointer: ptr("/amount"), Name: "amount"}, {Pointer: ptr("/currency"), Name: "currency"}, {Pointer: ptr("/memo"), Name: "note"}}},
		"batch": {Tool: "batch", Tier: capability.TierMutating, Values: []binding.ValueArg{
			{Pointer: ptr("/items/*/amount"), Name: "amount"}}},
	}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, tool, args string
		want             policy.Effect
	}{
		{"huge exponent", "pay", `{"amount":1e400,"currency":"EUR"}`, policy.Ask},
		{"huge integer", "pay", `{"amount":100000000000000000000000000000,"currency":"EUR"}`, policy.Ask},
		{"big negative exponent form", "pay", `{"amount":5E+3,"currency":"EUR"}`, policy.Ask},
		{"amount in a list", "pay", `{"amount":[5000],"currency":"EUR"}`, policy.Ask},
		{"amount in an object", "pay", `{"amount":{"value":5000},"currency":"EUR"}`, policy.Ask},
		{"amount null", "pay", `{"amount":null,"currency":"EUR"}`, policy.Ask},
		{"string exponent", "pay", `{"amount":"1e4","currency":"EUR"}`, policy.Ask},
		{"currency lowercase", "pay", `{"amount":1,"currency":"xau"}`, policy.Deny},
		{"currency in a list", "pay", `{"amount":1,"currency":["XAU"]}`, policy.Deny},
		{"list one large", "batch", `{"items":[{"amount":1},{"amount":5000}]}`, policy.Ask},
		{"list all small fails closed", "batch", `{"items":[{"amount":1},{"amount":2}]}`, policy.Ask},
		{"note password unicode", "pay", `{"amount":1,"currency":"EUR","memo":"the PASSWORD is x"}`, policy.Deny},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := e.Check(context.Background(), &Call{Server: "bank", Tool: tt.tool, Origin: capability.Interactive, Arguments: []byte(tt.args)})
			if v.Effect != tt.want {
				t.Errorf("%s (%s), want %s", v.Effect, v.Reason(), tt.want)
			}
		})
	}
}
