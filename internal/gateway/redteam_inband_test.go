package gateway

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/approval"
	"github.com/aegis-mcp/aegis/internal/dlp"
)

// TestContinuationAsksOfItsAnswers: a continuation of an approved call is
// not asked again about what the person saw, its arguments; but the
// answers it brings for the server are new, and may be the model's (a
// sampling result): a secret in them that asks is put to a person, not
// waved through on the approval of the call.
func TestContinuationAsksOfItsAnswers(t *testing.T) {
	const shared = `{"path":"/home/a/projects/shared/x","content":"hi"}`
	const secretArgs = `{"path":"/home/a/projects/shared/x","content":"` + fakeKey + `"}`
	answers := func(s string) []byte {
		return []byte(`{"k":{"action":"accept","content":{"reason":"` + s + `"}}}`)
	}
	for _, tt := range []struct {
		name      string
		args      string // of the approved call and of its continuation
		responses []byte // the continuation's answers
		forward   bool   // the continuation goes on without a person
	}{
		{"plain answers", shared, answers("ok"), true},
		{"a secret in the arguments the person saw", secretArgs, answers("ok"), true},
		{"a secret in the answers", shared, answers(fakeKey), false},
		{"a secret in the answers and the arguments", secretArgs, answers(fakeKey), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _, asked := approvalSession(t, filepath.Join(t.TempDir(), "approvals.db"), time.Minute)
			s.srv.DLP = &DLP{Arguments: dlp.Actions{Default: dlp.ActionAsk}}
			ctx := context.Background()
			answer := func(approve bool) <-chan bool {
				put := make(chan bool, 1)
				go func() {
					select {
					case r := <-asked:
						s.cfg.Approvals.Store.Answer(ctx, r.ID, approval.Answer{Approve: approve, Scope: approval.ScopeCall, By: "bob", Channel: approval.ChannelCLI})
						put <- true
					case <-time.After(5 * time.Second):
						put <- false
					}
				}()
				return put
			}
			put := answer(true)
			o, err := s.CallInput(ctx, "write_file", []byte(tt.args), nil)
			if err != nil || !o.Forward || !<-put {
				t.Fatalf("the call: %+v %v, want asked and approved", o, err)
			}
			if !tt.forward {
				put = answer(false)
			}
			c, err := s.CallInput(ctx, "write_file", []byte(tt.args), &Input{Continues: true, Responses: tt.responses})
			if err != nil {
				t.Fatal(err)
			}
			if c.Forward != tt.forward {
				t.Errorf("the continuation: forward %v (%q), want %v", c.Forward, c.Reason, tt.forward)
			}
			if tt.forward {
				return
			}
			if !<-put {
				t.Errorf("the continuation was not put to a person")
			}
		})
	}
}

// TestGrantAsksOfSecrets: a grant for the rest of the session answers an
// ask about the call's capabilities, never one about a secret in what the
// call sends, also when the policy asked of the call as well (so that DLP
// did not make the ask itself).
func TestGrantAsksOfSecrets(t *testing.T) {
	const shared = `{"path":"/home/a/projects/shared/x","content":"hi"}`
	for _, tt := range []struct {
		name      string
		args      string
		responses []byte
		forward   bool // the grant answers it
	}{
		{"the same capabilities", `{"path":"/home/a/projects/shared/x","content":"other"}`, nil, true},
		{"a secret in the arguments", `{"path":"/home/a/projects/shared/x","content":"` + fakeKey + `"}`, nil, false},
		{"a secret in the answers", shared, []byte(`{"k":{"action":"accept","content":{"r":"` + fakeKey + `"}}}`), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _, asked := approvalSession(t, filepath.Join(t.TempDir(), "approvals.db"), time.Minute)
			s.srv.DLP = &DLP{Arguments: dlp.Actions{Default: dlp.ActionAsk}}
			ctx := context.Background()
			go func() {
				r := <-asked
				s.cfg.Approvals.Store.Answer(ctx, r.ID, approval.Answer{Approve: true, Scope: approval.ScopeSession, By: "bob", Channel: approval.ChannelCLI})
			}()
			if o, err := s.CallInput(ctx, "write_file", []byte(shared), nil); err != nil || !o.Forward {
				t.Fatalf("the call: %+v %v, want approved for the session", o, err)
			}
			done := make(chan struct{})
			defer close(done)
			go func() {
				select {
				case r := <-asked:
					s.cfg.Approvals.Store.Answer(ctx, r.ID, approval.Answer{By: "bob", Channel: approval.ChannelCLI})
				case <-done:
				}
			}()
			var in *Input
			if tt.responses != nil {
				in = &Input{Responses: tt.responses}
			}
			c, err := s.CallInput(ctx, "write_file", []byte(tt.args), in)
			if err != nil {
				t.Fatal(err)
			}
			if c.Forward != tt.forward {
				t.Errorf("forward %v (%q), want %v", c.Forward, c.Reason, tt.forward)
			}
		})
	}
}
