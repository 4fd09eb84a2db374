package proxy

import "os"

// This file gives the relay a client it can wait for without a thread.

// ClientStdio returns the files to read the client's messages from and write
// aegis's to, given aegis's standard input and output, and a function that
// closes what it opened.
//
// A standard input or output that is a pipe (or a FIFO) is reopened through
// /proc/self/fd: that gives aegis a new open file description of the same
// pipe, its own, which it makes non-blocking so that Go's poller waits for
// the client instead of a thread blocked in read(2), which the runtime must
// watch and hand its work away from. The description the client (or
// whoever started aegis) shares is left exactly as it was. Anything else is
// returned unchanged: a terminal or a regular file is never made
// non-blocking, and neither is a socket, whose one description may be
// shared with another process that expects it to block. Where the reopen
// is not possible (no /proc, a pipe aegis may not open, another system) the
// file is returned unchanged, and everything works as before, only with a
// thread per blocked read.
//
// The reopened output is not file descriptor 1, so a client that closes its
// end makes the relay's write fail with EPIPE (and the relay shut down)
// rather than the runtime's SIGPIPE ending aegis.
func ClientStdio(stdin, stdout *os.File) (in, out *os.File, closeFn func()) {
	in, out = stdin, stdout
	var opened []*os.File
	if f := reopenPipe(stdin, os.O_RDONLY); f != nil {
		in = f
		opened = append(opened, f)
	}
	if f := reopenPipe(stdout, os.O_WRONLY); f != nil {
		out = f
		opened = append(opened, f)
	}
	return in, out, func() {
		for _, f := range opened {
			f.Close()
		}
	}
}
