package proxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// A server is what run relays to: a process of its own ([Run]) or a bridge
// in aegis's process ([RunBridge]).
type server interface {
	// start starts the server on its ends of the three pipes, which it
	// owns from then on, error or not.
	start(ctx context.Context, in, out, errOut *os.File) error
	// waitDelay is how long the server's stderr is copied after it ended.
	waitDelay(grace time.Duration) time.Duration
	// wait returns once the server has ended (or was killed).
	wait()
	// stop asks the server to end (SIGTERM); kill makes it.
	stop()
	kill()
	// describe says how the server ended, once wait has returned.
	describe() string
	exitError() error
}

// process is a server run as a process: cmd.
type process struct{ cmd *exec.Cmd }

func (p *process) start(_ context.Context, in, out, errOut *os.File) error {
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = in, out, errOut
	err := p.cmd.Start()
	in.Close()
	out.Close()
	errOut.Close()
	return err
}

func (p *process) waitDelay(grace time.Duration) time.Duration {
	if p.cmd.WaitDelay == 0 {
		p.cmd.WaitDelay = grace
	}
	return p.cmd.WaitDelay
}

func (p *process) wait() {
	// In the poller first: Wait then finds the process gone at once,
	// instead of holding a thread for as long as it lives.
	awaitExit(p.cmd.Process.Pid)
	p.cmd.Wait()
}

func (p *process) stop() {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.cmd.Process.Kill()
	}
}

func (p *process) kill()            { p.cmd.Process.Kill() }
func (p *process) describe() string { return describeExit(p.cmd.ProcessState) }
func (p *process) exitError() error { return &ServerExitError{State: p.cmd.ProcessState} }

// maxBridgeMessage bounds a message the relay writes to a bridge, which
// the relay's own cap (Options.MaxMessageBytes) keeps far under.
const maxBridgeMessage = 1 << 30

// inProcess is a server reached through a [Bridge] running on a goroutine
// of aegis's own. Stopping it cancels the bridge's context; killing it
// also closes its pipes and stops waiting for it, so that a bridge stuck
// in a call that ignores its context does not hold the relay.
type inProcess struct {
	run    Bridge
	cancel context.CancelFunc
	done   chan struct{} // closed when run returned
	killed chan struct{}
	once   sync.Once
	in     *os.File
	out    *os.File
	err    error // run's, once done is closed

	gone    chan struct{} // closed once done or killed is
	goneOne sync.Once
}

// ended is closed once the bridge has returned or was killed. A bridge
// writes nothing to stderr, so there is nothing to copy before its end is
// acted on: the relay waits on this, with no goroutine of its own.
func (b *inProcess) ended() <-chan struct{} { return b.gone }

func (b *inProcess) end() { b.goneOne.Do(func() { close(b.gone) }) }

func (b *inProcess) start(ctx context.Context, in, out, errOut *os.File) error {
	// A bridge writes nothing to stderr: it logs through aegis's logger.
	errOut.Close()
	// Cancelled by stop and kill only: ctx's end reaches the bridge as
	// its input's end, as it reaches a process.
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.cancel, b.in, b.out = cancel, in, out
	b.done, b.killed, b.gone = make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer b.end()
		defer close(b.done)
		defer cancel()
		defer in.Close()
		defer out.Close()
		b.err = b.run(bctx, Messages(in, maxBridgeMessage), out)
	}()
	return nil
}

func (b *inProcess) waitDelay(grace time.Duration) time.Duration { return grace }

func (b *inProcess) wait() {
	select {
	case <-b.done:
	case <-b.killed:
	}
}

func (b *inProcess) stop() { b.cancel() }

func (b *inProcess) kill() {
	b.once.Do(func() {
		b.cancel()
		b.in.Close()
		b.out.Close()
		close(b.killed)
		b.end()
	})
}

func (b *inProcess) describe() string {
	select {
	case <-b.done:
		if b.err != nil {
			return fmt.Sprintf("the MCP server's bridge ended (%v)", b.err)
		}
		return "the MCP server's bridge ended"
	default:
		return "the MCP server's bridge was stopped"
	}
}

func (b *inProcess) exitError() error { return &ServerExitError{Bridge: b.describe()} }
