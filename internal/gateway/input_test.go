package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/envelope"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/session"
)

// inputSession is a session over input-policy.yaml (deploy allowed, wipe
// denied), whose tools are capped at one call a session, with DLP's
// argument actions args and envelopes in dir.
func inputSession(t *testing.T, args dlp.Actions, dir string) (*Session, *memLog) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "input-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse("input-policy.yaml", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	one := session.Limits{PerSession: 1}
	e, err := New(p, []*Server{{
		Name:  "s",
		Tools: map[string]*Tool{"deploy": {Caps: one}, "wipe": {Caps: one}},
		DLP:   &DLP{Arguments: args, Results: dlp.Actions{Default: dlp.ActionRedact}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	envs, err := envelope.Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { envs.Close() })
	log := &memLog{}
	s, err := e.NewSession(&SessionConfig{Server: "s", ID: "sess", Principal: "p", Origin: capability.Interactive, Log: log, Envelopes: envs})
	if err != nil {
		t.Fatal(err)
	}
	return s, log
}

// fakeKey is an AWS access key id DLP finds, made up here.
const fakeKey = "AKIAQ3EGTV7KPZ4HXW2M"

// TestCallInput: a retry of a multi-round-trip call is one logical call
// with the call it continues, so the caps count it once; but every retry
// is decided on its arguments, a retry that continues nothing is counted,
// and the answers it brings are scanned by DLP as arguments are and kept
// in the envelope, redacted.
func TestCallInput(t *testing.T) {
	type step struct {
		tool string
		in   *Input
		// want is the effect; reason a substring of the reason.
		want   policy.Effect
		reason string
		// fwd is the answers forwarded when DLP changed them.
		fwd string
		// kept is what the envelope keeps of the answers; "" for none.
		kept string
	}
	answers := func(s string) []byte {
		return []byte(`{"confirm":{"action":"accept","content":{"reason":"` + s + `"}}}`)
	}
	for _, tc := range []struct {
		name  string
		args  dlp.Actions
		steps []step
	}{
		{
			name: "a retry continues its call, counted once",
			steps: []step{
				{tool: "deploy", want: policy.Allow},
				{tool: "deploy", in: &Input{Responses: answers("ok"), Continues: true}, want: policy.Allow, kept: string(answers("ok"))},
				{tool: "deploy", want: policy.Deny, reason: "per_session cap"},
			},
		},
		{
			name: "a retry that continues nothing is counted",
			steps: []step{
				{tool: "deploy", want: policy.Allow},
				{tool: "deploy", in: &Input{Responses: answers("ok")}, want: policy.Deny, reason: "per_session cap", kept: string(answers("ok"))},
			},
		},
		{
			name: "a retry is decided on its arguments",
			steps: []step{
				{tool: "wipe", in: &Input{Responses: answers("ok"), Continues: true}, want: policy.Deny, reason: "no-wipe", kept: string(answers("ok"))},
			},
		},
		{
			name: "a secret in the answers refuses the call",
			args: dlp.Actions{Default: dlp.ActionDeny},
			steps: []step{
				{tool: "deploy", in: &Input{Responses: answers(fakeKey), Continues: true}, want: policy.Deny, reason: `inputResponses) hold a secret: aws.access_key in the value at "inputResponses/confirm/content/reason"`, kept: string(answers("[REDACTED:aws.access_key]"))},
			},
		},
		{
			name: "a secret in the answers redacted",
			args: dlp.Actions{Default: dlp.ActionRedact},
			steps: []step{
				{tool: "deploy", in: &Input{Responses: answers(fakeKey), Continues: true}, want: policy.Allow, fwd: string(answers("[REDACTED:aws.access_key]")), kept: string(answers("[REDACTED:aws.access_key]"))},
			},
		},
		{
			name: "a secret in the answers asks",
			args: dlp.Actions{Default: dlp.ActionAsk},
			steps: []step{
				{tool: "deploy", in: &Input{Responses: answers(fakeKey)}, want: policy.Ask, reason: "inputResponses/confirm", kept: string(answers("[REDACTED:aws.access_key]"))},
			},
		},
		{
			name: "answers that are not strict JSON",
			steps: []step{
				{tool: "deploy", in: &Input{Responses: []byte(`{"a":1,"a":2}`)}, want: policy.Deny, reason: "inputResponses", kept: `"(arguments aegis could not read are not kept)"`},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, log := inputSession(t, tc.args, dir)
			for i, st := range tc.steps {
				o, err := s.CallInput(context.Background(), st.tool, []byte(`{"env":"prod"}`), st.in)
				if err != nil {
					t.Fatal(err)
				}
				if o.Effect != st.want || !strings.Contains(o.Reason, st.reason) {
					t.Fatalf("step %d: %s %q, want %s with %q", i, o.Effect, o.Reason, st.want, st.reason)
				}
				if string(o.InputResponses) != st.fwd {
					t.Errorf("step %d: forwards answers %s, want %s", i, o.InputResponses, st.fwd)
				}
				ent := log.entries[len(log.entries)-1]
				r, err := envelope.Find(dir, envelope.Digest(ent.Envelope))
				if err != nil {
					t.Fatal(err)
				}
				if string(r.InputResponses) != st.kept {
					t.Errorf("step %d: envelope keeps answers %s, want %s", i, r.InputResponses, st.kept)
				}
				if strings.Contains(string(r.InputResponses), fakeKey) {
					t.Errorf("step %d: the envelope keeps the secret", i)
				}
			}
			if len(log.entries) != len(tc.steps) {
				t.Errorf("%d entries for %d calls: every call is recorded", len(log.entries), len(tc.steps))
			}
		})
	}
}

// TestAnswer: the client's answer to the server's elicitation is input to
// the server: DLP scans it with the argument actions (a secret denies,
// asks, which no one can answer here, so it denies, or is redacted), and
// each answer is recorded, with an envelope that keeps it redacted.
// Answers to other methods pass unchecked and unrecorded.
func TestAnswer(t *testing.T) {
	answer := func(s string) []byte { return []byte(`{"action":"accept","content":{"reason":"` + s + `"}}`) }
	for _, tc := range []struct {
		name     string
		args     dlp.Actions
		method   string
		answer   []byte
		wantErr  string // substring; "" for none
		wantOut  string // the replacement; "" for the answer as it came
		decision string // the entry's; "" for no entry
		kept     string
	}{
		{"nothing found", dlp.Actions{}, "elicitation/create", answer("ship it"), "", "", "allow", string(answer("ship it"))},
		{"a secret denied", dlp.Actions{Default: dlp.ActionDeny}, "elicitation/create", answer(fakeKey), "inputResponses/content/reason", "", "deny", string(answer("[REDACTED:aws.access_key]"))},
		{"a secret asks", dlp.Actions{Default: dlp.ActionAsk}, "elicitation/create", answer(fakeKey), "no person can be asked", "", "deny", string(answer("[REDACTED:aws.access_key]"))},
		{"a secret redacted", dlp.Actions{Default: dlp.ActionRedact}, "elicitation/create", answer(fakeKey), "", string(answer("[REDACTED:aws.access_key]")), "allow", string(answer("[REDACTED:aws.access_key]"))},
		{"another method", dlp.Actions{Default: dlp.ActionDeny}, "sampling/createMessage", answer(fakeKey), "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, log := inputSession(t, tc.args, dir)
			out, err := s.Answer(context.Background(), tc.method, tc.answer)
			if (err != nil) != (tc.wantErr != "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Answer: %v, want an error with %q", err, tc.wantErr)
			}
			if string(out) != tc.wantOut {
				t.Errorf("Answer passes on %s, want %s", out, tc.wantOut)
			}
			if tc.decision == "" {
				if len(log.entries) != 0 {
					t.Fatalf("%d entries, want none", len(log.entries))
				}
				return
			}
			if len(log.entries) != 1 {
				t.Fatalf("%d entries, want 1", len(log.entries))
			}
			ent := log.entries[0]
			if ent.Decision != tc.decision || ent.Method != tc.method || ent.Rules[0] != RuleAnswer {
				t.Errorf("entry %s %s %v, want %s %s %s", ent.Decision, ent.Method, ent.Rules, tc.decision, tc.method, RuleAnswer)
			}
			r, err := envelope.Find(dir, envelope.Digest(ent.Envelope))
			if err != nil {
				t.Fatal(err)
			}
			if string(r.InputResponses) != tc.kept {
				t.Errorf("envelope keeps %s, want %s", r.InputResponses, tc.kept)
			}
		})
	}
}

