package config

import (
	"fmt"
	"path/filepath"
	"slices"
)

// protect returns the paths no wrapped server may read or write (DESIGN.md
// R34, gateway.RuleSelf): the files the configuration was read from and
// the state directory, if state is set. Each path is listed in the forms a
// server's capability can take: absolute and clean as spelled here (a
// server that is not local has its paths canonicalised lexically), and
// with its symbolic links resolved on this machine, as a local server's
// are. A path that does not exist yet (a state directory aegis has not
// made) is resolved as far as it exists, as a capability is. The result is
// sorted.
func protect(files []string, state State) ([]string, error) {
	paths := slices.Clone(files)
	if state != "" {
		paths = append(paths, string(state))
	}
	var out []string
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("protecting %s: %w", p, err)
		}
		resolved, err := resolvePattern(abs)
		if err != nil {
			// aegis cannot tell where a server reaching this path would
			// land: it cannot promise to keep it from the server.
			return nil, fmt.Errorf("protecting %s: %w", p, err)
		}
		out = append(out, abs, resolved)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
