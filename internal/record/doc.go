// Package record owns the decision entry: [Entry], one per decision, with
// its capabilities ([Cap]) and digests ([Digest]), its canonical encoding,
// its hash, and the stored form of an entry line, written and read exactly
// as SPEC.md at the root of the repository defines them. It also holds the
// one conversion between a recorded capability and a
// [capability.Capability], both ways ([CapsOf], [AppendCapabilities]).
//
// It does no I/O. Package chain owns what surrounds entries on disk: the
// segment files, the hash links and seq numbers a log assigns, checkpoint
// and ack lines, keys, group commit, recovery and verification.
//
// # Encoding
//
// The canonical encoding is RFC 8785 (JCS) JSON of the entry without its
// "hash" field; an entry's hash is SHA-256 of [EntryDomain] and that
// encoding ([Entry.ComputeHash]). Every recordable entry has exactly one
// encoding, and the decoder accepts that encoding and nothing else, so an
// entry has one spelling and two parsers cannot read one line two ways
// (FuzzCanonical and FuzzDecode hold the encoder to a naive JCS
// implementation and the decoder to the encoder):
//
//	e := &record.Entry{Seq: 1, Time: now, Server: "fs", Tool: "read_file",
//		Caps:     record.CapsOf(v.Caps),
//		Decision: record.Allow, Mode: record.Enforce}
//	h, err := e.ComputeHash()
//
// # For a log
//
// A writer that numbers entries one at a time encodes each ahead of its
// place as a [Template] and splices in seq and prev when it has them
// ([Template.AppendLine]). A reader decodes an entry line strictly with
// [Decode] or, carving slices and interning strings from an [Arena] as a
// scan does, [DecodeIn]; a verifier that only places lines in a chain
// reads seq, prev and the stored hash with [Skim] and hashes the rest with
// a [Hasher]. [Fields] reads the log's other lines by the same rules.
package record
