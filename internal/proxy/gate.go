package proxy

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/aegis-mcp/aegis/internal/gateway"
)

// Gate decides a tools/call before it is forwarded to the server, and
// every other client request that acts (resources/read, prompts/get,
// completion/complete, and methods the relay does not know): a [Call]
// says which. A refused request of another method is answered with a
// JSON-RPC error holding Reason, as it has no tool result to hold it.
//
// Call MUST return only after its decision is durably recorded: the relay
// forwards the call as soon as Call returns. A Verdict with Forward false
// refuses the call: the client receives a tool result with isError set and
// Reason as its text, under the request's id, and the server never sees the
// call. An error is a refusal too (fail closed); the client then receives a
// generic reason and the error is logged, never shown.
//
// Call may block (a durable append, a human approval); the relay runs each
// call's gate on its own goroutine, so Call MUST be safe for concurrent use.
// Its context is cancelled when the client cancels the call
// (notifications/cancelled) or the relay stops.
//
// A Gate may also implement [ToolsChecker] and [ResultChecker].
type Gate interface {
	Call(ctx context.Context, c *Call) (Verdict, error)
}

// A Call is one tools/call request as the client sent it, or a request of
// another method the gate decides. Its fields are the relay's own copies;
// the gate may keep them.
type Call struct {
	// Method is the request's method: "" for a tools/call, which has Tool
	// and Arguments; for another method, Params holds its params.
	Method string
	// Params is the params object of a request of another method, raw JSON
	// exactly as the client sent it; nil when absent. nil for a tools/call.
	Params json.RawMessage
	// ID is the request id, raw JSON exactly as the client sent it.
	ID json.RawMessage
	// Tool is the tool's name (params.name), unescaped.
	Tool string
	// Arguments is params.arguments, raw JSON exactly as the client sent
	// it: always an object, "{}" when the client sent none (the server reads
	// a missing arguments member as an empty object too). A gate's
	// replacement (Verdict.Arguments) is not reflected here.
	Arguments json.RawMessage
	// Meta is params._meta, raw JSON; nil when absent.
	Meta json.RawMessage
	// InputResponses and RequestState are the members a retry of a
	// multi-round-trip request adds to its params (MCP 2026-07-28): the
	// answers to the server's requests for input (an object, raw JSON as
	// the client sent it) and the server's opaque state (a JSON string,
	// raw). nil when absent. For a request of another method they are in
	// Params too.
	InputResponses json.RawMessage
	RequestState   json.RawMessage
	// Continues says that this tools/call retries, with the server's own
	// requestState, a call the server answered input_required through the
	// relay, and is the first to do so: one logical call with it, which
	// the gate MUST still decide on its arguments but SHOULD count against
	// its caps once. A replayed requestState, or one the server never
	// issued, does not continue anything.
	Continues bool
	// InBand says the client answers aegis's questions in the call's
	// round trips (revision 2026-07-28, elicitation declared, and no
	// retry of the server's round); Answer is what a retry brought back
	// for aegis's question, taken out of it (see inband.go).
	InBand bool
	Answer *gateway.Answer
}

// A Verdict is a gate's decision on one call.
type Verdict struct {
	// Forward lets the call through to the server.
	Forward bool
	// Reason is shown to the client (and so to the model) when the call is
	// refused. It MUST name the rule, never a secret. Empty means a generic
	// reason.
	Reason string
	// Arguments, if non-nil, replaces the arguments forwarded (pinned fields,
	// clamped values). It MUST be a JSON object; anything else refuses the
	// call.
	Arguments json.RawMessage
	// InputResponses, if non-nil, replaces the retry's inputResponses
	// (secrets redacted from the answers). It MUST be a JSON object, and
	// the call MUST have had inputResponses.
	InputResponses json.RawMessage
	// RunUnbound runs a forwarded tools/call in the server's unbound twin
	// ([Options.Twin]) instead of the server. Where there is no twin the
	// call is refused.
	RunUnbound bool
	// Question, if set on a call not forwarded, is put to the person at
	// the client in the call's round trips: the call is answered
	// input_required ([Call.InBand] calls only).
	Question *gateway.Question
}

// ToolsChecker is implemented by a [Gate] that looks into tools/list
// results, where tools are pinned and may be hidden.
//
// Tools is called with the tools of one tools/list result page (each a raw
// JSON object, as the server sent it) and returns the tools to pass on to
// the client. Returning the same slice unchanged relays the server's message
// byte for byte. An error withholds the whole page: the client receives a
// JSON-RPC error instead.
type ToolsChecker interface {
	Tools(ctx context.Context, tools []json.RawMessage) ([]json.RawMessage, error)
}

