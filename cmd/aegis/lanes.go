package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/aegis-mcp/aegis/internal/chain"
)

// chainLanes resolves the chains a command reads: --chain DIR alone (lane
// 0), else every lane of --server NAME's chain in the state directory,
// else those of the only server there. It returns the server's name (""
// for --chain). A server that has recorded nothing yet has its first
// lane, empty. Package chain owns the lanes themselves (chain.Lanes).
func chainLanes(dir, server string) (string, []chain.Lane, error) {
	if dir != "" {
		return "", []chain.Lane{{Dir: dir}}, nil
	}
	state, err := stateDir()
	if err != nil {
		return "", nil, err
	}
	root := filepath.Join(state, "chain")
	if server == "" {
		names, err := chain.Servers(root)
		if err != nil {
			return "", nil, err
		}
		switch len(names) {
		case 0:
			return "", nil, fmt.Errorf("no chain in %s: nothing has been recorded yet (or pass --chain DIR)", root)
		case 1:
			server = names[0]
		default:
			return "", nil, fmt.Errorf("%s holds the chains of %d servers (%s): say which with --server NAME", root, len(names), strings.Join(names, ", "))
		}
	} else if err := chain.CheckServerName(server); err != nil {
		return "", nil, err
	}
	lanes, err := chain.Lanes(root, server)
	if err != nil {
		return "", nil, err
	}
	if len(lanes) == 0 {
		lanes = []chain.Lane{{N: 1, Dir: chain.LaneDir(root, server, 1)}}
	}
	return server, lanes, nil
}

// allLanes is chainLanes for the commands that read every server's chain
// (verify, log, recheck): without --server and --chain, and with several
// servers in the state directory, every lane of every server.
func allLanes(dir, server string) ([]chain.Lane, error) {
	if dir == "" && server == "" {
		state, err := stateDir()
		if err != nil {
			return nil, err
		}
		if all, err := chain.AllLanes(filepath.Join(state, "chain")); err != nil || len(all) > 0 && laneServer(all[0]) != laneServer(all[len(all)-1]) {
			return all, err
		}
	}
	_, lanes, err := chainLanes(dir, server)
	return lanes, err
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
