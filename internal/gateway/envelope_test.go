package gateway

import (
	"context"
	"errors"
	"testing"

	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/envelope"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/record"
)

// TestEnvelopeForwarded: an envelope says forwarded only for a call that
// is let through (allowed, or anything in a shadow policy); a denied call,
// one refused before the policy, and an ask (held for a person, forwarded
// only if one approves) were not forwarded when they were recorded.
func TestEnvelopeForwarded(t *testing.T) {
	const (
		projects = `{"path":"/home/u/projects/a"}`
		ssh      = `{"path":"/home/u/.ssh/id_rsa"}`
		secret   = `{"path":"/home/u/projects/AKIAQ3EGTV7KPZ4HXW2M"}`
	)
	held := &Refusal{Rule: "aegis:pin", Err: errors.New("held")}
	for _, tc := range []struct {
		name      string
		mode      string
		c         Call
		effect    policy.Effect
		forwarded bool
		args      string // the arguments the envelope keeps
	}{
		{"allowed, not reshaped", "", Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(projects)}, policy.Allow, true, projects},
		{"denied by the policy", "", Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(ssh)}, policy.Deny, false, ssh},
		{"refused before the policy", "", Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(projects), Refuse: held}, policy.Deny, false, projects},
		{"undecodable", "", Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(`{`)}, policy.Deny, false, `"{"`},
		{"unknown server", "", Call{Server: "nope", Tool: "t", Arguments: []byte(`{}`)}, policy.Deny, false, `{}`},
		{"an ask is not forwarded yet", "", Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(secret)}, policy.Ask, false, secret},
		{"shadow lets a denied call through", "shadow", Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(ssh)}, policy.Allow, true, ssh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, tc.mode)
			e.servers["fs"].DLP = &DLP{Arguments: dlp.Actions{Default: dlp.ActionAsk}}
			dir := t.TempDir()
			envs, err := envelope.Open(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer envs.Close()
			log := &memLog{}
			rec := &recorder{Engine: e, Log: log, Envelopes: envs}
			v, _, err := rec.call(context.Background(), &tc.c, new(callMem))
			if err != nil {
				t.Fatal(err)
			}
			if v.Effect != tc.effect {
				t.Fatalf("effect %s (%s), want %s", v.Effect, v.Reason(), tc.effect)
			}
			ent := log.entries[len(log.entries)-1]
			r, err := envelope.Find(dir, envelope.Digest(ent.Envelope))
			if err != nil {
				t.Fatal(err)
			}
			if r.Forwarded != tc.forwarded {
				t.Errorf("envelope of a call that got %s says forwarded %v, want %v", v.Effect, r.Forwarded, tc.forwarded)
			}
			if string(r.Arguments) != tc.args {
				t.Errorf("envelope keeps %s, want %s", r.Arguments, tc.args)
			}
		})
	}
}

// failLog refuses every append, as a full disk or a call cancelled while
// it is recorded does, after noting the entry it was given.
type failLog struct{ tried *record.Entry }

func (f *failLog) Append(_ context.Context, e *record.Entry) (uint64, [32]byte, error) {
	f.tried = e
	return 0, [32]byte{}, context.Canceled
}

// TestNoEnvelopeWithoutEntry: when the decision cannot be recorded the call
// is refused, and no envelope is written, so none says forwarded of a call
// that was not (the envelope used to be written before the entry).
func TestNoEnvelopeWithoutEntry(t *testing.T) {
	e := newEngine(t, "")
	dir := t.TempDir()
	envs, err := envelope.Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer envs.Close()
	log := &failLog{}
	rec := &recorder{Engine: e, Log: log, Envelopes: envs}
	c := Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(`{"path":"/home/u/projects/a"}`)}
	v, _, err := rec.call(context.Background(), &c, new(callMem))
	if err == nil || v.Effect != policy.Deny {
		t.Fatalf("Call = %s, %v; want a refusal saying the decision was not recorded", v.Effect, err)
	}
	if log.tried == nil || log.tried.Envelope == (record.Digest{}) {
		t.Fatal("the entry tried names no envelope")
	}
	if r, err := envelope.Find(dir, envelope.Digest(log.tried.Envelope)); err == nil {
		t.Fatalf("an envelope was written for a call whose decision was not recorded: %+v", r)
	}
	// The store still works for the next call.
	if _, _, err := (&recorder{Engine: e, Log: &memLog{}, Envelopes: envs}).call(context.Background(), &c, new(callMem)); err != nil {
		t.Fatal(err)
	}
}
