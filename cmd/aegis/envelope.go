package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/envelope"
	"github.com/aegis-mcp/aegis/internal/record"
)

// errFound stops a chain scan at the entry sought.
var errFound = errors.New("found")

// cmdEnvelope prints the envelope of one chain entry: the call's arguments
// as forwarded (redacted), for an incident that asks what a call carried.
func cmdEnvelope(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("envelope", stderr)
	server := fs.String("server", "", "the `server` whose chain to read (default: the only one)")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 1 {
		return usageError(stderr, "usage: aegis envelope [--server NAME] SEQ[@LANE]")
	}
	seq, n, ok := chain.ParseEntryName(fs.Arg(0))
	if !ok {
		return usageError(stderr, "envelope: %q is not a chain entry: want SEQ, or SEQ@LANE for a lane after the first (see aegis log)", fs.Arg(0))
	}
	name, lanes, err := chainLanes("", *server)
	if err != nil {
		return err
	}
	var ln chain.Lane
	for _, l := range lanes {
		if l.N == n {
			ln = l
		}
	}
	if ln.Dir == "" {
		return fmt.Errorf("no entry %s: server %q's chain has no lane %d", fs.Arg(0), name, n)
	}
	var ent *record.Entry
	err = chain.ScanFrom(ln.Dir, seq, func(e *record.Entry) error {
		if e.Seq == seq {
			c := *e
			ent = &c
			return errFound
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return err
	}
	if ent == nil {
		return fmt.Errorf("no entry %s in %s", ln.EntryName(seq), ln.Dir)
	}
	if ent.Envelope.IsZero() {
		return fmt.Errorf("entry %s has no envelope (envelopes were off when it was recorded)", ln.EntryName(seq))
	}
	state, err := stateDir()
	if err != nil {
		return err
	}
	// The lanes of a server share its envelopes, found by hash.
	envDir := filepath.Join(state, "envelopes", name)
	rec, err := envelope.Find(envDir, envelope.Digest(ent.Envelope))
	if errors.Is(err, envelope.ErrNotFound) {
		return fmt.Errorf("entry %s: envelope %s is not in %s (deleted by retention, or lost)", ln.EntryName(seq), ent.Envelope, envDir)
	}
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "entry %s %s %s: envelope %s\n%s\n", ln.EntryName(seq), ent.Decision, target(ent.Server, ent.Method, ent.Tool), ent.Envelope, b)
	return nil
}
