//go:build !linux

package proxy

import (
	"io"
	"os"
)

// reopenPipe returns nil: elsewhere, opening /dev/fd/N may duplicate the
// descriptor (sharing its open file description, and so its flags) rather
// than open the pipe afresh, and there may be no such path at all.
func reopenPipe(*os.File, int) *os.File { return nil }

// newRawPipe returns nil: elsewhere, pipes are read and written as
// *os.File.
func newRawPipe(*os.File) *rawPipe { return nil }

// A rawPipe is never made here.
type rawPipe struct{ io.ReadWriter }

// socketReader returns nil: sockets are read as they are.
func socketReader(*os.File) io.ReadCloser { return nil }

// socketWriter returns nil: sockets are written as they are.
func socketWriter(*os.File) io.WriteCloser { return nil }

// A bell is never made here: readers hand the client's input over through
// relay.idle.
type bell struct{}

func newBell() *bell     { return nil }
func (*bell) ring() bool { return false }
func (*bell) silence()   {}
func (*bell) wait() bool { return false }
func (*bell) close()     {}
