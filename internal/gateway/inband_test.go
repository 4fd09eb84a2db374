package gateway

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/approval"
	"github.com/aegis-mcp/aegis/internal/capability"
)

// TestInBandQuestions: a call from a client that answers in the call's
// round trips is not held: it is answered with a question whose state
// only this session issued, and the retry that brings the person's answer
// back runs, or not, on that answer; a state that is forged, replayed,
// another session's, or brought back with other arguments answers
// nothing and asks anew.
func TestInBandQuestions(t *testing.T) {
	const shared = `{"path":"/home/a/projects/shared/x","content":"hi"}`
	const other = `{"path":"/home/a/projects/shared/y","content":"hi"}`
	approve := func(st string) *Answer {
		return &Answer{State: st, Answered: true, Approve: true, Scope: approval.ScopeCall}
	}
	for _, tt := range []struct {
		name string
		// retry is the retry's arguments and answer, given the state of
		// the question the first call got (and, for "another session",
		// the state another session issued).
		retry   func(state, foreign string) (string, *Answer)
		cli     *approval.Answer // answered through the CLI before the retry
		forward bool
		asked   bool   // the retry gets a new question
		entry   string // in the retry's approval entry, when it has one
	}{
		{"approved", func(st, _ string) (string, *Answer) { return shared, approve(st) }, nil, true, false, "approved by alice through elicitation, for this call"},
		{"approved for the session", func(st, _ string) (string, *Answer) {
			return shared, &Answer{State: st, Answered: true, Approve: true, Scope: approval.ScopeSession}
		}, nil, true, false, "for the rest of the session"},
		{"declined", func(st, _ string) (string, *Answer) { return shared, &Answer{State: st, Answered: true} }, nil, false, false, "denied by alice through elicitation"},
		{"other arguments", func(st, _ string) (string, *Answer) { return other, approve(st) }, nil, false, true, ""},
		{"forged mac", func(st, _ string) (string, *Answer) { return shared, approve(st[:len(st)-2] + "AA") }, nil, false, true, ""},
		{"made-up id", func(st, _ string) (string, *Answer) {
			return shared, approve(StatePrefix + "0123456789abcdef." + st[len(st)-24:])
		}, nil, false, true, ""},
		{"another session's state", func(_, foreign string) (string, *Answer) { return shared, approve(foreign) }, nil, false, true, ""},
		{"not a state of ours", func(_, _ string) (string, *Answer) { return shared, approve("server-state") }, nil, false, true, ""},
		{"answered first through the cli", func(st, _ string) (string, *Answer) { return shared, &Answer{State: st, Answered: true} },
			&approval.Answer{Approve: true, Scope: approval.ScopeCall, By: "bob", Channel: approval.ChannelCLI}, true, false, "approved by bob through cli"},
		{"denied first through the cli", func(st, _ string) (string, *Answer) { return shared, approve(st) },
			&approval.Answer{By: "bob", Channel: approval.ChannelCLI}, false, false, "denied by bob through cli"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "approvals.db")
			s, log, asked := approvalSession(t, path, time.Minute)
			ctx := context.Background()
			o, err := s.CallInput(ctx, "write_file", []byte(shared), &Input{InBand: true})
			if err != nil {
				t.Fatal(err)
			}
			if o.Forward || o.Question == nil || !strings.HasPrefix(o.Question.State, StatePrefix+o.Question.Request.ID+".") {
				t.Fatalf("first call: %+v, want a question and no forward", o)
			}
			if len(asked) != 0 {
				t.Errorf("the question was also put by elicitation request")
			}
			if len(log.entries) != 1 || log.entries[0].Decision != "ask" {
				t.Fatalf("first call recorded %d entries", len(log.entries))
			}
			// Another session of the same store and principal issues its
			// own state for the same call.
			s2, err := subtreeEngine(t).NewSession(&SessionConfig{
				Server: "fs", ID: "sess2", Principal: "alice", Origin: capability.Interactive, Log: &syncLog{},
				Approvals: s.cfg.Approvals,
			})
			if err != nil {
				t.Fatal(err)
			}
			o2, err := s2.CallInput(ctx, "write_file", []byte(shared), &Input{InBand: true})
			if err != nil || o2.Question == nil {
				t.Fatalf("the other session: %+v %v", o2, err)
			}
			if tt.cli != nil {
				if _, err := s.cfg.Approvals.Store.Answer(ctx, o.Question.Request.ID, *tt.cli); err != nil {
					t.Fatal(err)
				}
			}
			argsJSON, ans := tt.retry(o.Question.State, o2.Question.State)
			r, err := s.CallInput(ctx, "write_file", []byte(argsJSON), &Input{InBand: true, Answer: ans})
			if err != nil {
				t.Fatal(err)
			}
			if r.Forward != tt.forward || (r.Question != nil) != tt.asked {
				t.Fatalf("retry: forward %v question %v (%q), want forward %v question %v", r.Forward, r.Question != nil, r.Reason, tt.forward, tt.asked)
			}
			if tt.asked {
				if r.Question.Request.ID == o.Question.Request.ID {
					t.Errorf("the retry was asked the same question")
				}
				if len(log.entries) != 2 || log.entries[1].Decision != "ask" {
					t.Errorf("retry recorded %d entries, want its ask only", len(log.entries))
				}
				return
			}
			if len(log.entries) != 3 {
				t.Fatalf("%d entries, want the ask, the retry's ask, its answer", len(log.entries))
			}
			if e := log.entries[2]; e.Rules[0] != RuleApproval || !strings.Contains(e.Reason, "seq 2") || !strings.Contains(e.Reason, tt.entry) {
				t.Errorf("the answer's entry: %s %v %q, want it to name seq 2 and hold %q", e.Decision, e.Rules, e.Reason, tt.entry)
			}
			// The question is spent: the same state again asks anew when
			// it was approved (and taken), and stays declined when not.
			again, err := s.CallInput(ctx, "write_file", []byte(shared), &Input{InBand: true, Answer: approve(o.Question.State)})
			if err != nil {
				t.Fatal(err)
			}
			wantAgain := tt.name == "approved for the session" // the grant answers it
			if again.Forward != wantAgain || (again.Question != nil) != (!wantAgain && tt.forward) {
				t.Errorf("the state replayed: forward %v question %v, want forward %v", again.Forward, again.Question != nil, wantAgain)
			}
		})
	}
}

