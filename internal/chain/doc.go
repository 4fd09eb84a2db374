// Package chain owns the decision log: a tamper-evident, append-only chain
// with one [record.Entry] per decision, hash-linked and signed, stored in a
// directory of JSON Lines segment files. It owns the segments, the links
// and seq numbers it assigns, checkpoint and ack lines, keys, group commit
// and crash recovery, offline verification, the readers that recheck and
// aegis log use, and a server's lanes: the chains that several writers
// recording one server keep side by side under one key. Package record owns the entry itself: its fields,
// canonical encoding and hash.
//
// It stores decisions as data: it imports nothing of the engine that makes
// them. The raw arguments of a call are not in the chain (they go to the
// envelope, a separate store); the derived capabilities are, so a chain
// shows the paths, hosts and ids that calls named. SPEC.md at the root of
// the repository defines the format precisely enough to verify a chain
// without this package.
//
// # Writing
//
// [Open] a directory and [Log.Append] entries. Append returns once the
// entry is durable; concurrent Appends share one write and one fsync
// (group commit), and a batch ends with an ack line marking its last entry.
// A checkpoint, an ed25519 signature over the last entry's seq and hash,
// signs every batch before it; one comes within 20 ms of an ack, off the
// appenders' path (ack.go):
//
//	l, err := chain.Open(dir, nil)
//	...
//	seq, hash, err := l.Append(ctx, &record.Entry{
//		Session: sid, Principal: "alice", Origin: "interactive",
//		Server: "fs", Tool: "read_file",
//		Caps:     []record.Cap{{Kind: "fs.read", Path: "/home/alice/notes.md"}},
//		Decision: record.Allow, Mode: record.Enforce, Rules: []string{"notes"},
//		PolicyHash: ph, ArgsHash: ah,
//	})
//	if err != nil {
//		// not recorded: the call must not go through
//	}
//
// # Durability
//
// What is durable: every entry for which Append returned nil, with its
// checkpoint or its ack (R25). An acknowledged entry may be unsigned for up
// to 20 ms, or, after a crash or a failed write, until the chain is opened
// again, which signs it first. What is not: an entry whose Append returned an error or
// had not returned when the process or machine stopped; Open cuts such
// entries off if they reached the disk. After a write or fsync error the Log
// refuses every further Append until it is reopened. Open reads only the
// end of the chain, from the entry the last checkpoint signs: its time
// does not grow with the chain, and the rest is [Verify]'s to check.
//
// # Lanes
//
// A chain has one writer. When several processes record one server, each
// takes the first lane of the server's chain that no other holds
// ([OpenLane]): root/SERVER is lane 1, root/SERVER@2 lane 2, up to
// [MaxLanes]. Each lane is a whole chain, verified on its own; all are
// signed with lane 1's key ([Options.KeyDir]). [CheckServerName] keeps '@'
// out of server names, so no lane is another server's. [TidyLanes] signs
// the tail a crash left in a lane nobody holds; [Lanes] and [Servers] list
// what readers read; [Lane.EntryName] and [ParseEntryName] name an entry
// of lane N >= 2 SEQ@N:
//
//	l, ln, err := chain.OpenLane(root, "fs", nil)
//	...
//	err = chain.TidyLanes(root, "fs", ln, nil) // the lanes it could not sign
//
// # Verifying and reading
//
// [Verify] checks a chain offline with the public key alone and tells a
// chain cut short at the tail (a crash, or a suffix removed) from one
// altered in the middle (a [*BreakError]). [Scan] reads the entries in
// order for recheck; [ScanMap] also runs a step on each entry on all cores
// as the entries are decoded (recheck's new decision), and hands the
// results on in order.
//
// Both readers share one pipeline: a goroutine reads the segment files in
// blocks, workers parse whole blocks in parallel, and the caller's
// goroutine checks the order (seq, links, checkpoints) block by block.
// Verify hashes each line as its worker parses it and reads only seq, prev
// and the stored hash from a signed line; Scan decodes every line strictly
// and interns the strings that repeat from entry to entry.
package chain
