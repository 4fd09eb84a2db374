package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// lineCases are inputs for the line reader, each with what it must give:
// lines, or "ERR <id>" for a message over the cap.
func lineCases() []struct {
	name string
	in   string
	max  int
	want []string
} {
	msg := func(id int, pad int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"x","params":{"p":"%s"}}`, id, strings.Repeat("a", pad))
	}
	long := msg(7, 3*readBufferSize)  // longer than the read buffer, within the cap
	huge := msg(9, 5*readBufferSize)  // over the cap
	edge := msg(1, readBufferSize-40) // fills the buffer to within a few bytes
	var many []string
	var manyIn strings.Builder
	for i := range 500 {
		m := msg(i, i%97)
		many = append(many, m+"\n")
		manyIn.WriteString(m + "\n")
	}
	return []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{name: "many lines", in: manyIn.String(), max: 1 << 20, want: many},
		{name: "blank lines skipped", in: "\n \r\n" + msg(1, 3) + "\n\n\t\n", max: 1 << 20, want: []string{msg(1, 3) + "\n"}},
		{name: "EOF without newline", in: msg(1, 3) + "\n" + msg(2, 3), max: 1 << 20, want: []string{msg(1, 3) + "\n", msg(2, 3) + "\n"}},
		{name: "longer than the buffer", in: msg(1, 3) + "\n" + long + "\n" + msg(2, 3) + "\n", max: 4 * readBufferSize, want: []string{msg(1, 3) + "\n", long + "\n", msg(2, 3) + "\n"}},
		{name: "longer than the buffer at EOF", in: long, max: 4 * readBufferSize, want: []string{long + "\n"}},
		{name: "over the cap, id scanned", in: msg(1, 3) + "\n" + huge + "\n" + msg(2, 3) + "\n", max: 4 * readBufferSize, want: []string{msg(1, 3) + "\n", "ERR 9", msg(2, 3) + "\n"}},
		{name: "over the cap at EOF", in: huge, max: 4 * readBufferSize, want: []string{"ERR 9"}},
		{name: "buffer boundaries", in: strings.Repeat(edge+"\n", 5), max: 1 << 20, want: []string{edge + "\n", edge + "\n", edge + "\n", edge + "\n", edge + "\n"}},
	}
}

// readAllLines reads lr to its end. Each line is checked again just before
// the next call, while the reader promises it is still valid.
func readAllLines(t *testing.T, lr *lineReader) []string {
	t.Helper()
	var got []string
	var last []byte
	var lastCopy string
	for {
		if last != nil && string(last) != lastCopy {
			t.Fatalf("line %d changed before the next call: %.40q, was %.40q", len(got), last, lastCopy)
		}
		line, err := lr.next()
		last = nil
		if tl := asTooLong(err); tl != nil {
			got = append(got, "ERR "+string(tl.ID))
			continue
		}
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		last, lastCopy = line, string(line)
		got = append(got, lastCopy)
	}
}

// writePieces writes in to w in pieces of the sizes given, cycling, then
// closes it.
func writePieces(w io.WriteCloser, in string, sizes []int) error {
	for i := 0; len(in) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(in))
		if _, err := io.WriteString(w, in[:n]); err != nil {
			return err
		}
		in = in[n:]
	}
	return w.Close()
}

// TestLineReaderSources reads the same inputs from a reader that has them
// all at once and from a pipe written in pieces (a message split across
// many writes, and writes that hold several), read as the relay reads
// its server (rawPipe), with read buffers of the relay's size and tiny
// ones. The pipes are read in parallel, sharing the buffers' pool, which
// poisons what goes back to it (see TestMain): each line is checked again
// just before the next call.
func TestLineReaderSources(t *testing.T) {
	small := &bufPool{size: 16}
	for _, tc := range lineCases() {
		t.Run(tc.name, func(t *testing.T) {
			for _, pool := range []*bufPool{readBuffers, small} {
				t.Run(fmt.Sprint("reader", pool.size), func(t *testing.T) {
					t.Parallel()
					lr := newLineReader(strings.NewReader(tc.in), tc.max)
					lr.pool = pool
					got := readAllLines(t, lr)
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("(-want +got)\n%s", diff)
					}
				})
			}
			for _, v := range []struct {
				sizes []int
				pool  *bufPool
			}{{[]int{1}, readBuffers}, {[]int{7, 1, 300}, readBuffers}, {[]int{readBufferSize + 3}, readBuffers}, {[]int{1 << 20}, readBuffers}, {[]int{7, 1, 300}, small}} {
				t.Run(fmt.Sprint("pipe", v.sizes, v.pool.size), func(t *testing.T) {
					t.Parallel()
					rf, wf, err := os.Pipe()
					if err != nil {
						t.Fatal(err)
					}
					defer rf.Close()
					written := make(chan error, 1)
					go func() { written <- writePieces(wf, tc.in, v.sizes) }()
					var src io.Reader = rf
					if rawPipes {
						src = rawReader(rf, src)
					}
					lr := newLineReader(src, tc.max)
					lr.pool = v.pool
					got := readAllLines(t, lr)
					if err := <-written; err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("(-want +got)\n%s", diff)
					}
					if lr.rb != nil {
						t.Errorf("the reader holds a buffer at the end of its input")
					}
				})
			}
		})
	}
}

// messages is a MessageReader of the pieces given; it poisons each
// message once the next is asked for, as the relay must no longer use it.
type messages struct {
	pieces [][]byte
	last   []byte
}

func (m *messages) ReadMessage() ([]byte, error) {
	for i := range m.last {
		m.last[i] = poison
	}
	if len(m.pieces) == 0 {
		m.last = nil
		return nil, io.EOF
	}
	m.last, m.pieces = m.pieces[0], m.pieces[1:]
	return m.last, nil
}

func (m *messages) Read([]byte) (int, error) { panic("the relay reads messages whole") }

// TestLineReaderMessages reads the same inputs from a MessageReader: a
// message per line, as aegis serve hands them over, and pieces of the
// stream cut anywhere (messages without their newline, messages holding
// several), which are read as the stream they make.
func TestLineReaderMessages(t *testing.T) {
	for _, tc := range lineCases() {
		t.Run(tc.name, func(t *testing.T) {
			for _, sizes := range [][]int{nil, {1}, {7, 1, 300}, {readBufferSize + 3}} {
				t.Run(fmt.Sprint(sizes), func(t *testing.T) {
					var pieces [][]byte
					if sizes == nil {
						for _, l := range strings.SplitAfter(tc.in, "\n") {
							if l != "" {
								pieces = append(pieces, []byte(l))
							}
						}
					} else {
						for in, i := tc.in, 0; len(in) > 0; i++ {
							n := min(sizes[i%len(sizes)], len(in))
							pieces = append(pieces, []byte(in[:n]))
							in = in[n:]
						}
					}
					lr := newLineReader(&messages{pieces: pieces}, tc.max)
					got := readAllLines(t, lr)
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("(-want +got)\n%s", diff)
					}
					if lr.rb != nil {
						t.Errorf("the reader took a read buffer")
					}
				})
			}
		})
	}
}

// TestRunServerWritesAndExits: a server that writes to its stdout and its
// stderr and exits at once. Its last message reaches the client, its
// stderr is copied whole before its exit is acted on, and Run reports the
// exit.
func TestRunServerWritesAndExits(t *testing.T) {
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"bye"}}`
	for round := range 20 {
		inR, inW := io.Pipe()
		var out, stderr syncBuffer
		cmd := exec.Command("sh", "-c", fmt.Sprintf(`printf '%%s\n' '%s'; printf 'last words %d' >&2; exit 7`, note, round))
		err := Run(context.Background(), inR, &out, cmd, allowGate{}, &Options{Stderr: &stderr, Logger: testLogger(t)})
		inW.Close()
		var exit *ServerExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 7 {
			t.Fatalf("round %d: Run = %v, want a *ServerExitError with code 7", round, err)
		}
		if got := out.String(); got != note+"\n" {
			t.Fatalf("round %d: the client got %q, want the server's last message", round, got)
		}
		if got, want := stderr.String(), fmt.Sprintf("last words %d", round); got != want {
			t.Fatalf("round %d: stderr = %q, want %q", round, got, want)
		}
	}
}

