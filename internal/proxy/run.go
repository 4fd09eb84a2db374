package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Options configure [Run]. The zero value works.
type Options struct {
	// MaxMessageBytes caps one message, in either direction. A larger one is
	// dropped without being buffered whole, and the request it carries or
	// answers is answered with an error. Zero means 16 MiB.
	MaxMessageBytes int
	// MaxDepth caps how deeply a message's JSON may nest. Zero means 256.
	MaxDepth int
	// CallTimeout, if positive, is how long the relay waits for the
	// server's answer to a tools/call, counted from when the call is
	// forwarded (the gate's time is not counted). Then the client receives
	// a tool result with isError set that names the timeout (the model
	// reads it; a JSON-RPC error may not reach it), the server receives
	// notifications/cancelled for the call, and a late answer is dropped.
	// Zero means none.
	CallTimeout time.Duration
	// MaxInFlight caps the client's requests awaiting an answer: being
	// gated, at the server, or refused with the refusal not yet written to
	// the client. More are answered with a JSON-RPC error. Zero means
	// [DefaultMaxInFlight].
	MaxInFlight int

	// StderrLog is a file the server's stderr is appended to (created with
	// mode 0600), in addition to Stderr. Empty means none.
	StderrLog string
	// StderrLogBytes is the size the stderr log is kept under: a write that
	// would take it past renames it to StderrLog+".1" (replacing the one
	// before) and starts a new one. Zero means [DefaultStderrLogBytes];
	// negative, never rotated.
	StderrLogBytes int64
	// Stderr receives the server's stderr as it comes. Nil means os.Stderr.
	Stderr io.Writer

	// ShutdownGrace is how long the server has to exit after its input is
	// closed before it is sent SIGTERM, and again before it is killed. Zero
	// means 5 seconds.
	ShutdownGrace time.Duration

	// Logger receives the relay's log lines (never message contents). Nil
	// discards them.
	Logger *slog.Logger

	// Twin starts the server's unbound twin (DESIGN.md R29), where the
	// calls a gate marks [Verdict.RunUnbound] run: a second instance of the
	// server with no file or network authority. It returns the command,
	// not started, with Stdin, Stdout and Stderr nil, and what to call once
	// it has exited. Run calls it once, when the first such call is let
	// through, mirrors the client's initialize to it, and shuts it down as
	// it shuts the server down; its stderr joins the server's. Nil: such
	// calls are refused.
	Twin func() (cmd *exec.Cmd, done func(), err error)

	// Elicitor, if set, asks the person at the client for the approvals
	// of held calls, by elicitation (see [Elicitor]); its Ask is the
	// session's gateway.Approvals.Asked.
	Elicitor *Elicitor
}

// DefaultMaxMessageBytes is the default cap on one message.
const DefaultMaxMessageBytes = 16 << 20

// DefaultMaxInFlight is the default cap on the client's requests awaiting
// an answer.
const DefaultMaxInFlight = 1024

