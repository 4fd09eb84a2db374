package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/record"
	"github.com/aegis-mcp/aegis/internal/shape"
)

type memLog struct{ entries []*record.Entry }

func (m *memLog) Append(_ context.Context, e *record.Entry) (uint64, [32]byte, error) {
	m.entries = append(m.entries, e)
	return uint64(len(m.entries)), [32]byte{}, nil
}

// TestRefuseWinsAndIsRecorded: a call refused before the policy (a held
// tool) is denied even when the policy allows it, keeps its derived
// capabilities for the record, and is recorded under aegis's rule, which
// recheck keeps whatever the new policy says.
func TestRefuseWinsAndIsRecorded(t *testing.T) {
	e := newEngine(t, "")
	log := &memLog{}
	rec := &recorder{Engine: e, Log: log}
	for _, tc := range []struct {
		name, args string
		refuse     *Refusal
		want       policy.Effect
		rule       string
	}{
		{"allowed", `{"path":"/home/u/projects/a"}`, nil, policy.Allow, "fs-tools"},
		{"held", `{"path":"/home/u/projects/a"}`, &Refusal{Rule: "aegis:pin", Err: errors.New("held")}, policy.Deny, "aegis:pin"},
		{"held and undecodable: undecidable first", `{`, &Refusal{Rule: "aegis:pin", Err: errors.New("held")}, policy.Deny, RuleUndecidable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _, err := rec.call(context.Background(), &Call{Server: "fs", Tool: "read_file", Arguments: []byte(tc.args), Refuse: tc.refuse}, new(callMem))
			if err != nil {
				t.Fatal(err)
			}
			if v.Effect != tc.want {
				t.Fatalf("effect %s (%s), want %s", v.Effect, v.Reason(), tc.want)
			}
			if v.Effect == policy.Deny && v.Arguments != nil {
				t.Error("a refused call has arguments to forward")
			}
			ent := log.entries[len(log.entries)-1]
			if len(ent.Rules) == 0 || ent.Rules[0] != tc.rule {
				t.Errorf("recorded rules %v, want %s first", ent.Rules, tc.rule)
			}
			if tc.refuse != nil && tc.args != `{` && len(ent.Caps) != 1 {
				t.Errorf("recorded caps %v: a held call keeps its derived capabilities", ent.Caps)
			}
			if _, ok := e.Recheck(ent); ok == (tc.refuse != nil) {
				t.Errorf("recheck ok = %v for a call refused by aegis = %v", ok, tc.refuse != nil)
			}
		})
	}
}

// TestArgsHashOfShapedCalls: the chain's args_hash is of the arguments as
// forwarded when the call goes through, and of the model's arguments when
// it is refused, shaped or not.
func TestArgsHashOfShapedCalls(t *testing.T) {
	e := newEngine(t, "")
	e.servers["fs"].Tools = map[string]*Tool{
		"read_file": {Fields: shape.Fields{Clear: []args.Pointer{mustPointer(t, "/note")}}},
	}
	for _, tc := range []struct {
		name, model, forwarded string
		allowed                bool
	}{
		{"shaped and allowed", `{"path":"/home/u/projects/a","note":"x"}`, `{"path":"/home/u/projects/a"}`, true},
		{"shaped and refused", `{"path":"/home/u/.ssh/id_rsa","note":"x"}`, ``, false},
		{"not shaped, refused before the policy", `{"path":"a"}`, ``, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, h := e.check(context.Background(), &Call{Server: "fs", Tool: "read_file", Arguments: []byte(tc.model)}, true, new(callMem))
			if (v.Effect == policy.Allow) != tc.allowed {
				t.Fatalf("effect %s (%s)", v.Effect, v.Reason())
			}
			want := tc.model
			if tc.allowed {
				want = tc.forwarded
				if string(v.Arguments) != tc.forwarded {
					t.Errorf("forwarded %s, want %s", v.Arguments, tc.forwarded)
				}
			}
			var d args.Doc
			d.Decode([]byte(want), nil)
			if h != hashArgs(&d, []byte(want)) {
				t.Errorf("args hash is not that of %s", want)
			}
		})
	}
}

