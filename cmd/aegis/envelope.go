package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/envelope"
)

// errFound stops a chain scan at the entry sought.
var errFound = errors.New("found")

// cmdEnvelope prints the envelope of one chain entry: the call's arguments
// as forwarded (redacted), for an incident that asks what a call carried.
func cmdEnvelope(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("envelope", stderr)
	server := fs.String("server", "", "the `server` whose chain to read (default: the only one)")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 1 {
		return usageError(stderr, "usage: aegis envelope [--server NAME] SEQ")
	}
	seq, err := strconv.ParseUint(fs.Arg(0), 10, 64)
	if err != nil || seq == 0 {
		return usageError(stderr, "envelope: %q is not a chain sequence number (see aegis log)", fs.Arg(0))
	}
	dir, err := chainDir("", *server)
	if err != nil {
		return err
	}
	var ent *chain.Entry
	err = chain.Scan(dir, func(e *chain.Entry) error {
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
		return fmt.Errorf("no entry %d in %s", seq, dir)
	}
	if ent.Envelope.IsZero() {
		return fmt.Errorf("entry %d has no envelope (envelopes were off when it was recorded)", seq)
	}
	state, err := stateDir()
	if err != nil {
		return err
	}
	envDir := filepath.Join(state, "envelopes", filepath.Base(dir))
	rec, err := envelope.Find(envDir, envelope.Digest(ent.Envelope))
	if errors.Is(err, envelope.ErrNotFound) {
		return fmt.Errorf("entry %d: envelope %s is not in %s (deleted by retention, or lost)", seq, ent.Envelope, envDir)
	}
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "entry %d %s %s/%s: envelope %s\n%s\n", seq, ent.Decision, ent.Server, ent.Tool, ent.Envelope, b)
	return nil
}
