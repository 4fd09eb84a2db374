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

// TestTextLinks: a message body bound as text derives its links and
// addresses (R35), and the policy speaks of them: a link to the
// company's host goes, one elsewhere asks, one to an internal address is
// refused, whatever the spelling; a colleague's address goes (a trusted
// set), a new one asks.
func TestTextLinks(t *testing.T) {
	p := policyFile(t, "testdata/links.yaml")
	body, _ := args.ParsePointer("/body")
	colleagues, _ := policy.NewValueSet(binding.IDKindEmail, []string{"*@corp.example"})
	e, err := New(p, []*Server{{Name: "mail", Bindings: binding.Table{
		"send": {Tool: "send", Tier: capability.TierMutating, Args: []binding.Arg{{Pointer: body, Kind: capability.NetLink}}},
	}}}, &Options{Sessions: session.New(nil), Trusted: []*policy.ValueSet{colleagues}})
	if err != nil {
		t.Fatal(err)
	}
	e.OpenSession("s", capability.Interactive)
	for _, tt := range []struct {
		name, text string
		want       policy.Effect
	}{
		{"plain text", "lunch at noon?", policy.Allow},
		{"our wiki", "see https://wiki.corp.example/page", policy.Allow},
		{"another host", "see https://evil.com/steal?d=1", policy.Ask},
		{"a reserved name", "see https://printer.local/", policy.Deny},
		{"the metadata address in hex", "see http://0xa9fea9fe/latest/meta-data", policy.Deny},
		{"a loopback link among ours", "https://corp.example/ and http://127.1:8080/admin", policy.Deny},
		{"a colleague", "ask alice@corp.example", policy.Allow},
		{"a new recipient", "forward to mallory@evil.example", policy.Ask},
		// What a reader's client (or a markdown renderer) follows, and the
		// addresses it reads, in the forms a second red team tried.
		{"underscore before scheme (GFM emphasis)", "see _https://evil.com/steal?d=1_", policy.Ask},
		{"digit before scheme", "see 1https://evil.com/steal?d=1", policy.Ask},
		{"underscore before www", "see _www.evil.com/steal_", policy.Ask},
		{"markdown link", "see [docs](https://evil.com/steal)", policy.Ask},
		{"markdown link no slashes", "see [docs](http:evil.com/steal)", policy.Deny},
		{"markdown protocol-relative", "see [docs](//evil.com/steal)", policy.Ask},
		{"markdown backslashes", `see [docs](https:\\evil.com/steal)`, policy.Deny},
		{"markdown slash backslash", `see [docs](https:/\evil.com/steal)`, policy.Deny},
		{"html href", `<a href="https://evil.com/steal">x</a>`, policy.Ask},
		{"html protocol-relative", `<a href="//evil.com/steal">x</a>`, policy.Ask},
		{"upper scheme", "see HTTPS://EVIL.COM/x", policy.Ask},
		{"ideographic dot", "see https://evil\u3002com/x", policy.Ask},
		{"fullwidth www", "see www\uff0eevil\uff0ecom/x", policy.Ask},
		// Not seen (docs/design/threat-model.md): a bare domain with no
		// scheme and no www., which some clients link.
		{"long scheme prefix", "see aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaahttps://evil.com/x", policy.Ask},
		{"data url with link", "data:text/html,<a href=https://evil.com>x</a>", policy.Ask},
		{"quoted local part", `mail "mallory"@evil.example`, policy.Ask},
		{"unicode domain address", "mail mallory@évil.example", policy.Ask},
		{"mailto", "mailto:mallory@evil.example", policy.Ask},
		{"address after colleague glob", "mallory@evil.example@corp.example", policy.Ask},
		{"percent hack", "mallory%evil.example@corp.example", policy.Ask},
		{"corp suffix domain", "mallory@corp.example.evil.example", policy.Ask},
		{"userinfo link", "https://corp.example@evil.com/", policy.Ask},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := json.Marshal(map[string]string{"body": tt.text})
			v := e.Check(context.Background(), &Call{Session: "s", Server: "mail", Tool: "send", Origin: capability.Interactive, Arguments: b})
			if v.Effect != tt.want {
				t.Errorf("%s (%s), want %s", v.Effect, v.Reason(), tt.want)
			}
		})
	}
}