func mustPointer(t testing.TB, s string) args.Pointer {
	t.Helper()
	p, err := args.ParsePointer(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestShapeAdversarial: the inputs a model could try against identity,
// pinned and cleared fields.
func TestShapeAdversarial(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\nrules:\n  - {id: all, effect: allow, server: m, unbound: true}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(p, []*Server{{Name: "m", Tools: map[string]*Tool{"send": {Fields: shape.Fields{
		Identity: []shape.IdentityField{{Pointer: mustPointer(t, "/from"), Source: "principal.account"}, {Pointer: mustPointer(t, "/meta/owner"), Source: "principal"}},
		Set:      []shape.Assign{{Pointer: mustPointer(t, "/footer"), Value: []byte(`{"text":"via aegis"}`)}},
		Clear:    []args.Pointer{mustPointer(t, "/bcc"), mustPointer(t, "/to/*/bcc")},
	}}}}}, &Options{Principals: map[string]map[string]string{"alice": {"account": "alice@corp.example"}, "bob": {}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, principal, args string
		want                  string // forwarded arguments, or the refusing rule
	}{
		{"injected and cleared", "alice", `{"to":[{"a":"x","bcc":"eve"}],"bcc":"eve"}`, `{"to":[{"a":"x"}],"footer":{"text":"via aegis"},"from":"alice@corp.example","meta":{"owner":"alice"}}`},
		{"model sets from", "alice", `{"from":"ceo@corp.example"}`, RuleIdentity},
		{"model sets From", "alice", `{"From":"ceo@corp.example"}`, RuleIdentity},
		{"model sets FROM", "alice", `{"FROM":"x"}`, RuleIdentity},
		{"Bcc in a list element", "alice", `{"to":[{"BCC":"eve"}]}`, RuleShape},
		{"model sets the nested owner", "alice", `{"meta":{"owner":"root"}}`, RuleIdentity},
		{"model sets the owner null", "alice", `{"meta":{"owner":null}}`, RuleIdentity},
		{"owner through an escaped key", "alice", `{"meta":{"\u006fwner":"root"}}`, RuleIdentity},
		{"meta not an object", "alice", `{"meta":"x"}`, RuleIdentity},
		{"Bcc survives a clear of bcc", "alice", `{"Bcc":"eve"}`, RuleShape},
		{"Footer beside the pinned footer", "alice", `{"Footer":"x"}`, RuleShape},
		{"model's footer replaced", "alice", `{"footer":"click evil.example"}`, `{"footer":{"text":"via aegis"},"from":"alice@corp.example","meta":{"owner":"alice"}}`},
		{"principal without the attribute", "bob", `{}`, RuleIdentity},
		{"no principal", "", `{}`, RuleIdentity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := e.Check(context.Background(), &Call{Server: "m", Tool: "send", Principal: tc.principal, Arguments: []byte(tc.args)})
			wantShaped(t, &v, tc.want)
		})
	}
	// The shared pinned value is never changed by a call's edits: after
	// every case above, a call still gets it as configured.
	v := e.Check(context.Background(), &Call{Server: "m", Tool: "send", Principal: "alice", Arguments: []byte(`{"footer":{"text":"x","more":1}}`)})
	if want := `{"footer":{"text":"via aegis"},"from":"alice@corp.example","meta":{"owner":"alice"}}`; string(v.Arguments) != want {
		t.Errorf("after the edits, a call forwards %s, want %s", v.Arguments, want)
	}
}

// TestRelativeURLCaseVariant: "Path" where relative_url names /path is
// refused, not left unchecked for a case-insensitive server to read.
func TestRelativeURLCaseVariant(t *testing.T) {
	e := relativeURLEngine(t)
	for _, tc := range []struct {
		args string
		want policy.Effect
	}{
		{`{"path":"a/b"}`, policy.Allow},
		{`{"path":"https://evil.example/"}`, policy.Deny},
		{`{"Path":"https://evil.example/"}`, policy.Deny},
		{`{"PATH":"a/b"}`, policy.Deny},
	} {
		v := e.Check(context.Background(), &Call{Server: "m", Tool: "get", Arguments: []byte(tc.args)})
		if v.Effect != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.args, v.Effect, v.Reason(), tc.want)
		}
	}
}

// TestIdentityBeforeSchema: a server whose input schema requires the
// identity field aegis injects (R12) gets correct calls — the field is in
// place before the closed schema is checked (R11) — while a model that
// writes the field, or an argument the schema does not list, is still
// refused.
func TestIdentityBeforeSchema(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\nrules:\n  - {id: all, effect: allow, server: m, unbound: true}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	flat := &Tool{Fields: shape.Fields{
		Identity: []shape.IdentityField{{Pointer: mustPointer(t, "/from"), Source: "principal.account"}},
		Set:      []shape.Assign{{Pointer: mustPointer(t, "/footer"), Value: []byte(`"via aegis"`)}},
	}}
	nested := &Tool{Fields: shape.Fields{Identity: []shape.IdentityField{{Pointer: mustPointer(t, "/meta/owner"), Source: "principal"}}}}
	e, err := New(p, []*Server{{Name: "m", Tools: map[string]*Tool{"send": flat, "post": nested}}},
		&Options{Principals: map[string]map[string]string{"alice": {"account": "alice@corp.example"}}})
	if err != nil {
		t.Fatal(err)
	}
	const sendSchema = `{"type":"object","properties":{"to":{"type":"string"},"from":{"type":"string"},"footer":{"type":"string"}},"required":["to","from","footer"]}`
	const postSchema = `{"type":"object","properties":{"text":{"type":"string"},"meta":{"type":"object","properties":{"owner":{"type":"string"}},"required":["owner"]}},"required":["text","meta"]}`
	for _, tc := range []struct {
		name, tool, schema, args string
		want                     string // forwarded arguments, or the refusing rule
	}{
		{"flat, required from injected", "send", sendSchema, `{"to":"bob"}`, `{"to":"bob","footer":"via aegis","from":"alice@corp.example"}`},
		{"flat, model writes from", "send", sendSchema, `{"to":"bob","from":"ceo@corp.example"}`, RuleIdentity},
		{"flat, an unlisted argument", "send", sendSchema, `{"to":"bob","bcc":"eve"}`, RuleSchema},
		{"flat, a required argument missing", "send", sendSchema, `{}`, RuleSchema},
		{"nested, required owner injected", "post", postSchema, `{"text":"hi","meta":{}}`, `{"text":"hi","meta":{"owner":"alice"}}`},
		{"nested, model writes owner", "post", postSchema, `{"text":"hi","meta":{"owner":"root"}}`, RuleIdentity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := e.Check(context.Background(), &Call{Server: "m", Tool: tc.tool, Principal: "alice", Arguments: []byte(tc.args),
				Schema: []byte(tc.schema), SchemaKey: sha256.Sum256([]byte(tc.schema))})
			wantShaped(t, &v, tc.want)
		})
	}
}

