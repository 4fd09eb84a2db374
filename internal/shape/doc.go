// Package shape rewrites the arguments of a tool call before aegis forwards them, so
// that a value the model wrote cannot do more than it says (DESIGN.md R13). Today it
// owns template neutralisation: for a server that expands templates in its inputs,
// every string the model wrote is rewritten so that no template delimiter survives
// ([Syntax.Neutralise], [Syntax.NeutraliseJSON]).
//
// It leaves the decision to others: the configuration says which servers expand
// templates and in which [Syntax], the gateway forwards the rewritten arguments and
// records the JSON Pointers that changed.
//
// # Why not replace-all
//
// Replacing every "{{" with "{ {" in one left-to-right pass is walked through by a
// third brace: in "{{{" the pass rewrites the first two, resumes after them, and the
// emitted brace pairs with the untouched third: "{ {{". Neutralise instead looks at
// every adjacent pair, emitted or not: it puts a space between any two characters that
// together open or close a template, so a run of n braces becomes n braces separated
// by spaces, whatever n is. The proof is in template.go.
//
// # Example
//
//	shape.Mustache.Neutralise("{{{secret}}}")  // "{ { {secret} } }"
//	shape.Mustache.Neutralise(`{"a":1}`)       // unchanged
//	shape.Jinja.Neutralise("{% if x %}")       // "{ % if x % }"
package shape
