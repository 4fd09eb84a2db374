package main

import (
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
	if err := fs.Parse(argv); err != nil {
		return exitError{2}
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
	switch verb {
	case "list":
		if fs.NArg() > 0 {
			return usageError(stderr, "usage: aegis pins list [--server NAME]")
		}
		return listPins(path, stdout)
	case "accept":
		s, err := openPins(path)
		if err != nil {
			return err
		}
		done, err := s.Accept(fs.Args(), time.Now())
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
		if fs.NArg() == 0 {
			return usageError(stderr, "usage: aegis pins forget [--server NAME] TOOL...")
		}
		s, err := openPins(path)
		if err != nil {
			return err
		}
		if err := s.Forget(fs.Args()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "forgot %s: the next definition listed is pinned\n", strings.Join(fs.Args(), ", "))
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
		state := "pinned"
		if p.Held() {
			state = "HELD (schema changed " + p.Pending.Seen.Format(time.RFC3339) + "; aegis pins accept " + name + ")"
		}
		fmt.Fprintf(stdout, "%-28s %s  shape %.12s  full %.12s  since %s\n", name, state, p.Shape, p.Full, p.Pinned.Format(time.RFC3339))
	}
	return nil
}
