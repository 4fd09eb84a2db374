package proxy

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aegis-mcp/aegis/internal/demoserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nopWriteCloser leaves closing the bridge's output to RunBridge.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// TestRunBridge: a server reached through a Bridge (here the demo server
// in process, over the bridge's own input and output) is relayed as a
// process is: the gate decides, a refused call never reaches the server,
// and when the client is done the bridge sees its input end — before its
// context is cancelled — and Run returns nil.
func TestRunBridge(t *testing.T) {
	ctx := context.Background()
	calls := &syncBuffer{}
	srv, err := demoserver.New(&demoserver.Options{Root: demoRoot(t), CallLog: calls})
	if err != nil {
		t.Fatal(err)
	}
	var cancelledFirst atomic.Bool
	bridge := func(bctx context.Context, in MessageReader, out io.Writer) error {
		ss, err := srv.Connect(bctx, &mcp.IOTransport{Reader: io.NopCloser(&messageStream{in: in}), Writer: nopWriteCloser{out}}, nil)
		if err != nil {
			return err
		}
		err = ss.Wait()
		cancelledFirst.Store(bctx.Err() != nil)
		return err
	}
	gate := &testGate{deny: map[string]string{"fetch": "denied by rule no-net"}}
	rn := startBridge(t, ctx, bridge, gate, nil)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, rn.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.txt"}})
	if err != nil || res.IsError || textOf(t, res) != "hello from notes" {
		t.Fatalf("read_file = %+v, %v; want the file", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fetch", Arguments: map[string]any{"url": "http://127.0.0.1:1/"}})
	if err != nil || !res.IsError || !strings.Contains(textOf(t, res), "no-net") {
		t.Fatalf("fetch = %+v, %v; want refused by the gate", res, err)
	}
	if log := calls.String(); strings.Contains(log, "fetch") || !strings.Contains(log, "read_file") {
		t.Errorf("the server's call log is %q: want read_file and no fetch", log)
	}
	cs.Close()
	if err := rn.wait(t); err != nil {
		t.Errorf("Run = %v, want nil once the client is done", err)
	}
	if cancelledFirst.Load() {
		t.Error("the bridge's context was cancelled before its input ended")
	}
}

// TestRunBridgeEnds: a bridge that ends while a call is at it is a server
// that exited: the call is answered with an error saying so, and Run
// returns a ServerExitError that says how the bridge ended. (Raw lines: the
// SDK's client may report the end of its input instead of the answer just
// before it.)
func TestRunBridgeEnds(t *testing.T) {
	bridge := func(_ context.Context, in MessageReader, _ io.Writer) error {
		in.ReadMessage() // the call
		return errors.New("upstream unreachable")
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer inW.Close()
	done := make(chan error, 1)
	go func() {
		done <- RunBridge(context.Background(), inR, outW, bridge, &testGate{}, &Options{Logger: testLogger(t)})
		outW.Close()
	}()
	go inW.Write([]byte(toolCall(1, "x") + "\n"))
	out, err := io.ReadAll(outR)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, strings.TrimSpace(string(out)), "1", codeServerGone, "the MCP server's bridge ended (upstream unreachable) before answering")
	var ee *ServerExitError
	if err := <-done; !errors.As(err, &ee) || ee.ExitCode() != -1 || !strings.Contains(ee.Error(), "upstream unreachable") {
		t.Errorf("Run = %v, want a ServerExitError naming the bridge's error", err)
	}
}

// TestRunBridgeStuck: a bridge that neither reads its input nor heeds its
// context does not hold Run past the shutdown grace periods.
func TestRunBridgeStuck(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	defer close(release)
	bridge := func(context.Context, MessageReader, io.Writer) error {
		<-release
		return nil
	}
	rn := startBridge(t, ctx, bridge, &testGate{}, &Options{ShutdownGrace: 50 * time.Millisecond})
	cancel()
	if err := rn.wait(t); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

// messageStream is the messages of a MessageReader as one stream again,
// for a server that reads one (the SDK's IOTransport).
type messageStream struct {
	in   MessageReader
	rest []byte
}

func (m *messageStream) Read(p []byte) (int, error) {
	for len(m.rest) == 0 {
		msg, err := m.in.ReadMessage()
		if err != nil {
			return 0, err
		}
		m.rest = append(m.rest[:0], msg...)
	}
	n := copy(p, m.rest)
	m.rest = m.rest[n:]
	return n, nil
}

// TestMessages: Messages hands over each line of a stream with its
// newline, whatever the reads' boundaries, skips blank lines and a line
// over the cap, and ends with io.EOF.
func TestMessages(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     []string
	}{
		{"lines", "{\"a\":1}\n{\"b\":2}\n", []string{"{\"a\":1}\n", "{\"b\":2}\n"}},
		{"no last newline", "{\"a\":1}\n{\"b\":2}", []string{"{\"a\":1}\n", "{\"b\":2}\n"}},
		{"blank lines", "\n  \n{\"a\":1}\n\n", []string{"{\"a\":1}\n"}},
		{"over the cap", "{\"a\":1}\n" + `{"long":"` + strings.Repeat("x", 100) + "\"}\n{\"b\":2}\n", []string{"{\"a\":1}\n", "{\"b\":2}\n"}},
		{"empty", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := Messages(iotest.OneByteReader(strings.NewReader(tt.in)), 64)
			var got []string
			for {
				msg, err := m.ReadMessage()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(msg))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
