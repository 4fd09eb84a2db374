package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/plaintext"
	"github.com/aegis-mcp/aegis/internal/record"
)

func loadKey(path string) (ed25519.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pub, err := chain.ParsePublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pub, nil
}

// Exit statuses of verify beyond 0 (intact), 1 (could not check: no chain,
// an unreadable key) and 2 (usage).
const (
	exitCutShort = 3 // intact but cut short at the tail: nothing signed is missing, the tail is not attested
	exitTampered = 4 // altered in the middle
)

// cmdVerify checks a chain offline: every server's, unless --server or
// --chain names one. Exit status: 0 intact; 3 intact but cut short at the
// tail (a crash, or entries removed from the end); 4 altered in the
// middle; 1 when it could not check; 2 for bad usage.
func cmdVerify(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", stderr)
	dirFlag := fs.String("chain", "", "chain `directory` (default: the state directory's)")
	server := fs.String("server", "", "the `server` whose chain to verify")
	keyFlag := fs.String("key", "", "public key `file` (default: chain.pub in the chain directory; pass a copy kept elsewhere to rule out a replaced key)")
	all := fs.Bool("all", false, "verify every checkpoint's signature, not only the last")
	privFlag := fs.String("private-key", "", "the chain's private key `file` (chain.key), to check the ack line of entries not yet signed: whether this key's writer acknowledged them")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 0 {
		return usageError(stderr, "usage: aegis verify [--chain DIR | --server NAME] [--key FILE] [--all] [--private-key FILE]")
	}
	lanes, err := allLanes(*dirFlag, *server)
	if err != nil {
		return err
	}
	// Every lane of a server is signed by its key, kept in its first lane;
	// --key names the one key to check every lane with.
	keys := map[string]ed25519.PublicKey{}
	keyOf := func(ln chain.Lane) (ed25519.PublicKey, error) {
		path := *keyFlag
		if path == "" {
			path = filepath.Join(lanes[0].Dir, chain.PublicKeyFile)
			if srv := laneServer(ln); srv != "" {
				path = filepath.Join(filepath.Dir(ln.Dir), srv, chain.PublicKeyFile)
			}
		}
		if k, ok := keys[path]; ok {
			return k, nil
		}
		k, err := loadKey(path)
		keys[path] = k
		return k, err
	}
	opts := &chain.VerifyOptions{AllSignatures: *all, Strict: true}
	if *privFlag != "" {
		b, err := os.ReadFile(*privFlag)
		if err != nil {
			return err
		}
		if opts.AckKey, err = chain.ParsePrivateKey(b); err != nil {
			return fmt.Errorf("%s: %w", *privFlag, err)
		}
	}
	debug.SetGCPercent(400) // one pass over every byte, keeping little
	status := 0
	for i, ln := range lanes {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if ln.N > 1 && !ln.Written() {
			// A lane whose writer's Open failed after making its
			// directory. (One that opened and recorded nothing holds an
			// empty segment, and verifies as 0 entries.)
			fmt.Fprintf(stdout, "chain %s\nno entries: this lane was never written\n", ln.Dir)
			continue
		}
		pub, err := keyOf(ln)
		if err != nil {
			return err
		}
		st, err := verifyLane(ln.Dir, pub, opts, stdout)
		if err != nil {
			return err
		}
		// Altered anywhere outweighs cut short.
		if st == exitTampered || status == 0 {
			status = st
		}
	}
	if status != 0 {
		return exitError{status}
	}
	return nil
}