func (o *Options) resolve() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MaxMessageBytes <= 0 {
		r.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if r.MaxDepth <= 0 {
		r.MaxDepth = 256
	}
	if r.MaxInFlight <= 0 {
		r.MaxInFlight = DefaultMaxInFlight
	}
	if r.Stderr == nil {
		r.Stderr = os.Stderr
	}
	if r.StderrLogBytes == 0 {
		r.StderrLogBytes = DefaultStderrLogBytes
	}
	if r.ShutdownGrace <= 0 {
		r.ShutdownGrace = 5 * time.Second
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	return r
}

// A ServerExitError reports that the wrapped server exited, or closed its
// output, while the client was still connected. Run returns it.
type ServerExitError struct {
	// State is the server's exit state; nil for a [Bridge].
	State *os.ProcessState
	// Bridge says how a bridge's server ended ([RunBridge]).
	Bridge string
}

func (e *ServerExitError) Error() string {
	if e.Bridge != "" {
		return "proxy: " + e.Bridge
	}
	return "proxy: " + describeExit(e.State)
}

// ExitCode returns the server's exit code, or -1 if a signal ended it.
func (e *ServerExitError) ExitCode() int { return e.State.ExitCode() } // -1 for a bridge

func describeExit(s *os.ProcessState) string {
	if s == nil {
		return "the MCP server stopped"
	}
	return fmt.Sprintf("the MCP server exited (%v)", s)
}

// Run starts cmd, an MCP server speaking the stdio transport, and relays
// messages between it and a client on stdin and stdout until one side ends.
// Every tools/call is decided by gate first; see the package documentation.
//
// Run owns cmd's Stdin, Stdout and Stderr, which must be nil; the server's
// stderr goes to o.Stderr and to o.StderrLog. If cmd.WaitDelay is zero it is
// set to the shutdown grace.
//
// When the client closes stdin, Run lets the calls already read be decided
// and forwarded, closes the server's input, waits for the server to exit
// (sending SIGTERM, then SIGKILL, after each grace period), relays what the
// server still says, and returns nil. When the server exits first, every
// request still waiting is answered with an error that says so, and Run
// returns a *ServerExitError. When ctx is done, the server is shut down the
// same way and Run returns ctx's error.
//
// Run does not wait for a read from stdin that it cannot interrupt; it
// writes nothing to stdout after it returns.
func Run(ctx context.Context, stdin io.Reader, stdout io.Writer, cmd *exec.Cmd, gate Gate, o *Options) error {
	if cmd.Stdin != nil || cmd.Stdout != nil || cmd.Stderr != nil {
		return errors.New("proxy: the relay owns the server's stdin, stdout and stderr; leave them nil")
	}
	return run(ctx, stdin, stdout, &process{cmd: cmd}, gate, o)
}

// A Bridge is an MCP server reached from aegis's own process (a remote
// server's HTTP client, see serve.Remote): it reads the relay's messages
// from in and writes the server's to out, one per line, until in ends or
// ctx is done. A message in hands over is valid until its next
// ReadMessage; while the bridge waits for the next, in holds no buffer.
type Bridge func(ctx context.Context, in MessageReader, out io.Writer) error

// Messages reads the newline-delimited messages of r, each with its
// newline, as a [MessageReader]; a message over max bytes is skipped (the
// relay writes none: it refuses them). Its read buffer comes from the
// relay's pool, and, when r is a pipe, goes back while the next message
// is waited for.
func Messages(r io.Reader, max int) MessageReader {
	if f, ok := r.(*os.File); ok && rawPipes {
		r = rawReader(f, r)
	}
	return &messageLines{newLineReader(r, max)}
}

// messageLines is [Messages]' reader.
type messageLines struct{ l *lineReader }

func (m *messageLines) ReadMessage() ([]byte, error) {
	for {
		line, err := m.l.next()
		if asTooLong(err) != nil {
			continue
		}
		return line, err
	}
}

// RunBridge is [Run] with the server a bridge in aegis's process instead
// of a process of its own: there is no process hop and no runtime of its
// own per session. The bridge's input is closed, and ctx cancelled, where
// Run would close a server's input and signal it; its end is the server's
// exit.
func RunBridge(ctx context.Context, stdin io.Reader, stdout io.Writer, b Bridge, gate Gate, o *Options) error {
	if b == nil {
		return errors.New("proxy: RunBridge needs a Bridge")
	}
	return run(ctx, stdin, stdout, &inProcess{run: b}, gate, o)
}

func run(ctx context.Context, stdin io.Reader, stdout io.Writer, srv server, gate Gate, o *Options) (err error) {
	if gate == nil {
		return errors.New("proxy: Run needs a Gate")
	}
	opts := o.resolve()

	stderr := &tee{out: opts.Stderr, log: opts.Logger}
	if opts.StderrLog != "" {
		f, err := openStderrLog(opts.StderrLog, opts.StderrLogBytes)
		if err != nil {
			return fmt.Errorf("proxy: opening the server's stderr log: %w", err)
		}
		defer f.Close()
		stderr.file = f
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return fmt.Errorf("proxy: %w", err)
	}
	defer outR.Close()
	// The server's stderr is a pipe of the relay's own, read through the
	// poller like the others (os/exec would copy it with blocking-path
	// system calls on a goroutine of its own).
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outW.Close()
		return fmt.Errorf("proxy: %w", err)
	}
	defer errR.Close()
	waitDelay := srv.waitDelay(opts.ShutdownGrace)
	if err := srv.start(ctx, inR, outW, errW); err != nil {
		inW.Close()
		return fmt.Errorf("proxy: starting the MCP server: %w", err)
	}
	var fromStderr io.Reader = errR
	if rawPipes {
		fromStderr = rawReader(errR, fromStderr)
	}
	copied := make(chan struct{})
	go func() {
		stderr.copyFrom(fromStderr)
		// Its end is for good (every writer has closed it): the pipe
		// need not last as long as the session (a bridge's ends at once).
		errR.Close()
		close(copied)
	}()

	// Pipes the poller waits for are read and written with raw system
	// calls (see rawPipe).
	var toServer io.Writer = inW
	var fromServer io.Reader = outR
	if rawPipes {
		toServer, fromServer = rawWriter(inW, toServer), rawReader(outR, fromServer)
		if f, ok := stdin.(*os.File); ok {
			stdin = rawReader(f, stdin)
		}
		if f, ok := stdout.(*os.File); ok {
			stdout = rawWriter(f, stdout)
		}
	}

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := newRelay(rctx, stdout, toServer, gate, options{
		maxMsg: opts.MaxMessageBytes, maxDepth: opts.MaxDepth, maxReqs: opts.MaxInFlight,
		callTimeout: opts.CallTimeout, log: opts.Logger,
	})
	if opts.Elicitor != nil {
		r.elicit = opts.Elicitor
		r.elicit.attach(r)
	}
	if opts.Twin != nil {
		r.twin = newTwin(opts.Twin, stderr, r.toClient, options{
			maxMsg: opts.MaxMessageBytes, maxDepth: opts.MaxDepth, log: opts.Logger,
		}, opts.ShutdownGrace)
		defer r.twin.close()
	}

	// exited is closed once the server has ended and its last words on
	// stderr are copied. A bridge has none: its own end is waited for,
	// with no goroutine per session to do it.
	var exited <-chan struct{}
	if b, ok := srv.(interface{ ended() <-chan struct{} }); ok {
		exited = b.ended()
	} else {
		exited = awaitServer(srv, errR, copied, waitDelay, opts.Logger)
	}
	serverDone := make(chan error, 1)
	go func() { serverDone <- r.serverLoop(fromServer) }()
	// The client's input is read on goroutines of its own (see
	// readClient); its end comes here, with none waiting for it.
	clientDone := r.startClient(stdin)

	grace := opts.ShutdownGrace
	// drain waits for the server's output to end once the server has
	// exited, bounded in case a child of the server holds it open, or the
	// client stopped reading and the relay cannot deliver what is left.
	drain := func() {
		<-exited
		outR.SetReadDeadline(time.Now().Add(min(grace, time.Second)))
		select {
		case <-serverDone:
		case <-time.After(grace):
			opts.Logger.Warn("proxy: gave up relaying the MCP server's last output: the client is not reading")
			r.stop()
		}
	}
	// gone answers the requests still waiting, unless the client will not
	// take the answers.
	gone := func() {
		why := errors.New(srv.describe())
		waiting := r.markGone(why) // from here on, no gate starts
		done := make(chan struct{})
		go func() {
			r.answerGone(why, waiting)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(grace):
			opts.Logger.Warn("proxy: gave up answering the client's waiting requests: the client is not reading")
			r.stop()
		}
	}
	shutdown := func() {
		r.closeServer(inW, grace)
		terminate(srv, exited, grace, opts.Logger)
		drain()
	}

	select {
	case cerr := <-clientDone:
		r.handoff.close() // no reader need stand by
		// The client has said all it will. Calls it sent are decided and
		// forwarded (or refused) before the server's input is closed.
		// A gate that has returned may not have written its call yet:
		// wait for the writes too, as long as the server reads.
		waitFor := func(wg *sync.WaitGroup, timeout <-chan time.Time) {
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-exited:
			case <-ctx.Done():
			case <-timeout:
			}
		}
		waitFor(&r.deciding, nil)
		waitFor(&r.gates, time.After(grace))
		shutdown()
		gone()
		if cerr != nil && !errors.Is(cerr, io.EOF) {
			err = fmt.Errorf("proxy: reading from the client: %w", cerr)
		}
	case <-r.clientGone:
		shutdown()
		gone() // nothing reaches the client now, but the gate hears of the calls left unanswered
		err = fmt.Errorf("proxy: writing to the client: %w", r.clientErr)
	case <-serverDone:
		// The server closed its output; it is as good as gone.
		r.closeServer(inW, grace)
		terminate(srv, exited, grace, opts.Logger)
		gone()
		err = srv.exitError()
	case <-exited:
		r.closeServer(inW, grace)
		drain()
		gone()
		err = srv.exitError()
	case <-ctx.Done():
		shutdown()
		gone()
		err = ctx.Err()
	}
	// Gates still running see a cancelled context; whatever they would say
	// now goes nowhere. A gate blocked writing to a client that no longer
	// reads is left behind rather than waited for. A standby reader leaves.
	cancel()
	r.handoff.close()
	gatesDone := make(chan struct{})
	go func() { r.gates.Wait(); close(gatesDone) }()
	select {
	case <-gatesDone:
	case <-time.After(grace):
	}
	r.stop()
	opts.Logger.Info("proxy: stopped", "server", srv.describe())
	return err
}

