package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/pin"
)

// cmdPins lists, accepts and forgets the pinned tool definitions of a
// server: `aegis pins [list|accept|forget] --server NAME [TOOL...]`.
func cmdPins(argv []string, stdout, stderr io.Writer) error {
	verb := "list"
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "-") {
		verb, argv = argv[0], argv[1:]
	}
	fs := newFlags("pins "+verb, stderr)
	server := fs.String("server", "", "the server `name` whose pins to use (default: the only server with pins)")
	cfgPath := fs.String("config", "", "a configuration `file` whose state: postgres holds the pins (replicas of aegis serve); then --server is needed")
	if err := fs.Parse(argv); err != nil {
		return exitError{2}
	}
	if *cfgPath != "" {
		cfg, err := config.Load(*cfgPath)
		if err != nil {
			return err
		}
		if cfg.StatePostgres != "" {
			if *server == "" {
				return usageError(stderr, "pins: the pins are in PostgreSQL: say whose with --server")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := pin.OpenPostgres(ctx, cfg.StatePostgres, *server)
			if err != nil {
				return err
			}
			defer st.Close()
			return pinsVerb(verb, st, fs.Args(), stdout, stderr)
		}
	}
	if verb == "list" && *server == "" {
		// Every server's, each under its name, when there are several.
		if fs.NArg() > 0 {
			return usageError(stderr, "usage: aegis pins list [--server NAME]")
		}
		if files := allPinFiles(); len(files) > 1 {
			for i, f := range files {
				if i > 0 {
					fmt.Fprintln(stdout)
				}
				fmt.Fprintf(stdout, "server %s\n", strings.TrimSuffix(filepath.Base(f), ".json"))
				if err := listPins(f, stdout); err != nil {
					return err
				}
			}
			return nil
		}
	}
	path, err := pinFile(*server)
	if err != nil {
		return err
	}
	if verb == "list" || verb == "accept" || verb == "forget" {
		st, err := openPins(path)
		if err != nil {
			return err
		}
		return pinsVerb(verb, st, fs.Args(), stdout, stderr)
	}
	return usageError(stderr, "unknown pins command %q (want list, accept or forget)", verb)
}

// pinsVerb runs `aegis pins VERB ARGS` on the pins in s.
func pinsVerb(verb string, s *pin.Store, args []string, stdout, stderr io.Writer) error {
	switch verb {
	case "list":
		if len(args) > 0 {
			return usageError(stderr, "usage: aegis pins list [--server NAME]")
		}
		return printPins(s, stdout)
	case "accept":
		done, err := s.Accept(args, time.Now())
		if err != nil {
			return err
		}
		if len(done) == 0 {
			fmt.Fprintln(stdout, "no tool is held")
		}
		for _, name := range done {
			fmt.Fprintf(stdout, "accepted %s: its new definition is pinned\n", name)
		}
		return nil
	case "forget":
		if len(args) == 0 {
			return usageError(stderr, "usage: aegis pins forget [--server NAME] TOOL...")
		}
		if err := s.Forget(args); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "forgot %s: the next definition listed is pinned\n", strings.Join(args, ", "))
		return nil
	}
	return usageError(stderr, "unknown pins command %q (want list, accept or forget)", verb)
}

// pinFile resolves the pin file of server in the state directory: the
// only one there when server is empty (config.State.ServerPinFile).
func pinFile(server string) (string, error) {
	state, err := config.DefaultState()
	if err != nil {
		return "", err
	}
	return state.ServerPinFile(server)
}

// allPinFiles lists the pin files in the state directory, sorted.
func allPinFiles() []string {
	state, err := config.DefaultState()
	if err != nil {
		return nil
	}
	return state.PinFiles()
}

// openPins opens an existing pin file: accepting or forgetting in a file
// that does not exist is a mistyped server name, not an empty store.
func openPins(path string) (*pin.Store, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no pins at %s", path)
	}
	return pin.Open(path)
}

func listPins(path string, stdout io.Writer) error {
	s, err := openPins(path)
	if err != nil {
		return err
	}
	return printPins(s, stdout)
}

// printPins lists the pins of s.
func printPins(s *pin.Store, stdout io.Writer) error {
	all, err := s.All()
	if err != nil {
		return err
	}
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := all[name]
		// The names are the server's: one that is not plain text is
		// quoted, for the terminal's sake.
		state := "pinned"
		if p.Held() {
			state = "HELD (schema changed " + p.Pending.Seen.Format(time.RFC3339) + "; aegis pins accept " + shown(name) + ")"
		}
		fmt.Fprintf(stdout, "%-28s %s  shape %.12s  full %.12s  since %s\n", shown(name), state, p.Shape, p.Full, p.Pinned.Format(time.RFC3339))
	}
	return nil
}