// verifyLane verifies the chain in dir and reports it; its status is
// verify's exit status for that chain alone.
func verifyLane(dir string, pub ed25519.PublicKey, opts *chain.VerifyOptions, stdout io.Writer) (int, error) {
	rep, err := chain.VerifyWith(dir, pub, opts)
	var be *chain.BreakError
	switch {
	case errors.As(err, &be):
		fmt.Fprintf(stdout, "chain %s\nTAMPERED: %s\n", dir, be)
		fmt.Fprintf(stdout, "verified before the break: %d entries\n", rep.Entries)
		return exitTampered, nil
	case err != nil:
		return 0, err
	}
	fmt.Fprintf(stdout, "chain %s\nkey %s\n", dir, chain.KeyID(pub))
	fmt.Fprintf(stdout, "%d entries, %d signed by %d checkpoints, %d segments, %d bytes\n",
		rep.Entries, rep.Signed, rep.Checkpoints, rep.Segments, rep.Bytes)
	fmt.Fprintf(stdout, "last hash %s\n", rep.LastHash)
	if rep.Truncated() {
		fmt.Fprintf(stdout, "TRUNCATED at the tail: %d entries after the last signature, %d torn bytes (a crash leaves this; so does removing entries from the end)\n",
			rep.Unsigned(), rep.TornBytes)
		switch {
		case rep.AckChecked:
			fmt.Fprintf(stdout, "the ack line at seq %d is this key's: its writer acknowledged the entries up to it (it signs them within 20 ms while it runs, or when it restarts)\n", rep.Acked)
		case rep.Acked > 0:
			fmt.Fprintf(stdout, "an ack line claims the entries up to seq %d were acknowledged by the writer (it signs them within 20 ms while it runs, or when it restarts); --private-key checks that claim\n", rep.Acked)
		}
		return exitCutShort, nil
	}
	fmt.Fprintln(stdout, "OK")
	return 0, nil
}

// cmdLog prints the most recent decisions.
func cmdLog(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("log", stderr)
	dirFlag := fs.String("chain", "", "chain `directory` (default: the state directory's)")
	server := fs.String("server", "", "the `server` whose decisions to show")
	n := fs.Int("n", 20, "how many recent decisions (0: all)")
	asJSON := fs.Bool("json", false, "one JSON entry per line")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 0 {
		return usageError(stderr, "usage: aegis log [--chain DIR | --server NAME] [-n N] [--json]")
	}
	lanes, err := allLanes(*dirFlag, *server)
	if err != nil {
		return err
	}
	if *n == 0 {
		// Everything: streamed, lanes merged by time, never held whole
		// (a million entries would be gigabytes).
		return chain.Merge(lanes, func(ln chain.Lane, e *record.Entry, verified bool) error {
			return printEntry(stdout, laneEntry{lane: ln, e: e, unverified: !verified}, *asJSON)
		})
	}
	// The last n of each lane, then the last n of those by time.
	var recent []laneEntry
	for _, ln := range lanes {
		ring, err := lastEntries(ln, *n)
		if err != nil {
			return err
		}
		sig, err := chain.LaneSignature(ln.Dir)
		if err != nil {
			return err
		}
		for i := range ring {
			ring[i].unverified = !sig.Covers(ring[i].e)
		}
		recent = append(recent, ring...)
	}
	sort.SliceStable(recent, func(i, j int) bool { return recent[i].e.Time.Before(recent[j].e.Time) })
	if len(recent) > *n {
		recent = recent[len(recent)-*n:]
	}
	for _, le := range recent {
		if err := printEntry(stdout, le, *asJSON); err != nil {
			return err
		}
	}
	return nil
}

