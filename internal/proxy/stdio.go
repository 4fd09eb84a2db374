package proxy

import (
	"io"
	"os"
)

// This file gives the relay a client it can wait for without a thread.

// ClientStdio returns what to read the client's messages from and write
// aegis's to, given aegis's standard input and output, and a function that
// closes what it opened (after [Run] has returned).
//
// Read as inherited, a standard input blocks a thread in read(2) between
// messages, which the runtime must watch (sysmon) and hand its work away
// from. ClientStdio lets Go's poller wait for the client instead, without
// changing anything another process could see:
//
//   - a pipe (or a FIFO) is reopened through /proc/self/fd, which gives
//     aegis a new open file description of the same pipe, its own, which it
//     makes non-blocking; the description the client (or whoever started
//     aegis) shares is left as it was;
//   - a stream socket (Node's child_process connects its children with
//     socket pairs) keeps its one description, which may be shared and so
//     is never made non-blocking: each read and write is non-blocking by
//     itself (MSG_DONTWAIT), and aegis waits for the socket through an
//     epoll instance of its own.
//
// Anything else (a terminal, a regular file) is returned unchanged, and so
// is whatever cannot be reopened (no /proc, a pipe aegis may not open,
// another system): everything then works as before, with a thread per
// blocked read.
//
// A client that closes its end makes the relay's write fail with EPIPE (and
// the relay shut down), rather than the runtime's SIGPIPE ending aegis.
func ClientStdio(stdin, stdout *os.File) (in io.Reader, out io.Writer, closeFn func()) {
	in, out = stdin, stdout
	var opened []io.Closer
	if f := reopenPipe(stdin, os.O_RDONLY); f != nil {
		in = f
		opened = append(opened, f)
	} else if s := socketReader(stdin); s != nil {
		in = s
		opened = append(opened, s)
	}
	if f := reopenPipe(stdout, os.O_WRONLY); f != nil {
		out = f
		opened = append(opened, f)
	} else if s := socketWriter(stdout); s != nil {
		out = s
		opened = append(opened, s)
	}
	return in, out, func() {
		for _, c := range opened {
			c.Close()
		}
	}
}
