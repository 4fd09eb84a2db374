package gateway

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/session"
)

// TestRedteamTextLinks: links a reader's client (or a markdown renderer)
// would follow, and addresses it would read, must not go unnoticed.
func TestRedteamTextLinks(t *testing.T) {
	src, err := os.ReadFile("testdata/links.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse("testdata/links.yaml", src, nil)
	if err != nil {
		t.Fatal(err)
	}
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