// printEntry prints one entry of aegis log.
func printEntry(stdout io.Writer, le laneEntry, asJSON bool) error {
	e := le.e
	if asJSON {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if le.lane.N > 1 {
			// The entry as stored, and the lane that tells its seq from
			// lane 1's.
			b = fmt.Appendf(b[:len(b)-1], `,"lane":%d}`, le.lane.N)
		}
		if le.unverified {
			b = append(b[:len(b)-1], `,"unverified":true}`...)
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	fmt.Fprintf(stdout, "%6s %s %-5s %s %s", le.lane.EntryName(e.Seq), e.Time.Local().Format("2006-01-02 15:04:05"), e.Decision, target(e.Server, e.Method, e.Tool), shown(e.Principal))
	if len(e.Roles) > 0 {
		roles := make([]string, len(e.Roles))
		for i, r := range e.Roles {
			roles[i] = shown(r)
		}
		fmt.Fprintf(stdout, " (roles %s)", strings.Join(roles, ", "))
	}
	if e.Mode == record.Shadow {
		fmt.Fprintf(stdout, " [shadow, would %s]", e.Would)
	}
	if le.unverified {
		fmt.Fprint(stdout, " [UNVERIFIED: after the last signature]")
	}
	fmt.Fprintln(stdout)
	for _, c := range e.Caps {
		fmt.Fprintf(stdout, "         %s\n", escaped(capLine(capJSON{Kind: c.Kind, Path: c.Path, Subtree: c.Subtree, Scheme: c.Scheme, Host: c.Host, Port: c.Port, URL: c.URL, Program: c.Program, Argv: c.Argv, Shell: c.Shell, Command: c.Command, IDKind: c.IDKind, ID: c.ID, Unproven: c.Unproven})))
	}
	_, err := fmt.Fprintf(stdout, "         %s\n", escaped(e.Reason))
	return err
}

// shown is s for a terminal: quoted when it holds anything but printable
// text. A principal or role comes from an identity provider's claims or a
// caller's flag, and an escape sequence in one must not reach the
// operator's terminal (to rewrite the lines around it).
func shown(s string) string {
	if strings.ContainsRune(s, '"') {
		// A name is quoted when it is not plain: one with a quote
		// could pass for another's quoted form.
		return strconv.Quote(s)
	}
	return escaped(s)
}

// escaped is a line of text for a terminal: quoted when it holds a
// control character or invalid UTF-8. A capability is derived from the
// model's arguments (a path may hold an escape sequence, a carriage
// return or a newline, and is canonicalised as the file name it is), and
// a reason or a call's arguments may carry the model's text: none may
// rewrite the lines around it. Unlike shown, a double quote alone leaves
// the text as it is (a reason quotes what it names).
func escaped(s string) string { return plaintext.Quote(s) }

// lastEntries returns the last n entries of a lane (all of them when n is
// 0), as chain.LastEntries reads them.
func lastEntries(ln chain.Lane, n int) ([]laneEntry, error) {
	ents, err := chain.LastEntries(ln.Dir, n)
	out := make([]laneEntry, len(ents))
	for i, e := range ents {
		out[i] = laneEntry{lane: ln, e: e}
	}
	return out, err
}

// A laneEntry is an entry and the lane it is in.
type laneEntry struct {
	lane chain.Lane
	e    *record.Entry
	// unverified: no signature of the chain's key covers it
	// (chain.Signature.Covers).
	unverified bool
}

// cmdKey prints the chain's public key, to keep a copy apart from the chain.
func cmdKey(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("key", stderr)
	dirFlag := fs.String("chain", "", "chain `directory`")
	server := fs.String("server", "", "the `server` whose chain key to print")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 0 {
		return usageError(stderr, "usage: aegis key [--chain DIR | --server NAME]")
	}
	_, lanes, err := chainLanes(*dirFlag, *server)
	if err != nil {
		return err
	}
	// Every lane of a server is signed by the first lane's key.
	pub, err := loadKey(filepath.Join(lanes[0].Dir, chain.PublicKeyFile))
	if err != nil {
		return err
	}
	stdout.Write(chain.MarshalPublicKey(pub))
	return nil
}

// target names what an entry decided: "fs/read_file" for a tool call,
// "fs resources/read file:///x" for a request of another method (its
// target quoted when it has spaces or is empty of meaning).
func target(server, method, tool string) string {
	// A tool's name is the model's choice, whatever the server lists:
	// one that is not plain text is quoted, as are a server's and a
	// method's.
	server, method = shown(server), shown(method)
	switch {
	case method == "":
		return server + "/" + shown(tool)
	case tool == "":
		return server + " " + method
	case strings.ContainsAny(tool, " \t\n\"") || shown(tool) != tool:
		return fmt.Sprintf("%s %s %q", server, method, tool)
	}
	return server + " " + method + " " + tool
}
