package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// clientConfigs are the configuration files, under a home, of the MCP
// clients that launch aegis: whoever rewrites one takes aegis out of the
// client's path at its next start (or, with Claude Code's hooks, runs
// commands), and they hold other servers' credentials in their env.
var clientConfigs = []string{
	".config/Claude/claude_desktop_config.json",
	"Library/Application Support/Claude/claude_desktop_config.json",
	".claude.json",
	".claude/settings.json",
	".claude/settings.local.json",
	".cursor/mcp.json",
	".codeium/windsurf/mcp_config.json",
	".config/Code/User/mcp.json",
	".config/Code/User/settings.json",
	"Library/Application Support/Code/User/mcp.json",
	"Library/Application Support/Code/User/settings.json",
	".gemini/settings.json",
}

// launchers returns what starts aegis and so decides whether it runs: this
// executable, and the MCP clients' configuration files under home and
// under the home of the user running aegis, those that exist: a client
// that is not installed launches nothing (planting a configuration for
// one is a write to the home like any other, the policy's to judge).
func launchers(home string) []string {
	var out []string
	if exe, err := os.Executable(); err == nil {
		out = append(out, exe)
	}
	homes := []string{home}
	if h, err := os.UserHomeDir(); err == nil && h != home {
		homes = append(homes, h)
	}
	for _, h := range homes {
		if h == "" || !filepath.IsAbs(h) {
			continue
		}
		for _, f := range clientConfigs {
			if p := filepath.Join(h, f); exists(p) {
				out = append(out, p)
			}
		}
	}
	return out
}

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

// exists reports whether p names a file or directory (a link is followed).
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
