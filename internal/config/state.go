package config

import (
	"fmt"
	"os"
	"path/filepath"
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

// Config is the configuration file's default path.
func (s State) Config() string { return filepath.Join(string(s), "aegis.yaml") }

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
func (s State) Logs() string                   { return filepath.Join(string(s), "logs") }
func (s State) StderrLog(server string) string { return filepath.Join(s.Logs(), server+".stderr.log") }
