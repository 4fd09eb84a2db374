package proxy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// newRawPipes returns both ends of a new pipe as rawPipes, and the files.
func newRawPipes(t testing.TB) (r, w *rawPipe, rf, wf *os.File) {
	t.Helper()
	rf, wf, err := os.Pipe() // non-blocking, in the poller
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rf.Close(); wf.Close() })
	r, w = newRawPipe(rf), newRawPipe(wf)
	if r == nil || w == nil {
		t.Fatal("newRawPipe refused os.Pipe's ends")
	}
	return r, w, rf, wf
}

// TestRawPipeCarriesBytes writes through a raw pipe what a reader reads
// through another, in pieces larger than the pipe holds, so that both sides
// wait in the poller; the bytes and the end of the input are as an
// *os.File would give them.
func TestRawPipeCarriesBytes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pieces []int // sizes of the writes
		buf    int   // size of the reads
	}{
		{"one line", []int{40}, 64 << 10},
		{"empty write", []int{0, 5, 0}, 16},
		{"more than the pipe holds", []int{1 << 20, 3, 200 << 10}, 64 << 10},
		{"one byte reads", []int{300}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, _, wf := newRawPipes(t)
			var want []byte
			for i, n := range tc.pieces {
				want = append(want, bytes.Repeat([]byte{byte('a' + i)}, n)...)
			}
			errc := make(chan error, 1)
			go func() {
				off := 0
				for _, n := range tc.pieces {
					m, err := w.Write(want[off : off+n])
					if err != nil || m != n {
						errc <- errors.Join(err, errors.New("short write"))
						return
					}
					off += n
				}
				errc <- wf.Close()
			}()
			var got []byte
			buf := make([]byte, tc.buf)
			for {
				n, err := r.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
			}
			if err := <-errc; err != nil {
				t.Fatalf("writing: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("read %d bytes, want %d (equal: false)", len(got), len(want))
			}
			if n, err := r.Read(nil); n != 0 || err != nil {
				t.Errorf("Read(nil) = %d, %v; want 0, nil", n, err)
			}
		})
	}
}

// TestRawPipeStops checks the ways Run stops a pipe: a read deadline (its
// drain of the server's output), a close under a waiting read or write (its
// shutdown), and a peer that has gone.
func TestRawPipeStops(t *testing.T) {
	t.Run("read deadline", func(t *testing.T) {
		r, _, rf, _ := newRawPipes(t)
		rf.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := r.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Read past the deadline: %v; want os.ErrDeadlineExceeded", err)
		}
	})
	t.Run("closed while reading", func(t *testing.T) {
		r, _, rf, _ := newRawPipes(t)
		time.AfterFunc(10*time.Millisecond, func() { rf.Close() })
		// The poller says "use of closed file" (internal/poll's
		// ErrFileClosing), which *os.File would translate to os.ErrClosed;
		// the relay only needs an error that is not the end of the input.
		if _, err := r.Read(make([]byte, 8)); err == nil || err == io.EOF {
			t.Errorf("Read of a pipe closed under it: %v; want an error other than EOF", err)
		}
	})
	t.Run("closed while writing to a full pipe", func(t *testing.T) {
		_, w, _, wf := newRawPipes(t)
		time.AfterFunc(10*time.Millisecond, func() { wf.Close() })
		n, err := w.Write(make([]byte, 4<<20)) // nobody reads
		if err == nil || n >= 4<<20 {
			t.Errorf("Write to a full pipe, closed under it: %d, %v; want a short write and an error", n, err)
		}
	})
	t.Run("reader gone", func(t *testing.T) {
		_, w, rf, _ := newRawPipes(t)
		rf.Close()
		if _, err := w.Write([]byte("x\n")); !errors.Is(err, syscall.EPIPE) {
			t.Errorf("Write with no reader: %v; want EPIPE", err)
		}
	})
}

// TestNewRawPipeRefuses checks that only a non-blocking pipe in the poller
// is read with raw system calls: a raw read of a blocking descriptor would
// block a thread the runtime believes is running.
func TestNewRawPipeRefuses(t *testing.T) {
	blockingR, blockingW := blockingPipe(t)
	regular, err := os.Create(filepath.Join(t.TempDir(), "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer regular.Close()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock := os.NewFile(uintptr(fds[0]), "sock")
	defer sock.Close()
	defer syscall.Close(fds[1])
	// Non-blocking, but made so after the *os.File was: not in the poller.
	lateR, _ := blockingPipe(t)
	if fd, ok := rawFD(lateR); !ok || syscall.SetNonblock(fd, true) != nil {
		t.Fatal("could not make the pipe non-blocking")
	}
	closed, _ := pipe(t)
	closed.Close()

	for _, tc := range []struct {
		name string
		f    *os.File
	}{
		{"blocking read end", blockingR},
		{"blocking write end", blockingW},
		{"regular file", regular},
		{"socket", sock},
		{"non-blocking but not in the poller", lateR},
		{"closed", closed},
		{"nil", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p := newRawPipe(tc.f); p != nil {
				t.Errorf("newRawPipe accepted a %s", tc.name)
			}
		})
	}
}

// FuzzRawPipe writes pieces of any sizes through a raw pipe and reads them
// back with reads of any size: the bytes must come out as they went in.
func FuzzRawPipe(f *testing.F) {
	f.Add([]byte("hello\n"), uint16(3), uint16(2))
	f.Add(bytes.Repeat([]byte("x"), 70000), uint16(65535), uint16(1000))
	f.Fuzz(func(t *testing.T, data []byte, piece, buf uint16) {
		r, w, _, wf := newRawPipes(t)
		p, b := max(int(piece), 1), max(int(buf), 1)
		errc := make(chan error, 1)
		go func() {
			for off := 0; off < len(data); off += p {
				if _, err := w.Write(data[off:min(len(data), off+p)]); err != nil {
					errc <- err
					return
				}
			}
			errc <- wf.Close()
		}()
		got := readChunks(t, r, b)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes that differ from the %d written", len(got), len(data))
		}
	})
}

// readChunks reads r to its end in reads of at most n bytes.
func readChunks(t *testing.T, r io.Reader, n int) []byte {
	t.Helper()
	var got []byte
	buf := make([]byte, n)
	for {
		m, err := r.Read(buf)
		got = append(got, buf[:m]...)
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
