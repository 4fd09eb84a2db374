// Package schema owns the closed-schema check of a tool call's arguments (DESIGN.md
// R11): the arguments are validated against the input schema the server listed, and
// that aegis pinned, as if every object in them were declared with
// `additionalProperties: false`. Types, enums, const, required keys, string lengths and
// patterns, numeric bounds, array sizes and formats are enforced by a real JSON Schema
// validator (github.com/santhosh-tekuri/jsonschema/v6). Configured numeric fields are
// clamped into a range instead of denied ([Options.Clamp]); every other off-schema value
// is denied. Nothing off-schema is forwarded as it is.
//
// It leaves the rest to others: package pin keeps the definition and its hashes, the
// gateway decides what a [Violation] becomes (a denial naming it) and records the
// clamped pointers, and the configuration says which fields are clamped.
//
// # Closing
//
// [Compile] rewrites the schema before compiling it. Every schema that applies to a
// value of its own (the root, and the schemas under properties, patternProperties,
// additionalProperties, items, prefixItems, additionalItems, contains and the
// unevaluated keywords) gets `unevaluatedProperties: false`, unless it is the
// always-true schema (`true`, or `{}` with annotations only), which stays open: the
// server said the value may be anything. The arguments object itself is always closed.
//
// unevaluatedProperties, unlike additionalProperties, sees the properties that the
// in-place subschemas evaluated: allOf, anyOf, oneOf, $ref, if/then/else and
// dependentSchemas. So {"allOf":[{a},{b}]} accepts {"a":..,"b":..} and refuses a third
// key, and a key that only a failing anyOf branch declares is refused (closing each
// branch with additionalProperties, or merging the branches' names, would either deny
// the valid combination or let that key through unchecked).
//
// A server cannot reopen what aegis closes: `additionalProperties: true` and
// `unevaluatedProperties: true` (or `{}`) are removed wherever they appear, in-place
// subschemas included, since one of them inside an allOf branch would mark every key
// evaluated. An additionalProperties, unevaluatedProperties or patternProperties that
// holds a real schema stays: it declares a map whose values that schema constrains.
// [Options.Open] names argument objects that the operator leaves as the server
// declared them.
//
// One case is denied although the server would accept it: two allOf branches that both
// declare the same object-valued property, each with different members, close that
// object twice, once in each branch, so a value combining both branches' members fails.
//
// # Drafts
//
// `$schema` is honoured for drafts 4, 6, 7, 2019-09 and 2020-12; without one, 2020-12
// (the MCP default). Schemas of drafts 4 to 7 are translated to 2020-12 first, since
// only 2019-09 and later have unevaluatedProperties: items arrays become prefixItems,
// dependencies splits into dependentRequired and dependentSchemas, the boolean
// exclusiveMaximum of draft 4 becomes numeric, the siblings of $ref are dropped (those
// drafts ignore them), and keywords those drafts do not know are dropped rather than
// brought to life. In 2019-09 and 2020-12 schemas, dependencies, which those drafts
// do not know but the validator would apply, is dropped at every level. Any other
// `$schema` is refused.
//
// # What compiles
//
// A schema is refused, so that every call to the tool is denied with the reason, when
// the validator cannot compile it (an invalid keyword value, a pattern Go's RE2 cannot
// compile), when a $ref leaves the document (only "#..." references are allowed, and
// nothing is ever loaded: no file, no network), when a $ref points at anything but a
// schema position, for $dynamicRef, $recursiveRef, an $id or $schema below the root, a
// number without an exact IEEE 754 double value, an in-place $ref cycle, and a schema
// whose evaluation could grow exponentially with the depth of the arguments.
//
// # Formats
//
// format is asserted for the formats the validator knows (date-time, email, uuid,
// ipv4, uri, regex, ...), as draft 7 does and as the servers' own validators usually
// do: a string the server declared to be a uuid cannot carry "../../etc". Unknown
// format names are annotations.
//
// # Numbers
//
// A number in the arguments must have an exact IEEE 754 double value, as for the
// chain's canonical encoding: 1e400, 9007199254740993 and 0.10000000000000001 are
// denied, since aegis and a server reading doubles would disagree on them. Integers
// follow the specification: 5.0 is an integer. String lengths count code points.
//
// # Fast path
//
// Compile also compiles the closed schema into a small validator of its own, when the
// schema uses only keywords whose evaluation needs no in-place subschema: type,
// properties, required, additionalProperties, unevaluatedProperties (as closing adds
// it, or a schema), items as one schema, minItems, maxItems, uniqueItems, enum, const,
// minLength, maxLength, pattern, format, the numeric bounds, multipleOf,
// minProperties, maxProperties, dependentRequired, the boolean schemas and the
// annotations. That covers the schemas zod and the reference servers emit. It reads
// the decoded arguments directly, numbers as exact decimals, and passes a valid call
// without the validator and without allocating (a format check boxes the string). A
// call it does not pass, it hands to the validator, which decides and explains it as
// before: the fast path can only confirm what the validator would pass. A schema with
// $ref, allOf, anyOf, oneOf, not, if, patternProperties, propertyNames,
// dependentSchemas, prefixItems (or a tuple items), contains or unevaluatedItems
// anywhere has every call checked by the validator.
//
// # Example
//
//	s, err := schema.Compile(def.InputSchema, &schema.Options{
//		Clamp: map[string]schema.Range{"/limit": schema.Ceiling(100)},
//	})
//	if err != nil {
//		return deny(err) // every call to this tool
//	}
//	out, clamped, err := s.Check(arguments)
//	if err != nil {
//		return deny(err) // a *Violation
//	}
//	if out != nil {
//		arguments = out // record clamped in the audit entry
//	}
package schema
