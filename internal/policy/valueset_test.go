package policy

import (
	"regexp"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// TestValueSet: exact members and `*` patterns, trimmed as ids are; what
// cannot be a value, or would trust every value, is refused.
func TestValueSet(t *testing.T) {
	vs, err := NewValueSet("mail.contact", []string{"bob@example.com", " *@example.org ", "ops-*-alerts", "a*b*c"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		v    string
		want bool
	}{
		{"bob@example.com", true},
		{"  bob@example.com\t", true},
		{"Bob@example.com", false}, // exact: no case folding
		{"alice@example.org", true},
		{"@example.org", true},
		{"alice@example.org.evil.com", false},
		{"alice@evil.com?@example.org", false}, // * matches no separator
		{"alice@evil.com, bob@example.org", false},
		{"ops-a b-alerts", false},
		{"ops-db-alerts", true},
		{"ops--alerts", true},
		{"ops-alerts", false},
		{"abc", true},
		{"axbxc", true},
		{"ac", false},
		{"", false},
		{"  ", false},
	} {
		if got := vs.Has(tt.v); got != tt.want {
			t.Errorf("Has(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
	for _, bad := range [][]string{{""}, {"  "}, {"*"}, {"**"}, {"a\xffb"}} {
		if _, err := NewValueSet("k", bad); err == nil {
			t.Errorf("NewValueSet(%q) = nil error", bad)
		}
	}
}

// TestIDIn: a rule with id_in meets an id that is a member of a named set
// of its kind; naming a set the configuration lacks is an error at its
// position; the set's contents are part of the policy's hash.
func TestIDIn(t *testing.T) {
	mk := func(values ...string) map[string]*ValueSet {
		vs, err := NewValueSet("bank.payee", values)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]*ValueSet{"payees": vs}
	}
	src := []byte("version: 1\nrules:\n  - {id: t, effect: allow, tool: pay}\n  - {id: verified, effect: allow, capability: id, id_kind: bank.payee, id_in: [payees]}\n")
	p, err := Parse("p.yaml", src, &Options{Sets: mk("p-rent", "p-util-*")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		id   string
		want Effect
	}{{"p-rent", Allow}, {"p-util-gas", Allow}, {"p-attacker", Deny}} {
		d := p.Decide(&Request{Tool: "pay", Bound: true, Caps: capsOf(t, "bank.payee", tt.id)})
		if d.Effect() != tt.want {
			t.Errorf("payee %s: %s, want %s", tt.id, d.Effect(), tt.want)
		}
	}
	p2, err := Parse("p.yaml", src, &Options{Sets: mk("p-rent", "p-util-*", "p-attacker")})
	if err != nil {
		t.Fatal(err)
	}
	if p.Hash() == p2.Hash() {
		t.Error("a value added to a named set leaves the policy's hash as it was")
	}
	plain := []byte("version: 1\nrules:\n  - {id: t, effect: allow, tool: pay}\n")
	a, _ := Parse("p.yaml", plain, nil)
	b, _ := Parse("p.yaml", plain, &Options{Sets: mk("x")})
	if a.Hash() != b.Hash() {
		t.Error("a set no rule names changed the policy's hash")
	}
	_, err = Parse("p.yaml", []byte("version: 1\nrules:\n  - {id: v, effect: allow, id_in: [payess]}\n"), &Options{Sets: mk("p")})
	if err == nil || !strings.Contains(err.Error(), `p.yaml:3:`) || !strings.Contains(err.Error(), `id_in "payess"`) {
		t.Errorf("an unknown set: %v", err)
	}
	_, err = Parse("p.yaml", []byte("version: 1\nrules:\n  - {id: v, effect: allow, capability: fs.read, id_in: [payees]}\n"), &Options{Sets: mk("p")})
	if err == nil || !strings.Contains(err.Error(), "id_in does not apply to fs.read") {
		t.Errorf("id_in on fs.read: %v", err)
	}
}

// FuzzValueSetGlob checks the `*` patterns against a regular expression
// written the obvious way.
func FuzzValueSetGlob(f *testing.F) {
	for _, s := range [][2]string{{"*@example.org", "a@example.org"}, {"a*b*c", "abc"}, {"x*x", "x"}, {"*x*x*", "xx"}, {"a*", "a"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, g, v string) {
		vs, err := NewValueSet("k", []string{g})
		if err != nil || !strings.Contains(g, "*") {
			return
		}
		g = strings.TrimSpace(g)
		parts := strings.Split(g, "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		re := regexp.MustCompile("^(?s:" + strings.Join(parts, `[^\s\pC\pZ,;:@%!<>()\[\]"'\\]*`) + ")$")
		tv := strings.TrimSpace(v)
		want := tv != "" && re.MatchString(tv)
		if got := vs.Has(v); got != want {
			t.Errorf("pattern %q, value %q: Has = %v, the regexp says %v", g, v, got, want)
		}
	})
}

func capsOf(t *testing.T, kind, id string) []capability.Capability {
	t.Helper()
	return []capability.Capability{{Kind: capability.ID, IDKind: kind, ID: id}}
}
