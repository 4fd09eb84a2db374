package sandbox

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"sync"
)

// A Sandbox is the outside of one sandboxed server: its report, and the
// listener its connections to the egress proxy arrive on.
type Sandbox struct {
	report Report

	// initFiles are the init's inherited descriptors (plan, status
	// socket): our copies, closed by Close.
	initFiles []*os.File
	conn      *net.UnixConn // our end of the status socket
	ln        *listener
	tmpDir    string // a private temp directory to remove, if any

	done      chan struct{} // closed once the init has reported, or failed to
	mu        sync.Mutex
	err       error // the init's failure, if any
	closeOnce sync.Once
}

// Report returns what the sandbox applies: before the init reports, what
// it was planned to apply; after [Sandbox.Ready], what it did.
func (s *Sandbox) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.report
	r.Missing = slices.Clone(r.Missing)
	return r
}

// Ready waits until the init has applied the sandbox and is about to start
// the server, and returns the report of what it applied; or returns the
// init's error, or ctx's. It returns at once for a server started without
// an init.
func (s *Sandbox) Ready(ctx context.Context) (Report, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		return s.Report(), ctx.Err()
	}
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	return s.Report(), err
}

// Listener returns the listener that accepts the server's connections to
// 127.0.0.1:[Spec.ProxyPort] in its namespace, for the egress proxy to
// serve; nil if the server has no network. Its Accept waits until the init
// has made the socket. Closing it is [Sandbox.Close]'s.
func (s *Sandbox) Listener() net.Listener {
	if s.ln == nil {
		return nil
	}
	return s.ln
}

// Close releases what the sandbox holds outside the server: the listener,
// the init's descriptors, a private temp directory. The caller MUST call it
// once the server has exited; a server still running loses its network.
func (s *Sandbox) Close() error {
	s.closeOnce.Do(func() {
		s.closeInitFiles()
		if s.conn != nil {
			s.conn.Close()
		}
		if s.ln != nil {
			s.ln.Close()
		}
		if s.tmpDir != "" {
			os.RemoveAll(s.tmpDir)
		}
		s.finish(errors.New("sandbox: closed before the init reported"))
	})
	return nil
}

func (s *Sandbox) closeInitFiles() {
	s.mu.Lock()
	files := s.initFiles
	s.initFiles = nil
	s.mu.Unlock()
	for _, f := range files {
		f.Close()
	}
}

// finish records the init's outcome, once.
func (s *Sandbox) finish(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return
	default:
	}
	s.err = err
	close(s.done)
}

// ErrClosed is returned by the listener's Accept after Close.
var ErrClosed = net.ErrClosed

// A listener accepts the connections of a sandboxed server to the egress
// proxy: Accept waits for the listening socket the init hands over.
type listener struct {
	addr  *net.TCPAddr
	ready chan struct{} // closed when l or err is set
	once  sync.Once
	l     net.Listener
	err   error
}

func newListener(port int) *listener {
	return &listener{addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}, ready: make(chan struct{})}
}

// set hands over the listening socket, or the reason there is none.
func (l *listener) set(ln net.Listener, err error) {
	used := false
	l.once.Do(func() {
		l.l, l.err, used = ln, err, true
		close(l.ready)
	})
	if !used && ln != nil {
		ln.Close()
	}
}

func (l *listener) Accept() (net.Conn, error) {
	<-l.ready
	if l.err != nil {
		return nil, l.err
	}
	return l.l.Accept()
}

func (l *listener) Close() error {
	l.set(nil, ErrClosed)
	<-l.ready
	if l.l != nil {
		return l.l.Close()
	}
	return nil
}

// Addr returns 127.0.0.1:PORT as the server sees it, in its namespace.
func (l *listener) Addr() net.Addr { return l.addr }
