// Package gateway owns the pipeline of one tool call (DESIGN.md "The
// pipeline of one call") and its result side. A [Session] is the pipeline
// of one wrapped server as one client session sees it: `aegis run` relays
// through one, and `aegis eval` and `aegis explain` decide through one, so
// that what they say is what the relay does. An [Engine] holds what all
// sessions share: the policy, the configured servers and the session store.
//
// # The steps, one file each
//
// Every step fails closed: a value that is off-schema, ambiguous,
// unparsable or unresolvable is refused, never silently forwarded.
//
//	1 facts.go       the session's origin and taint, merged with the store's
//	2 pin.go         the tool's pinned definition: held, unlisted, its schema
//	4 shape.go       pinned, cleared and identity fields; templates (package shape)
//	3 schema.go      the closed input schema, on the arguments as shaped
//	7 dlp.go         secrets in the arguments: deny, redact, ask, report
//	5 derive.go      bind and derive the capabilities (package binding)
//	6 policy.go      the policy's decision (package policy)
//	  self.go        aegis's own files, refused whatever the policy says
//	7 egress.go      every net.connect through the egress gate
//	  provenance.go  ids the server itself returned in this session
//	  caps.go        calls per turn, minute and session
//	8 decide.go      an ask no person can answer (unattended) is declined
//	9 record.go      the chain entry and the envelope, durable before forward
//	  result.go      the result: taint, ids harvested, DLP
//
// The numbers are DESIGN.md's; pipeline.go runs the files in the order
// listed ([Engine.check], whose prepare and conclude halves the [Session]
// and explain share). Shaping runs before the closed schema because
// aegis's own fields are part of what the server must accept, and the
// arguments' DLP scan runs before derivation because redaction rewrites
// them. verdict.go holds what a step returns: a [Verdict], or a
// [Refusal] under one of aegis's own rule ids ("aegis:…").
//
// The gateway does no protocol work (package proxy's) and defines no
// record format (package chain's); it decides and records.
package gateway