// TestRunServerChildHoldsPipes: the server exits, leaving a child of its
// own that holds its stdout and stderr open. Run still returns, having
// relayed what the server said before it exited.
func TestRunServerChildHoldsPipes(t *testing.T) {
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"bye"}}`
	cmd := exec.Command("sh", "-c", fmt.Sprintf(`sleep 60 & printf '%%s\n' '%s'; printf 'err' >&2; exit 0`, note))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t.Cleanup(func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	inR, inW := io.Pipe()
	defer inW.Close()
	var out, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), inR, &out, cmd, allowGate{}, &Options{Stderr: &stderr, ShutdownGrace: 100 * time.Millisecond, Logger: testLogger(t)})
	}()
	err := waitErr(t, done)
	var exit *ServerExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 0 {
		t.Fatalf("Run = %v, want a *ServerExitError with code 0", err)
	}
	if got := out.String(); got != note+"\n" {
		t.Errorf("the client got %q, want the server's message", got)
	}
	if got := stderr.String(); got != "err" {
		t.Errorf("stderr = %q, want %q", got, "err")
	}
}

func waitErr(t *testing.T, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(failAfter):
		t.Fatal("Run did not return")
		return nil
	}
}

// TestRunCopiesStderrWhole: more stderr than a read buffer holds, in
// pieces, reaches aegis's stderr and the log byte for byte.
func TestRunCopiesStderrWhole(t *testing.T) {
	var want strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&want, "line %d of the server's stderr %s\n", i, strings.Repeat("e", i%150))
	}
	dir := t.TempDir()
	log, text := filepath.Join(dir, "stderr.log"), filepath.Join(dir, "text")
	if err := os.WriteFile(text, []byte(want.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `cat "$0" >&2`, text)
	var stderr syncBuffer
	err := Run(context.Background(), strings.NewReader(""), io.Discard, cmd, allowGate{}, &Options{Stderr: &stderr, StderrLog: log, Logger: testLogger(t)})
	if err != nil {
		var exit *ServerExitError
		if !errors.As(err, &exit) {
			t.Fatalf("Run = %v", err)
		}
	}
	logged, _ := os.ReadFile(log)
	for name, got := range map[string]string{"stderr": stderr.String(), "log": string(logged)} {
		if got != want.String() {
			t.Errorf("%s: %d bytes, want %d", name, len(got), want.Len())
		}
	}
}
