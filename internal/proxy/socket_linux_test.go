package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// socketPair returns a connected pair of blocking stream sockets, as Node
// gives a child for its standard input or output.
func socketPair(t testing.TB) (aegis, client *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	aegis, client = os.NewFile(uintptr(fds[0]), "aegis"), os.NewFile(uintptr(fds[1]), "client")
	t.Cleanup(func() { aegis.Close(); client.Close() })
	return aegis, client
}

// TestClientStdioSockets checks that sockets are read and written without
// their shared open file description becoming non-blocking, carry the bytes
// both ways (more than a socket buffer holds, so both sides wait), and end
// as the client ends them.
func TestClientStdioSockets(t *testing.T) {
	stdin, clientW := socketPair(t)
	stdout, clientR := socketPair(t)
	in, out, closeStdio := ClientStdio(stdin, stdout)
	defer closeStdio()
	if _, ok := in.(*socketIO); !ok {
		t.Fatalf("ClientStdio read a socket as %T; want a *socketIO", in)
	}
	if _, ok := out.(*socketIO); !ok {
		t.Fatalf("ClientStdio wrote a socket as %T; want a *socketIO", out)
	}

	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	go func() {
		clientW.Write(big)
		clientW.Close() // the end of the client's messages
	}()
	got, err := io.ReadAll(in)
	if err != nil || !bytes.Equal(got, big) {
		t.Errorf("read %d bytes from the client socket (%v); want the %d it sent, then EOF", len(got), err, len(big))
	}
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(clientR)
		read <- b
	}()
	if n, err := out.Write(big); err != nil || n != len(big) {
		t.Errorf("Write to the client socket = %d, %v; want %d, nil", n, err, len(big))
	}
	syscall.Shutdown(int(stdout.Fd()), syscall.SHUT_WR)
	if b := <-read; !bytes.Equal(b, big) {
		t.Errorf("the client read %d bytes; want the %d written", len(b), len(big))
	}

	flags := map[string]bool{"stdin": nonblocking(t, stdin), "stdout": nonblocking(t, stdout)}
	if diff := cmp.Diff(map[string]bool{"stdin": false, "stdout": false}, flags); diff != "" {
		t.Errorf("O_NONBLOCK of the shared sockets (-want +got):\n%s", diff)
	}
}

// TestSocketIOStops checks a client that closes its end under a write, and
// a close under a waiting read, which leaves the socket itself open.
func TestSocketIOStops(t *testing.T) {
	t.Run("client gone", func(t *testing.T) {
		stdout, client := socketPair(t)
		_, out, closeStdio := ClientStdio(nil, stdout)
		defer closeStdio()
		client.Close()
		// MSG_NOSIGNAL: an error, not a SIGPIPE that would end the test.
		if _, err := out.Write([]byte("anyone?\n")); !errors.Is(err, syscall.EPIPE) {
			t.Errorf("writing to a client that closed its end: %v; want EPIPE", err)
		}
	})
	t.Run("client stops reading after ending its output", func(t *testing.T) {
		// The client shuts down its writing half of aegis's output socket
		// (nothing else comes that way) and reads nothing: aegis's write
		// waits in the poller, and does not spin on a readiness that
		// concerns the other direction.
		stdout, client := socketPair(t)
		_, out, closeStdio := ClientStdio(nil, stdout)
		syscall.Shutdown(int(client.Fd()), syscall.SHUT_WR)
		s := out.(*socketIO)
		done := make(chan error, 1)
		go func() {
			_, err := s.Write(make([]byte, 16<<20))
			done <- err
		}()
		time.Sleep(100 * time.Millisecond)
		closeStdio() // ends the wait
		if err := <-done; err == nil {
			t.Error("Write to a client that reads nothing returned no error after the close")
		}
		if s.waits > 100 {
			t.Errorf("the writer woke %d times while the client read nothing; want a few (it spins)", s.waits)
		}
	})
	t.Run("closed while reading", func(t *testing.T) {
		stdin, _ := socketPair(t)
		in, _, closeStdio := ClientStdio(stdin, nil)
		time.AfterFunc(10*time.Millisecond, closeStdio)
		if _, err := in.Read(make([]byte, 8)); err == nil || err == io.EOF {
			t.Errorf("Read closed under it: %v; want an error other than EOF", err)
		}
		if _, err := fileFlags(int(stdin.Fd())); err != nil {
			t.Errorf("the socket itself was closed: %v", err)
		}
	})
}

// TestClientStdioWithRunOverSockets runs the relay in a subprocess whose
// standard input and output are sockets, as under a Node client.
func TestClientStdioWithRunOverSockets(t *testing.T) {
	stdin, clientW := socketPair(t)
	stdout, clientR := socketPair(t)
	cmd := childCtx(t.Context(), "relay", "AEGIS_DEMO_ROOT="+demoRoot(t))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	stdout.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
		Connect(t.Context(), &mcp.IOTransport{Reader: clientR, Writer: clientW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("CallTool over sockets: %v %v", res, err)
	}
	cs.Close() // closes clientW: the relay sees the end of its input
	if err := cmd.Wait(); err != nil {
		t.Errorf("the relay did not exit cleanly after the client closed: %v", err)
	}
}

// FuzzSocketIO writes pieces of any sizes through a socketIO and reads them
// back through another with reads of any size.
func FuzzSocketIO(f *testing.F) {
	f.Add([]byte("hello\n"), uint16(3), uint16(2))
	f.Add(bytes.Repeat([]byte("x"), 300000), uint16(65535), uint16(1000))
	f.Fuzz(func(t *testing.T, data []byte, piece, buf uint16) {
		a, b := socketPair(t)
		w, r := newSocketIO(a, syscall.EPOLLOUT), newSocketIO(b, syscall.EPOLLIN)
		if w == nil || r == nil {
			t.Fatal("newSocketIO refused a stream socket")
		}
		defer w.Close()
		defer r.Close()
		p, n := max(int(piece), 1), max(int(buf), 1)
		errc := make(chan error, 1)
		go func() {
			for off := 0; off < len(data); off += p {
				if _, err := w.Write(data[off:min(len(data), off+p)]); err != nil {
					errc <- err
					return
				}
			}
			errc <- syscall.Shutdown(int(a.Fd()), syscall.SHUT_WR)
		}()
		got := readChunks(t, r, n)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes that differ from the %d written", len(got), len(data))
		}
	})
}