// wantShaped checks a verdict against want: the aegis rule that must have
// refused the call, or the arguments it must forward.
func wantShaped(t *testing.T, v *Verdict, want string) {
	t.Helper()
	if strings.HasPrefix(want, "aegis:") {
		if v.Effect != policy.Deny || RuleOf(v) != want {
			t.Fatalf("effect %s rule %q (%s), want a denial by %s", v.Effect, RuleOf(v), v.Reason(), want)
		}
		return
	}
	if v.Effect != policy.Allow || string(v.Arguments) != want {
		t.Errorf("effect %s (%s), forwarded %s, want %s", v.Effect, v.Reason(), v.Arguments, want)
	}
}

// relativeURLEngine is an engine whose server m has a tool get whose /path
// is confined to paths on https://93.184.215.14/v1/ (R14), and a policy
// allowing it and public hosts.
func relativeURLEngine(t *testing.T) *Engine {
	t.Helper()
	p, err := policy.Parse("p.yaml", []byte("version: 1\nrules:\n  - {id: all, effect: allow, server: m}\n  - {id: web, effect: allow, capability: net.connect, host: \"class:public\"}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	base, err := capability.ParseBaseURL("https://93.184.215.14/v1/")
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(p, []*Server{{Name: "m", Bindings: binding.Table{"get": {Tool: "get"}}, Tools: map[string]*Tool{"get": {Fields: shape.Fields{
		RelativeURL: []shape.RelativeURL{{Pointer: mustPointer(t, "/path"), Base: base}},
	}}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
