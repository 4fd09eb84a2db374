package proxy

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nonblocking reports whether f's open file description is non-blocking.
func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	fd, ok := rawFD(f)
	if !ok {
		t.Fatalf("no descriptor for %s", f.Name())
	}
	fl, err := fileFlags(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fl&syscall.O_NONBLOCK != 0
}

func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// blockingPipe returns a pipe whose ends block, as a process's inherited
// standard input and output do (os.Pipe's are non-blocking).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestClientStdioReopensPipes checks the claim ClientStdio rests on: a
// pipe reopened through /proc/self/fd is a new open file description, so
// making it non-blocking leaves the one the parent shares as it was, and it
// carries the same bytes, in both directions, up to the end of the input.
func TestClientStdioReopensPipes(t *testing.T) {
	inR, inW := blockingPipe(t)   // the client writes inW; aegis reads inR
	outR, outW := blockingPipe(t) // aegis writes outW; the client reads outR
	in, out, closeStdio := ClientStdio(inR, outW)
	defer closeStdio()
	if in == inR || out == outW {
		t.Fatalf("ClientStdio did not reopen the pipes (in reopened: %v, out reopened: %v)", in != inR, out != outW)
	}
	got := map[string]bool{
		"stdin shared": nonblocking(t, inR), "stdout shared": nonblocking(t, outW),
		"stdin own": nonblocking(t, in.(*os.File)), "stdout own": nonblocking(t, out.(*os.File)),
	}
	want := map[string]bool{"stdin shared": false, "stdout shared": false, "stdin own": true, "stdout own": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("O_NONBLOCK (-want +got):\n%s", diff)
	}

	if _, err := inW.Write([]byte("from the client\n")); err != nil {
		t.Fatal(err)
	}
	inW.Close()
	b, err := io.ReadAll(in) // through the poller, to the end of the input
	if err != nil || string(b) != "from the client\n" {
		t.Errorf("reading the reopened stdin = %q, %v; want the client's line, then EOF", b, err)
	}
	if _, err := out.Write([]byte("to the client\n")); err != nil {
		t.Fatal(err)
	}
	closeStdio()
	outW.Close() // the last writer: the client now sees the end
	b, err = io.ReadAll(outR)
	if err != nil || string(b) != "to the client\n" {
		t.Errorf("the client read %q, %v; want aegis's line, then EOF", b, err)
	}
}

// TestClientStdioLeavesOthersAlone checks that what is not a pipe, or
// cannot be reopened, is returned as it is, its flags untouched.
func TestClientStdioLeavesOthersAlone(t *testing.T) {
	dir := t.TempDir()
	regular, err := os.Create(filepath.Join(dir, "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer regular.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock, peer := os.NewFile(uintptr(fds[0]), "sock"), os.NewFile(uintptr(fds[1]), "peer")
	defer sock.Close()
	defer peer.Close()
	tty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0) // a terminal's master side
	if err != nil {
		tty = devNull // no pseudo-terminals here: the case repeats /dev/null
	} else {
		defer tty.Close()
	}
	closed, _ := blockingPipe(t)
	closed.Close()
	readEnd, writeEnd := blockingPipe(t)

	for _, tc := range []struct {
		name    string
		in, out *os.File
	}{
		{"regular file", regular, regular},
		{"character device", devNull, devNull},
		{"terminal", tty, tty},
		{"datagram socket", sock, sock},
		{"closed file", closed, closed},
		{"nil", nil, nil},
		// A read end as stdout, a write end as stdin: reopening them the
		// other way would let aegis do what its descriptor could not.
		{"pipe ends the wrong way round", writeEnd, readEnd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := tc.in != nil && tc.name != "closed file"
			var before bool
			if check {
				before = nonblocking(t, tc.in)
			}
			in, out, closeStdio := ClientStdio(tc.in, tc.out)
			defer closeStdio()
			if in != tc.in || out != tc.out {
				t.Errorf("ClientStdio replaced %s (in: %v, out: %v); want it left alone", tc.name, in != tc.in, out != tc.out)
			}
			if check && nonblocking(t, tc.in) != before {
				t.Errorf("ClientStdio changed O_NONBLOCK of %s", tc.name)
			}
		})
	}

	t.Run("no /proc", func(t *testing.T) {
		saved := procFD
		procFD = filepath.Join(dir, "no-such-proc") + "/"
		defer func() { procFD = saved }()
		r, w := blockingPipe(t)
		in, out, closeStdio := ClientStdio(r, w)
		defer closeStdio()
		if in != io.Reader(r) || out != io.Writer(w) {
			t.Errorf("ClientStdio replaced the pipes without /proc (in: %v, out: %v)", in != io.Reader(r), out != io.Writer(w))
		}
	})
}

// TestClientStdioFIFO reopens a named pipe. Opening a FIFO waits for its
// other end unless O_NONBLOCK is set: the reopen must not wait, even when
// the client has gone already.
func TestClientStdioFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("x\n"))
	w.Close() // the client has gone

	done := make(chan []byte)
	go func() {
		in, _, closeStdio := ClientStdio(r, nil)
		defer closeStdio()
		if in == io.Reader(r) {
			t.Error("ClientStdio did not reopen the FIFO")
		}
		b, _ := io.ReadAll(in)
		done <- b
	}()
	select {
	case b := <-done:
		if string(b) != "x\n" {
			t.Errorf("read %q from the reopened FIFO; want %q", b, "x\n")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reopening a FIFO whose writer has gone did not return")
	}
}

// TestClientStdioClientStopsReading checks that a write to a client that
// closed its end fails with EPIPE (the relay then shuts down) instead of
// the write waiting, or the process dying.
func TestClientStdioClientStopsReading(t *testing.T) {
	outR, outW := blockingPipe(t)
	_, out, closeStdio := ClientStdio(nil, outW)
	defer closeStdio()
	outR.Close()
	_, err := out.Write([]byte("anyone?\n"))
	if !errors.Is(err, syscall.EPIPE) {
		t.Errorf("writing to a client that closed its end: %v; want EPIPE", err)
	}
}

// TestClientStdioWithRun runs the relay in a subprocess whose standard
// input and output are the SDK client's pipes, reopened and as inherited;
// a call goes through either way, and the relay exits when the client
// closes its end.
func TestClientStdioWithRun(t *testing.T) {
	root := demoRoot(t)
	for _, role := range []string{"relay", "relay-blocking"} {
		t.Run(role, func(t *testing.T) {
			cmd := childCtx(t.Context(), role, "AEGIS_DEMO_ROOT="+root)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
				Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError {
				t.Fatalf("CallTool through %s: %v %v", role, res, err)
			}
			if err := cs.Close(); err != nil {
				t.Errorf("closing the session: %v", err)
			}
			if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
				t.Errorf("%s did not exit cleanly after the client closed: %v", role, cmd.ProcessState)
			}
		})
	}
}
