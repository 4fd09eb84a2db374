// Package args owns the arguments of a tool call as data: a strict, capped JSON decoder
// ([Doc.Decode]), handles into the decoded document ([Value]), JSON Pointers with a "*"
// wildcard that bindings use to name an argument ([Pointer]), and the RFC 8785 canonical
// encoding that approvals and the chain hash ([Value.AppendCanonical]).
//
// It is also aegis's one strict JSON reader for text it passes on rather than decides
// on: [Validate] and [ValidateTop] check a JSON-RPC message of any shape the way Decode
// would read it, without building a document, and [Members], [Elements] and [Unquote]
// walk what they accepted. Package proxy validates every message with them.
//
// It leaves meaning to others: package binding decides which pointer is a resource,
// package capability canonicalises the paths and URLs found there, and the gateway
// turns any error from here into a denial.
//
// # Strictness
//
// Where JSON parsers disagree, an attacker can show aegis one call and the tool server
// another. Decode therefore accepts only JSON that every conforming parser reads the
// same way, and refuses the rest: duplicate keys (first or last wins?), lone UTF-16
// surrogate escapes (kept by JavaScript, replaced by Go), invalid UTF-8, and all the
// lenient extensions (comments, trailing commas, NaN, a byte-order mark). The top-level
// value must be an object. Object keys are compared after unescaping, and under Unicode
// simple case folding ([SameKey]), as decoders like Go's encoding/json match field
// names. Decoding is iterative, so nesting cannot exhaust the stack, and [Limits] caps
// size, depth, element count and string length; exceeding one is an error wrapping
// [ErrLimit], never a truncation.
//
// [Validate] refuses all that Decode refuses as malformed, and a key holding NUL too,
// but takes any top-level value and caps nesting only (it recurses, at most that deep):
// its caller bounds the size.
//
// # Numbers
//
// Numbers keep their source text ([Value.Raw]); nothing is rounded while deciding. Only
// the canonical encoding converts them to IEEE 754 doubles, as RFC 8785 requires, and
// [Value.AppendCanonical] refuses a number the conversion would change.
//
// # Example
//
//	var d args.Doc
//	if err := d.Decode(raw, nil); err != nil {
//		return deny(err)
//	}
//	p, _ := args.ParsePointer("/paths/*")
//	p.Select(d.Root(), func(v args.Value, at args.Loc) {
//		use(v.Str(), at) // at.String() is "/paths/0", "/paths/1", ...
//	})
//	sum := sha256.Sum256(must(d.Root().AppendCanonical(nil)))
package args
