package gateway

import (
	"context"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// TestValueBindings: a binding names arguments as typed values (R35),
// and the policy's conditions read them by those names whatever each
// tool calls its argument: two tools with differently named arguments
// meet the same rules. A value that is absent, or not a number where the
// rule compares one, fails the condition closed (an ask or deny rule
// meets it, an allow rule does not).
func TestValueBindings(t *testing.T) {
	p := policyFile(t, "testdata/values.yaml")
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
		"transfer": {Tool: "transfer", Tier: capability.TierMutating, Values: []binding.ValueArg{
			{Pointer: ptr("/sum/value"), Name: "amount"}, {Pointer: ptr("/sum/ccy"), Name: "currency"}}},
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
		{"a small payment", "pay", `{"amount":20,"currency":"EUR"}`, policy.Allow},
		{"a large payment", "pay", `{"amount":5000,"currency":"EUR"}`, policy.Ask},
		{"a large payment as a decimal", "pay", `{"amount":1000.01,"currency":"EUR"}`, policy.Ask},
		{"a large payment in an exponent", "pay", `{"amount":2e3,"currency":"EUR"}`, policy.Ask},
		{"exactly the limit", "pay", `{"amount":1000,"currency":"USD"}`, policy.Allow},
		{"a large transfer, named otherwise", "transfer", `{"sum":{"value":5000,"ccy":"EUR"}}`, policy.Ask},
		{"a currency it does not hold", "transfer", `{"sum":{"value":5,"ccy":"XAU"}}`, policy.Deny},
		{"an amount as a string", "pay", `{"amount":"5000","currency":"EUR"}`, policy.Ask},
		{"a note with a password", "pay", `{"amount":1,"currency":"EUR","memo":"the PASSWORD is hunter2"}`, policy.Deny},
		{"no amount at all", "pay", `{"currency":"EUR"}`, policy.Allow},
		// Amounts a server reads as large, in the forms a second red team
		// tried: each fails the limit closed.
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
