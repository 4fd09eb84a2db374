//go:build !linux

package sandbox

import "runtime"

// ProbeKernel returns what the running kernel allows: on this system,
// nothing.
func ProbeKernel() Probe {
	why := "a sandbox needs Linux; " + runtime.GOOS + " gets the argument checks only"
	p := Probe{Missing: map[Part]string{}}
	for _, part := range Parts {
		p.Missing[part] = why
	}
	return p
}