// rawPipes says whether Run reads and writes pipes with raw system calls
// where it can; a variable for benchmarks.
var rawPipes = true

// rawReader returns f as a rawPipe if it can be one, else r.
func rawReader(f *os.File, r io.Reader) io.Reader {
	if p := newRawPipe(f); p != nil {
		return p
	}
	return r
}

// rawWriter returns f as a rawPipe if it can be one, else w.
func rawWriter(f *os.File, w io.Writer) io.Writer {
	if p := newRawPipe(f); p != nil {
		return p
	}
	return w
}

// awaitServer returns a channel closed once the server has exited and
// what it wrote to stderr before has been copied (copied closed), within
// the grace period that os/exec gives its own copies (WaitDelay): a child
// of the server may hold the pipe open.
func awaitServer(srv server, errR *os.File, copied <-chan struct{}, waitDelay time.Duration, log *slog.Logger) <-chan struct{} {
	exited := make(chan struct{})
	go func() {
		srv.wait()
		errR.SetReadDeadline(time.Now().Add(waitDelay))
		select {
		case <-copied:
		case <-time.After(2 * waitDelay):
			// The copy is stuck writing: aegis's own stderr does not
			// take it. The log file has what was read; the exit is acted
			// on all the same.
			log.Warn("proxy: gave up copying the server's stderr: aegis's stderr does not take it")
		}
		close(exited)
	}()
	return exited
}

