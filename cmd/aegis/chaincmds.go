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
	"strings"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/config"
)

// chainDir resolves the chain a command reads: --chain DIR, else the chain
// of --server NAME in the state directory, else the only chain there.
func chainDir(dir, server string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	state, err := stateDir()
	if err != nil {
		return "", err
	}
	root := filepath.Join(state, "chain")
	if server != "" {
		if err := config.CheckServerName(server); err != nil {
			return "", err
		}
		return filepath.Join(root, server), nil
	}
	ents, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		return "", fmt.Errorf("no chain in %s: nothing has been recorded yet (or pass --chain DIR)", root)
	case 1:
		return filepath.Join(root, names[0]), nil
	}
	return "", fmt.Errorf("%s holds the chains of %d servers (%s): say which with --server NAME", root, len(names), strings.Join(names, ", "))
}

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

// cmdVerify checks a chain offline. Exit status: 0 intact; 3 intact but cut
// short at the tail (a crash, or entries removed from the end: nothing
// signed is missing, but the tail is not attested); 1 altered in the middle.
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
	dir, err := chainDir(*dirFlag, *server)
	if err != nil {
		return err
	}
	keyPath := *keyFlag
	if keyPath == "" {
		keyPath = filepath.Join(dir, chain.PublicKeyFile)
	}
	pub, err := loadKey(keyPath)
	if err != nil {
		return err
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
	rep, err := chain.VerifyWith(dir, pub, opts)
	var be *chain.BreakError
	switch {
	case errors.As(err, &be):
		fmt.Fprintf(stdout, "TAMPERED: %s\n", be)
		fmt.Fprintf(stdout, "verified before the break: %d entries\n", rep.Entries)
		return exitError{1}
	case err != nil:
		return err
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
		return exitError{3}
	}
	fmt.Fprintln(stdout, "OK")
	return nil
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
	dir, err := chainDir(*dirFlag, *server)
	if err != nil {
		return err
	}
	var ring []*chain.Entry
	err = chain.Scan(dir, func(e *chain.Entry) error {
		c := *e
		ring = append(ring, &c)
		if *n > 0 && len(ring) > *n {
			ring = ring[1:]
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range ring {
		if *asJSON {
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s\n", b)
			continue
		}
		fmt.Fprintf(stdout, "%6d %s %-5s %s/%s %s", e.Seq, e.Time.Local().Format("2006-01-02 15:04:05"), e.Decision, e.Server, e.Tool, e.Principal)
		if e.Mode == chain.Shadow {
			fmt.Fprintf(stdout, " [shadow, would %s]", e.Would)
		}
		fmt.Fprintln(stdout)
		for _, c := range e.Caps {
			fmt.Fprintf(stdout, "         %s\n", capLine(capJSON{Kind: c.Kind, Path: c.Path, Scheme: c.Scheme, Host: c.Host, Port: c.Port, URL: c.URL, Program: c.Program, Argv: c.Argv, Shell: c.Shell, Command: c.Command, IDKind: c.IDKind, ID: c.ID}))
		}
		fmt.Fprintf(stdout, "         %s\n", e.Reason)
	}
	return nil
}

// cmdKey prints the chain's public key, to keep a copy apart from the chain.
func cmdKey(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("key", stderr)
	dirFlag := fs.String("chain", "", "chain `directory`")
	server := fs.String("server", "", "the `server` whose chain key to print")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 0 {
		return usageError(stderr, "usage: aegis key [--chain DIR | --server NAME]")
	}
	dir, err := chainDir(*dirFlag, *server)
	if err != nil {
		return err
	}
	pub, err := loadKey(filepath.Join(dir, chain.PublicKeyFile))
	if err != nil {
		return err
	}
	stdout.Write(chain.MarshalPublicKey(pub))
	return nil
}
