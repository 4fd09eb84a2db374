// Package proxy owns aegis's MCP plumbing: the stdio relay that sits between
// an MCP client (on aegis's stdin and stdout) and the MCP server it wraps (a
// child process), speaking MCP's stdio transport, newline-delimited JSON-RPC
// 2.0. It leaves every decision to a [Gate], an interface it declares;
// [SessionGate] is the one over a gateway.Session, the whole pipeline.
// What is decided, recorded or pinned is not its business.
//
// # Fidelity
//
// The relay is not an MCP client and server back to back: it does not model
// the protocol, so it cannot drop what it does not model. Every message it
// lets through unchanged (initialisation, listings, notifications, progress,
// cancellation, logging, list changes, the client's answers to the server's
// requests, unknown fields and protocol versions it has never heard of, and
// every request its gate allowed) is written to the other side byte for
// byte as it was read, in one write.
//
// It looks into these things:
//
//   - a tools/call request is decided by [Gate.Call] before it is forwarded;
//     a refused call never reaches the server, and the client receives a tool
//     result with isError set and the gate's reason, so the model can adjust;
//   - every other client request is decided by Gate.Call too (a [Call] with
//     its Method and Params), but for the protocol's housekeeping, which
//     acts on nothing (initialize, ping, server/discover, the listings,
//     logging/setLevel, resources/unsubscribe, subscriptions/listen):
//     resources/read, prompts/get, completion/complete, resources/subscribe,
//     and methods the relay has never heard of, which the gate refuses
//     unless it knows better. A refused one is answered with a JSON-RPC
//     error holding the reason;
//   - a request of the server to the client other than ping
//     (sampling/createMessage, elicitation/create, roots/list) goes through
//     [ServerRequestChecker.ServerRequest]; a refused one is answered to the
//     server and never reaches the client;
//   - the response to a tools/list request goes through
//     [ToolsChecker.Tools], where tools are pinned and may be hidden;
//   - the response to every request the gate let through goes through
//     [ResultChecker.Result] (or [ErrorChecker.Error]);
//   - an incomplete result of protocol revision 2026-07-28
//     (resultType input_required) embeds the server's requests for input,
//     which are decided as the server's own requests are
//     ([ServerRequestChecker]); its opaque requestState and the embedded
//     requests are relayed byte for byte, past the ResultChecker, which
//     sees the rest; and the client's retry of the call is one logical
//     call with it ([Call.Continues]). See mrtr.go.
//
// # Strictness
//
// Every message, in either direction, is validated strictly before the relay
// decides what it is, so that aegis and the peer cannot read one message two
// ways. The validator is package args's ([args.Validate]), so the relay reads
// a message as the gateway reads the arguments in it: duplicate keys at any
// depth, keys that differ only in case (decoders like Go's encoding/json match
// field names case-insensitively; ſ and K fold too), invalid UTF-8, lone
// surrogate escapes, a NUL in a key, nesting past a limit and anything after
// the value are refused. Method names are compared after unescaping
// ("tools\/call" is tools/call), and a name that resembles a watched method
// without being it ("Tools/Call", "tools.call", "tools/call\u200b") is
// refused. A client message that fails is never forwarded: it is answered
// with a JSON-RPC error when it had a usable id, else dropped and logged. A
// server message that fails is dropped; if it answered a request, the client
// is told that the answer was withheld.
//
// A tools/call must have object params with a string name; arguments, if
// present, must be an object, and are gated as {} if absent (the server reads
// a missing arguments member the same way). A tools/call without an id is
// dropped. A task-augmented call or request (params.task) is refused: its
// result would arrive through tasks/result, past [ResultChecker]. The
// members a retry adds (inputResponses, an object; requestState, a
// string) are read strictly too, and given to the gate.
//
// # Protocol revisions
//
// A result the relay writes itself (a refusal, a withheld result, a
// timeout) is valid for the revision of the request it answers: with
// "resultType":"complete" when the request's _meta names 2026-07-28 or
// later (that revision has no initialize: each request names its own),
// without it before. A JSON-RPC error is the same in every revision.
//
// # Request ids
//
// The relay tracks each client request it is waiting on by a key in which
// the string "7" and the number 7 are the same, so a peer that confused the
// two cannot route an answer past a check. Numeric ids must be canonical
// integers within ±(2^53-1), and ids are at most 256 bytes. A request whose
// id is already awaiting an answer is refused. A server response that answers no forwarded request is
// dropped: it could only be a forgery of an id the relay answered itself or
// is still gating. (An error response with a null id is relayed.) The relay
// never sends requests of its own, so it has no ids of its own to collide.
//
// # Batches
//
// JSON-RPC batches (protocol versions before 2025-06-18) are relayed when
// they hold no request the gate decides. A batch that holds one, or an
// invalid element, is refused whole: each request in it is answered with an
// error, in one batch.
// A batch from the server is relayed byte for byte unless an element had to
// change or be dropped; then its elements are relayed one by one.
//
// # Ordering
//
// Messages from the server reach the client in the order the server sent
// them. Messages from the client reach the server in the order the client
// sent them, with one exception: a tools/call is forwarded when its gate
// returns, and gates run concurrently (a durable append, a human approval)
// so that a slow decision does not hold up unrelated messages: the client's
// later messages are read as soon as the gate blocks or returns (or an idle
// thread of the runtime finds them first), so only a gate that computes
// without blocking holds them, for as long as it computes (tens of
// microseconds for aegis's checks). Calls sent
// while another is being decided may therefore reach the server in another
// order, as concurrent requests may on any JSON-RPC connection. A
// notifications/cancelled naming a call that is still being decided cancels
// the gate's context and is held: it is forwarded right after the call, or
// dropped, with no answer to the client, if the call is refused.
//
// Apart from the calls being decided, neither direction buffers more than
// one message: a server that stops reading its input stops the relay from
// reading the client, and a client that stops reading stops the relay from
// reading the server, exactly as without aegis. At shutdown the relay gives up on such a peer after a grace
// period instead of waiting for it.
//
// The calls being decided are bounded too: they count against
// [Options.MaxInFlight] with the requests at the server, and so does each
// answer the relay owes for a call it refused, until it is written. Once the
// cap is full a further request is answered with a JSON-RPC error, which
// waits for the client like any answer, so a client that sends calls and
// reads nothing stops being read, as without aegis, instead of making the
// relay hold its refusals.
//
// # Lifecycle
//
// [Run] starts the server, relays until one side ends, and shuts the server
// down: see its documentation. The server's stderr is copied to aegis's
// stderr and to a log file as it comes.
//
// A call the gate let through is never left looking served when it was
// not: if the server goes before it is written, or before it is answered,
// the client gets an error that says which, and a gate that implements
// [UndeliveredRecorder] hears of it once, so that the record of the
// decision can say so.
//
// # Waiting
//
// The relay waits for both peers in Go's poller, not in threads blocked in
// read(2): [ClientStdio] gives it the client's pipes or sockets in a form
// the poller can wait for without changing what the client shares, and Run
// reads and writes every pipe or socket that the poller waits for with raw
// system calls, which never block there and do not wake the runtime's
// monitor thread on every message.
package proxy