// ResultChecker is implemented by a [Gate] that looks into tools/call
// results before they reach the client (DLP, provenance, taint).
//
// Result is called with each result of a call the gate let through, in the
// order the server sent them, on the goroutine that relays the server's
// messages: while it runs, the server's later messages wait. A nil return
// relays the server's message byte for byte; a non-nil one (a JSON object)
// replaces the result. An error withholds the result: the client receives a
// tool result with isError set and a generic reason.
//
// An error that is (or wraps) a [*Withheld] shows its Reason to the client.
type ResultChecker interface {
	Result(ctx context.Context, c *Call, result json.RawMessage) (json.RawMessage, error)
}

// ErrorChecker is implemented by a [Gate] that looks into the JSON-RPC
// errors a server answers a tools/call it let through with, as a
// [ResultChecker] looks into results: an error's message and data are
// text the model reads, and may hold what a result may not.
//
// Error is called with the error object as the server sent it, on the
// goroutine that relays the server's messages. A nil return relays the
// message byte for byte; a non-nil one (a JSON object with code and
// message) replaces the error object. An error withholds it: the client
// receives a JSON-RPC error under the request's id saying so, with the
// [*Withheld] reason when there is one.
type ErrorChecker interface {
	Error(ctx context.Context, c *Call, errObj json.RawMessage) (json.RawMessage, error)
}

// ServerRequestChecker is implemented by a [Gate] that decides the
// requests the server sends the client (sampling/createMessage,
// elicitation/create, roots/list, and methods the relay does not know;
// ping is relayed). A request it does not let through never reaches the
// client: the relay answers the server with a JSON-RPC error holding
// Reason. A gate without it has the server's requests relayed unchanged.
//
// ServerRequest is called on the goroutine that relays the server's
// messages: while it runs, the server's later messages wait. params is
// the request's params object, nil when absent.
type ServerRequestChecker interface {
	ServerRequest(ctx context.Context, method string, params json.RawMessage) (Verdict, error)
}

// AnswerChecker is implemented by a [Gate] that looks into the client's
// answers to the server's requests its [ServerRequestChecker] let
// through: what the client sends the server there (a person's answer to
// an elicitation) is input to the server, like arguments.
//
// Answer is called with the request's method and the result the client
// answered with, on the goroutine that reads the client. A nil return
// relays the client's message byte for byte; a non-nil one (a JSON
// object) replaces the result. An error withholds it: the server receives
// a JSON-RPC error under the request's id instead, with the [*Withheld]
// reason when there is one. A client's error answer is relayed unchecked.
type AnswerChecker interface {
	Answer(ctx context.Context, method string, result json.RawMessage) (json.RawMessage, error)
}

// Withheld is a ResultChecker's error that says why a result was withheld,
// in words fit for the client and the model: it MUST name the rule, never
// a secret.
type Withheld struct {
	Reason string
}

func (w *Withheld) Error() string { return "result withheld: " + w.Reason }

// UndeliveredRecorder is implemented by a [Gate] that records what became
// of the calls it let through, so that a call recorded as allowed is not
// left looking served when it was not.
//
// The relay calls Undelivered once for each call that [Gate.Call] let
// through and that the server did not answer through the relay: the call
// was never written to the server ([NotSent]), the server exited or was
// shut down before answering ([NoAnswer]), or it did not answer within
// [Options.CallTimeout] ([TimedOut]). In each case the client has
// been, or is about to be, told so with an error (unless it cancelled the
// call). c is the *Call that Gate.Call was
// given. It is not called for a call the server answered (even if the
// answer was withheld or could not be written to the client), for a refused
// call, or for a call the client cancelled once it was sent: the client
// asked for no answer. A call is reported at most once.
//
// Undelivered may be called from several goroutines at once, so it MUST be
// safe for concurrent use. Its context is not cancelled when the relay
// stops (the record is worth making then most of all); it SHOULD return
// promptly, as the client's error waits for it, and at shutdown the relay
// waits for it no longer than the grace period.
type UndeliveredRecorder interface {
	Undelivered(ctx context.Context, c *Call, why Loss)
}

// A Loss says why a call the gate let through got no answer from the
// server.
type Loss uint8

const (
	// NotSent: the call was never written to the server, which had gone
	// or closed its input. The server did not run it.
	NotSent Loss = iota + 1
	// NoAnswer: the call was written, and the server exited, closed its
	// output or was shut down before answering it. It may have run, in
	// part or whole.
	NoAnswer
	// TimedOut: the call was written and the server did not answer it
	// within [Options.CallTimeout]; the relay sent the server
	// notifications/cancelled for it and drops a late answer. It may have
	// run, or still be running.
	TimedOut
	// AnswerWithheld: the server answered, but its answer was not a valid
	// message (or over the size cap) and was withheld from the client. It
	// may have run.
	AnswerWithheld
)

func (l Loss) String() string {
	switch l {
	case NotSent:
		return "not-sent"
	case NoAnswer:
		return "no-answer"
	case TimedOut:
		return "timed-out"
	case AnswerWithheld:
		return "answer-withheld"
	}
	return "Loss(" + strconv.Itoa(int(l)) + ")"
}
