//go:build !linux

package proxy

// awaitExit returns false: elsewhere exec.Cmd.Wait waits as it does.
func awaitExit(int) bool { return false }
