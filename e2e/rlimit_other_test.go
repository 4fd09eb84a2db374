//go:build !unix

package e2e

// openFileLimit is unknown here: no limit.
func openFileLimit() int { return 1 << 30 }
