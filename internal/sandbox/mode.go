package sandbox

import (
	"fmt"
	"runtime"
)

// Mode says how much of the sandbox a server must have to start.
type Mode uint8

const (
	// Off starts the server without a sandbox, with aegis's environment.
	Off Mode = iota
	// BestEffort applies what the kernel offers and reports the rest.
	BestEffort
	// Required refuses to start the server unless every part applies.
	Required
)

// String returns the mode as the configuration spells it.
func (m Mode) String() string {
	switch m {
	case Off:
		return "off"
	case BestEffort:
		return "best-effort"
	case Required:
		return "required"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode parses a mode as the configuration spells it: required,
// best-effort or off.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "off":
		return Off, nil
	case "best-effort":
		return BestEffort, nil
	case "required":
		return Required, nil
	}
	return Off, fmt.Errorf("sandbox: unknown mode %q; want required, best-effort or off", s)
}

// DefaultMode is the mode of a server whose configuration names none:
// best-effort on Linux, off elsewhere.
func DefaultMode() Mode {
	if runtime.GOOS == "linux" {
		return BestEffort
	}
	return Off
}
