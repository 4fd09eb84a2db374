package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/aegis-mcp/aegis/internal/chain"
)

// chainLanes resolves the chains a command reads: --chain DIR alone (lane
// 0), else the lanes of --server NAME's chain in the state directory, or
// of the only server there (chain.ServerLanes). It returns the server's
// name ("" for --chain).
func chainLanes(dir, server string) (string, []chain.Lane, error) {
	if dir != "" {
		return "", []chain.Lane{{Dir: dir}}, nil
	}
	state, err := stateDir()
	if err != nil {
		return "", nil, err
	}
	return chain.ServerLanes(filepath.Join(state, "chain"), server)
}

// allLanes is chainLanes for the commands that read every server's chain
// (verify, log, recheck): without --server and --chain, every lane of
// every server in the state directory.
func allLanes(dir, server string) ([]chain.Lane, error) {
	if dir != "" || server != "" {
		_, lanes, err := chainLanes(dir, server)
		return lanes, err
	}
	state, err := stateDir()
	if err != nil {
		return nil, err
	}
	return chain.AllLanes(filepath.Join(state, "chain"))
}

// laneServer returns the server a lane of the state directory records; ""
// for a chain named by --chain alone.
func laneServer(ln chain.Lane) string {
	if ln.N == 0 {
		return ""
	}
	server, _, _ := chain.ParseLaneName(filepath.Base(ln.Dir))
	return server
}

// warnEach writes err to stderr as warnings, one line for each error it
// joins (errors.Join).
func warnEach(stderr io.Writer, err error) {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		fmt.Fprintf(stderr, "aegis: %v\n", e)
	}
}
