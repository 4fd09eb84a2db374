package gateway

import (
	"fmt"

	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/session"
)

// ResultEvent is one result on its way back to the client: of a
// tools/call, or of another request ([Session.Request]).
type ResultEvent struct {
	Session string
	Server  string
	// Method is the request's method, "" for a tools/call; Tool is what it
	// names (see [Call]).
	Method string
	Tool   string
	Result []byte // the result object as the server sent it
	// Error says Result is the JSON-RPC error object the server answered
	// with instead: scanned and tainting alike, but naming no ids.
	Error bool
}

// emptyObject is what a pooled document holds between uses.
var emptyObject = []byte("{}")

// Result takes in a tool's result (DESIGN.md pipeline, last line): the
// session tainted by an untrusted tool, ids harvested for provenance, and
// the result scanned for secrets (R17). It returns the result to pass on —
// nil for the result as the server sent it, or the result with secrets
// redacted — and the findings, by kind and location. An error withholds
// the result: a finding whose action is deny, or a result aegis cannot
// read while it has secrets to look for.
func (e *Engine) Result(r *ResultEvent) (out []byte, found []dlp.Located, err error) {
	s := e.servers[r.Server]
	if s == nil {
		return nil, nil, fmt.Errorf("%w %q", ErrUnknownServer, r.Server)
	}
	t, source := s.Tools[r.Tool], r.Server+"/"+r.Tool
	if r.Method != "" {
		t, source = s.Methods[r.Method], r.Server+" "+r.Method
	}
	valueTaint := t != nil && t.Untrusted && r.Session != "" && s.ValueTaint
	if t != nil && t.Untrusted && r.Session != "" && !s.ValueTaint {
		e.sessions.Taint(r.Session, source)
		if e.sharedSessions != nil {
			if err := e.sharedSessions.Taint(r.Session, source); err != nil {
				return nil, nil, fmt.Errorf("result: the session's taint could not be shared: %w", err)
			}
		}
	}
	if s.DLP == nil && (t == nil || len(t.IDs) == 0) && !valueTaint {
		return nil, nil, nil
	}
	// The document is a pooled one: its nodes are reused, and Decode
	// gives it a private copy of the text, so that strings kept from it
	// (provenance ids) stay valid after it goes back to the pool.
	sc := e.scratch.Get().(*scratch)
	doc := &sc.docs[0]
	defer func() {
		doc.DecodeBorrowed(emptyObject, nil) // lets go of the result's text
		e.scratch.Put(sc)
	}()
	if err := doc.Decode(r.Result, &e.limits); err != nil {
		if s.DLP != nil {
			return nil, nil, &Refusal{Rule: RuleDLP, Err: fmt.Errorf("the result cannot be read to look for secrets: %v", err)}
		}
		return nil, nil, fmt.Errorf("result: %w", err)
	}
	root := doc.Root()
	if valueTaint {
		// An error's text is the server's words too: it taints.
		tokens := session.Tokens(nil, root)
		e.sessions.TaintValues(r.Session, source, tokens)
		if e.sharedSessions != nil {
			if err := e.sharedSessions.TaintValues(r.Session, source, tokens); err != nil {
				return nil, nil, fmt.Errorf("result: the session's taint could not be shared: %w", err)
			}
		}
	}
	if s.DLP == nil && (t == nil || len(t.IDs) == 0) {
		return nil, nil, nil
	}
	if t != nil && len(t.IDs) > 0 && !r.Error {
		// An error result names no object the server holds.
		if isErr, ok := root.Lookup("isError"); !ok || isErr.Raw() != "true" {
			var ids []string
			for _, src := range t.IDs {
				ids = session.IDs(ids[:0], src.Pointer, root)
				e.sessions.Record(r.Session, src.Kind, ids)
				if e.sharedSessions != nil {
					if err := e.sharedSessions.Record(r.Session, src.Kind, ids); err != nil {
						return nil, nil, fmt.Errorf("result: the session's ids could not be shared: %w", err)
					}
				}
			}
		}
	}
	if s.DLP == nil {
		return nil, nil, nil
	}
	found = dlp.ScanValue(root, nil)
	if len(found) == 0 {
		return nil, nil, nil
	}
	switch act, _ := s.DLP.Results.DecideLocated(found); act {
	case dlp.ActionDeny, dlp.ActionAsk:
		return nil, found, &Refusal{Rule: RuleDLP, Err: fmt.Errorf("the result holds a secret: %s", findingsNote(found))}
	case dlp.ActionRedact:
		out, err := dlp.AppendRedacted(make([]byte, 0, len(r.Result)+32), root, s.DLP.Results.Redacts)
		if err != nil {
			return nil, found, &Refusal{Rule: RuleDLP, Err: fmt.Errorf("redacting the result: %v", err)}
		}
		return out, found, nil
	}
	return nil, found, nil
}