// TestInBandNotForRetries: a call that retries the server's own round
// trip is held, not asked in its round trips (its answers and the
// server's state would be lost); a continuation of an approved call is
// not asked again, and one of a call nobody approved is.
func TestInBandNotForRetries(t *testing.T) {
	const shared = `{"path":"/home/a/projects/shared/x","content":"hi"}`
	path := filepath.Join(t.TempDir(), "approvals.db")
	s, log, asked := approvalSession(t, path, time.Minute)
	ctx := context.Background()
	go func() {
		r := <-asked
		s.cfg.Approvals.Store.Answer(ctx, r.ID, approval.Answer{Approve: true, Scope: approval.ScopeCall, By: "bob", Channel: approval.ChannelCLI})
	}()
	// A retry with the server's answers: held, answered through the CLI.
	o, err := s.CallInput(ctx, "write_file", []byte(shared), &Input{InBand: true, Responses: []byte(`{"k":{"action":"accept"}}`)})
	if err != nil || !o.Forward || o.Question != nil {
		t.Fatalf("a retry of the server's: %+v %v, want held and approved", o, err)
	}
	// Its continuation goes on without a question.
	n := len(log.entries)
	c, err := s.CallInput(ctx, "write_file", []byte(shared), &Input{InBand: true, Continues: true, Responses: []byte(`{"k":{"action":"accept"}}`)})
	if err != nil || !c.Forward {
		t.Fatalf("the continuation: %+v %v", c, err)
	}
	if e := log.entries[n+1]; !strings.Contains(e.Reason, "continues the call approved") {
		t.Errorf("the continuation's entry: %q", e.Reason)
	}
	// A continuation of other arguments, nobody approved: held until
	// answered.
	go func() {
		r := <-asked
		s.cfg.Approvals.Store.Answer(ctx, r.ID, approval.Answer{By: "bob", Channel: approval.ChannelCLI})
	}()
	d, err := s.CallInput(ctx, "write_file", []byte(`{"path":"/home/a/projects/shared/y","content":"hi"}`), &Input{InBand: true, Continues: true})
	if err != nil || d.Forward || d.Question != nil || !strings.Contains(d.Reason, "declined") {
		t.Fatalf("an unapproved continuation: %+v %v", d, err)
	}
}

// TestInBandResourceRetry: the retry of a resources/read asked in its
// round trips may carry another _meta (a new progress token): it is the
// same request, and the answer counts for it; another uri does not.
func TestInBandResourceRetry(t *testing.T) {
	s, _ := askingSession(t, "  - {id: ask-notes, effect: ask, server: v, method: resources/read}\n", nil)
	ctx := context.Background()
	for _, tt := range []struct {
		retry   string
		forward bool
	}{
		{`{"uri":"note://a","_meta":{"progressToken":2}}`, true},
		{`{"uri":"note://b","_meta":{"progressToken":1}}`, false},
	} {
		o, err := s.RequestInput(ctx, "resources/read", []byte(`{"uri":"note://a","_meta":{"progressToken":1}}`), &Input{InBand: true})
		if err != nil || o.Question == nil {
			t.Fatalf("first: %+v %v", o, err)
		}
		r, err := s.RequestInput(ctx, "resources/read", []byte(tt.retry), &Input{InBand: true,
			Answer: &Answer{State: o.Question.State, Answered: true, Approve: true, Scope: approval.ScopeCall}})
		if err != nil || r.Forward != tt.forward || (r.Question != nil) == tt.forward {
			t.Errorf("retry %s: forward %v question %v, want forward %v", tt.retry, r.Forward, r.Question != nil, tt.forward)
		}
	}
}