// TestRunUnbound: a call of a tool set to run unbound is forwarded to the
// twin only when the policy lets it through; a refused one is refused,
// and a tool not so set runs in the server.
func TestRunUnbound(t *testing.T) {
	s, _ := inputSession(t, dlp.Actions{}, t.TempDir())
	s.srv.Tools["deploy"].RunUnbound = true
	s.srv.Tools["wipe"].RunUnbound = true
	for _, tt := range []struct {
		tool                string
		forward, runUnbound bool
	}{
		{"deploy", true, true},
		{"wipe", false, false},   // denied: nothing to run anywhere
		{"deploy", false, false}, // over its cap
	} {
		o, err := s.Call(context.Background(), tt.tool, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if o.Forward != tt.forward || o.RunUnbound != tt.runUnbound {
			t.Errorf("%s: forward %v run unbound %v, want %v %v", tt.tool, o.Forward, o.RunUnbound, tt.forward, tt.runUnbound)
		}
	}
	s.srv.Tools["deploy"].RunUnbound = false
	s2, _ := inputSession(t, dlp.Actions{}, t.TempDir())
	if o, err := s2.Call(context.Background(), "deploy", []byte(`{}`)); err != nil || !o.Forward || o.RunUnbound {
		t.Errorf("deploy, not set to run unbound: %+v %v, want forwarded to the server", o, err)
	}
}
