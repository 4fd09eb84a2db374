package gateway

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/session"
)

// TestProvenanceFlag: an id bound with provenance flag that the server
// never returned is unproven, and only a rule that says unproven: true
// grants it (here: ask); a proven one meets the ordinary rules; a deny
// rule meets both; a blank id is still refused. Bound with provenance
// required, an unproven id is refused whatever the rules.
func TestProvenanceFlag(t *testing.T) {
	p := policyFile(t, "testdata/payees.yaml")
	ptr := func(s string) args.Pointer {
		pp, err := args.ParsePointer(s)
		if err != nil {
			t.Fatal(err)
		}
		return pp
	}
	for _, flag := range []bool{true, false} {
		payee := binding.Arg{Pointer: ptr("/payee"), Kind: capability.ID, IDKind: "bank.payee", FlagUnproven: flag}
		e, err := New(p, []*Server{{
			Name: "bank",
			Bindings: binding.Table{
				"pay":         {Tool: "pay", Tier: capability.TierMutating, Args: []binding.Arg{payee}},
				"list_payees": {Tool: "list_payees", Tier: capability.TierDataRead},
			},
			Tools: map[string]*Tool{"list_payees": {IDs: []IDSource{{Kind: "bank.payee", Pointer: ptr("/structuredContent/payees/*/id")}}}},
		}}, &Options{Sessions: session.New(nil)})
		if err != nil {
			t.Fatal(err)
		}
		e.OpenSession("s", capability.Interactive)
		if _, _, err := e.Result(&ResultEvent{Session: "s", Server: "bank", Tool: "list_payees",
			Result: []byte(`{"content":[],"structuredContent":{"payees":[{"id":"p-rent"},{"id":"p-blocked"}]}}`)}); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name, payee string
			want        policy.Effect
			rule        string
			unproven    bool
		}{
			{"a payee the server listed", "p-rent", policy.Allow, "known-payees", false},
			{"a payee it never listed", "p-attacker", policy.Ask, "new-payees", true},
			{"a listed payee that is blocked", "p-blocked", policy.Deny, "blocked-payee", false},
			{"a blank payee", "  ", policy.Deny, RuleUndecidable, false},
		} {
			name := map[bool]string{true: "flag/", false: "required/"}[flag] + tt.name
			t.Run(name, func(t *testing.T) {
				want, rule := tt.want, tt.rule
				if !flag && tt.unproven {
					want, rule = policy.Deny, RuleProvenance // required: refused, whatever the rules
				}
				v := e.Check(context.Background(), &Call{Session: "s", Server: "bank", Tool: "pay", Origin: capability.Interactive,
					Arguments: []byte(`{"payee":"` + tt.payee + `"}`)})
				if v.Effect != want {
					t.Fatalf("effect %s (%s), want %s", v.Effect, v.Reason(), want)
				}
				if got := strings.Join(v.Rules(), ","); !strings.Contains(got, rule) {
					t.Errorf("rules %s (%s), want %s among them", got, v.Reason(), rule)
				}
				if flag && len(v.Caps) == 1 && v.Caps[0].Unproven != (tt.unproven && strings.TrimSpace(tt.payee) != "") {
					t.Errorf("unproven %v, want %v", v.Caps[0].Unproven, tt.unproven)
				}
			})
		}
	}
}

// TestTrustedSets: a member of a trusted set of the id's kind counts as
// proven, whether the argument requires provenance or flags it; a member
// of a set of another kind does not.
func TestTrustedSets(t *testing.T) {
	p := policyFile(t, "testdata/payees.yaml")
	payees, _ := policy.NewValueSet("bank.payee", []string{"p-landlord", "p-util-*"})
	other, _ := policy.NewValueSet("mail.contact", []string{"p-mallory"})
	pp, _ := args.ParsePointer("/payee")
	for _, flag := range []bool{false, true} {
		e, err := New(p, []*Server{{
			Name: "bank",
			Bindings: binding.Table{"pay": {Tool: "pay", Tier: capability.TierMutating, Args: []binding.Arg{
				{Pointer: pp, Kind: capability.ID, IDKind: "bank.payee", FlagUnproven: flag}}}},
		}}, &Options{Sessions: session.New(nil), Trusted: []*policy.ValueSet{payees, other}})
		if err != nil {
			t.Fatal(err)
		}
		e.OpenSession("s", capability.Interactive)
		for _, tt := range []struct {
			payee string
			want  policy.Effect
		}{
			{"p-landlord", policy.Allow},
			{"p-util-water", policy.Allow},
			{"p-mallory", map[bool]policy.Effect{false: policy.Deny, true: policy.Ask}[flag]},
		} {
			v := e.Check(context.Background(), &Call{Session: "s", Server: "bank", Tool: "pay", Origin: capability.Interactive,
				Arguments: []byte(`{"payee":"` + tt.payee + `"}`)})
			if v.Effect != tt.want {
				t.Errorf("flag %v, payee %s: %s (%s), want %s", flag, tt.payee, v.Effect, v.Reason(), tt.want)
			}
		}
	}
}

// policyFile parses the policy in the test data file name.
func policyFile(t *testing.T, name string) *policy.Set {
	t.Helper()
	src, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(name, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
