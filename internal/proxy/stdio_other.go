//go:build !linux

package proxy

import "os"

// reopenPipe returns nil: elsewhere, opening /dev/fd/N may duplicate the
// descriptor (sharing its open file description, and so its flags) rather
// than open the pipe afresh, and there may be no such path at all.
func reopenPipe(*os.File, int) *os.File { return nil }
