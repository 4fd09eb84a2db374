package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/dlp"
)

// This file holds what a retry of a multi-round-trip request (MCP
// 2026-07-28) brings to the pipeline besides its arguments: the answers
// to the server's requests for input, and whether it continues a call the
// session already counted.
//
// A server that needs a person's answer (an elicitation) answers a call
// with an incomplete result asking for it; the client asks the person and
// retries the call with the answers (inputResponses) and the server's
// opaque requestState. Each retry is a call like any other: decided on
// its arguments by the whole pipeline and recorded. What differs:
//
//   - the answers are text the person wrote for the server, so DLP scans
//     them as it scans arguments (a secret refuses the call, asks, or is
//     redacted, as the server's argument actions say), and the call's
//     envelope keeps them, redacted;
//   - the retry and the call it retries are one logical call, so the caps
//     count it once: [Input.Continues], which the relay sets only for the
//     first retry that brings back a requestState the server issued for
//     the same tool and arguments. A model that replays a requestState, or
//     makes one up, makes a new call, counted.

// Input is what a retry of a multi-round-trip request brings besides its
// arguments. The zero value (or a nil *Input) is a call that retries
// nothing.
type Input struct {
	// Responses is the retry's params.inputResponses, raw JSON (an
	// object) as the client sent it; nil when absent.
	Responses []byte
	// Continues says the call is the first retry of a call the session
	// already decided and counted, with the server's requestState: its
	// caps do not count it again. Everything else decides it as usual.
	Continues bool
	// InBand says the client answers aegis's own questions in the call's
	// round trips (see inband.go): a call that asks is answered with a
	// [Question] instead of being held. The relay sets it for a client of
	// revision 2026-07-28 that declared elicitation.
	InBand bool
	// Answer, if set, is what the retry brings back for aegis's question,
	// taken out of its inputResponses and requestState by the relay.
	Answer *Answer
}

// inputPointer prefixes the pointers of findings in the answers, so that a
// reason (and the record) tells them from findings in the arguments.
const inputPointer = "inputResponses"

// scanInput looks for secrets in a retry's answers (c.InputResponses), as
// scanArguments does in arguments, with the server's argument actions. It
// returns the answers to forward (redacted, or as they came) and the
// findings that did not refuse the call, their pointers prefixed.
func (e *Engine) scanInput(s *Server, c *Call) (out []byte, found []dlp.Located, err error) {
	if c.InputResponses == nil {
		return nil, nil, nil
	}
	doc := envelopeDocs.Get().(*args.Doc)
	defer func() {
		doc.DecodeBorrowed(emptyObject, nil) // lets go of the answers
		envelopeDocs.Put(doc)
	}()
	if err := doc.DecodeBorrowed(c.InputResponses, &e.limits); err != nil {
		return nil, nil, refusal(RuleUndecidable, "the answers to the server's requests for input (inputResponses): %v", err)
	}
	return e.scan(s, doc, c.InputResponses, "the answers to the server's requests for input (inputResponses)", inputPointer)
}

// secretAsks reports whether a DLP finding of v whose pointer begins with
// prefix ("" for any, [inputPointer] for the answers only) has the
// action ask. v.Ask says so only for a call the policy allowed: where the
// policy asks too, the finding asks all the same, and what answers the
// policy's question (a grant, an approved call continued) does not
// answer it.
func secretAsks(s *Server, v *Verdict, prefix string) bool {
	if s.DLP == nil {
		return false
	}
	for _, f := range v.Findings {
		if strings.HasPrefix(f.Pointer, prefix) && s.DLP.Arguments.For(f.Kind) == dlp.ActionAsk {
			return true
		}
	}
	return false
}

// apply sets c's fields from in; a nil in sets none.
func (in *Input) apply(c *Call) {
	if in == nil {
		return
	}
	c.InputResponses, c.Continues = in.Responses, in.Continues
	c.InBand, c.Answer = in.InBand, in.Answer
}

// redactedInput returns the answers v forwards when DLP changed them from
// c's, copied out of the check's storage; nil when they go as they came.
func redactedInput(c *Call, v *Verdict) []byte {
	if v.InputResponses == nil || bytes.Equal(v.InputResponses, c.InputResponses) {
		return nil
	}
	return bytes.Clone(v.InputResponses)
}

// RuleAnswer is the rule id recorded for the client's answer to a
// request of the server ([Session.Answer]).
const RuleAnswer = "aegis:answer"

// Answer takes in the client's answer to a request of the server that
// [Session.ServerRequest] let through: result is the result object it
// answered with. It is input the server receives, like arguments: the
// answer to an elicitation/create (a person's words) is scanned by DLP
// with the argument actions and recorded, with an envelope that keeps it
// redacted, in an entry of its own (method elicitation/create, tool
// "answer", rule aegis:answer). It returns the answer to pass on, nil for
// the client's own bytes, or a [*Refusal] when it must not reach the
// server (a secret whose action is deny or ask: no person can be asked
// here), or an error when it could not be recorded. Answers to other
// methods pass unchecked. In revision 2026-07-28 the answers come with
// the call's retry instead ([Input]).
func (s *Session) Answer(ctx context.Context, method string, result []byte) ([]byte, error) {
	if method != "elicitation/create" {
		return nil, nil
	}
	c := s.facts("answer", emptyObject)
	c.Method, c.InputResponses = method, result
	out, found, err := s.eng.scanInput(s.srv, c)
	if err == nil {
		for _, f := range found {
			if s.srv.DLP.Arguments.For(f.Kind) == dlp.ActionAsk {
				err = refusal(RuleDLP, "the answer holds what may be a secret, and no person can be asked here: %s", findingsNote(found))
				break
			}
		}
	}
	if s.rec.Log != nil {
		if rerr := s.rec.answer(ctx, c, out, found, err); rerr != nil {
			s.logger.Error("recording an answer", "method", method, "err", rerr)
			return nil, &Refusal{Rule: RuleAnswer, Err: errors.New("the answer could not be recorded")}
		}
	}
	if err != nil {
		fmt.Fprintf(s.notify, "aegis: withheld the client's answer to %s: %v\n", s.what(method, ""), err)
		return nil, err
	}
	if bytes.Equal(out, result) {
		return nil, nil
	}
	return out, nil
}
