package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// State is aegis's state directory, and where in it each thing is kept:
//
//	aegis.yaml                   the configuration, unless --config says otherwise
//	chain/SERVER[@N]/            each server's decision chain, in lanes (package chain)
//	pins/SERVER.json             each server's pinned tool definitions (package pin)
//	envelopes/SERVER/            each server's redacted call inputs (package envelope)
//	logs/SERVER.stderr.log       each server's stderr, rotated (package proxy)
//
// SERVER is a configured name, which [CheckServerName] keeps from naming
// anything outside its directory.
type State string

// DefaultState is $AEGIS_HOME, else $XDG_STATE_HOME/aegis, else
// ~/.local/state/aegis.
func DefaultState() (State, error) {
	if d := os.Getenv("AEGIS_HOME"); d != "" {
		return State(d), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return State(filepath.Join(d, "aegis")), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory: set AEGIS_HOME (%v)", err)
	}
	return State(filepath.Join(home, ".local", "state", "aegis")), nil
}

// Config is the configuration file inside the state directory: the default
// when AEGIS_HOME names the state directory (see [DefaultConfig]).
func (s State) Config() string { return filepath.Join(string(s), "aegis.yaml") }

// DefaultConfig is the configuration file aegis reads without --config:
// $AEGIS_HOME/aegis.yaml when AEGIS_HOME is set (one directory holds
// everything); otherwise the user's configuration directory's,
// $XDG_CONFIG_HOME/aegis/aegis.yaml or ~/.config/aegis/aegis.yaml, where the
// README puts it, unless only the state directory holds one (where aegis
// looked before).
func DefaultConfig(state State) string {
	if os.Getenv("AEGIS_HOME") != "" {
		return state.Config()
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return state.Config()
		}
		dir = filepath.Join(home, ".config")
	}
	p := filepath.Join(dir, "aegis", "aegis.yaml")
	if _, err := os.Stat(p); err != nil {
		if _, err := os.Stat(state.Config()); err == nil {
			return state.Config()
		}
	}
	return p
}

// Chains is the directory of every server's chain lanes.
func (s State) Chains() string { return filepath.Join(string(s), "chain") }

// Pins is the directory of the pin files, and PinFile one server's.
func (s State) Pins() string                 { return filepath.Join(string(s), "pins") }
func (s State) PinFile(server string) string { return filepath.Join(s.Pins(), server+".json") }

// Envelopes is one server's envelope directory.
func (s State) Envelopes(server string) string {
	return filepath.Join(string(s), "envelopes", server)
}

// Logs is the directory of the servers' stderr logs, and StderrLog one
// server's.
// Approvals is the store of the questions put to a person (R21), which
// `aegis run` holds calls on and `aegis approvals` answers.
func (s State) Approvals() string { return filepath.Join(string(s), "approvals.db") }

func (s State) Logs() string                   { return filepath.Join(string(s), "logs") }
func (s State) StderrLog(server string) string { return filepath.Join(s.Logs(), server+".stderr.log") }

// PinFiles lists the pin files in the state directory, sorted.
func (s State) PinFiles() []string {
	files, _ := filepath.Glob(filepath.Join(s.Pins(), "*.json"))
	return files
}

// ServerPinFile is server's pin file, or the only one in the state
// directory when server is "". With none, or several, it says so.
func (s State) ServerPinFile(server string) (string, error) {
	if server != "" {
		if err := CheckServerName(server); err != nil {
			return "", err
		}
		return s.PinFile(server), nil
	}
	files := s.PinFiles()
	switch len(files) {
	case 0:
		return "", fmt.Errorf("no pins in %s: no server has listed its tools through aegis yet", s.Pins())
	case 1:
		return files[0], nil
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	return "", fmt.Errorf("%s holds the pins of %d servers (%s): say which with --server NAME", s.Pins(), len(names), strings.Join(names, ", "))
}
