//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
)

// Command returns a command that starts argv. On this system there is no
// sandbox: [Required] fails with an [*UnavailableError]; [BestEffort]
// starts the server bare and reports every part missing; [Off] starts it
// as before.
func Command(spec *Spec, argv []string) (*exec.Cmd, *Sandbox, error) {
	if spec == nil {
		spec = &Spec{}
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, nil, errors.New("sandbox: no command to run")
	}
	probe := spec.Probe
	if probe == nil {
		p := ProbeKernel()
		probe = &p
	}
	r := Report{Mode: spec.Mode}
	if spec.Mode != Off {
		r.Missing = probe.missing()
		if spec.Mode == Required {
			return nil, nil, &UnavailableError{Missing: r.Missing}
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = spec.Dir
	done := make(chan struct{})
	close(done)
	return cmd, &Sandbox{report: r, done: done}, nil
}

// IsInit reports whether this process is a sandbox's init: never, on this
// system.
func IsInit() bool { return false }

// Init is the sandbox's init; on this system there is none.
func Init() int { return 126 }