// terminate waits for the server to exit, then asks it to (SIGTERM), then
// kills it, waiting grace before each step.
func terminate(srv server, exited <-chan struct{}, grace time.Duration, log *slog.Logger) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
		return
	case <-t.C:
	}
	log.Warn("proxy: the MCP server did not exit after its input closed; sending SIGTERM")
	srv.stop()
	t.Reset(grace)
	select {
	case <-exited:
		return
	case <-t.C:
	}
	log.Warn("proxy: the MCP server did not exit after SIGTERM; killing it")
	srv.kill()
	<-exited
}

// A tee copies the server's stderr to a log file and to aegis's stderr. A
// failure of one does not stop the other, and never fails the server's write.
type tee struct {
	mu     sync.Mutex
	file   *stderrLog
	out    io.Writer
	log    *slog.Logger
	failed bool
}

// copyFrom copies r to t until r ends or fails.
func (t *tee) copyFrom(r io.Reader) {
	if p, ok := r.(idleReader); ok {
		t.copyIdle(p)
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			t.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (t *tee) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.file != nil {
		if err := t.file.Write(p); err != nil && !t.failed {
			t.failed = true
			t.log.Error("proxy: writing the server's stderr log", "err", err)
		}
	}
	t.out.Write(p)
	return len(p), nil
}
