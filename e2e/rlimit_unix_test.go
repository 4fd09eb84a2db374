//go:build unix

package e2e

import "syscall"

// openFileLimit is the hard limit on open files, which a Go program (aegis
// serve) raises its soft limit to when it starts.
func openFileLimit() int {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return 1 << 20
	}
	return int(min(l.Max, 1<<30))
}
