package egressproxy

import (
	"net"
	"sync"
)

// connListener is the listener ServeConn feeds: Accept returns the
// connections handed to it, one by one.
type connListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return bridgeAddr{} }

// bridgeAddr is the address of connections handed over by ServeConn.
type bridgeAddr struct{}

func (bridgeAddr) Network() string { return "bridge" }
func (bridgeAddr) String() string  { return "egressproxy" }

// limitListener bounds the connections served at once, over every
// listener of a proxy: Accept takes a slot first and the connection gives
// it back when closed. A connection over the bound waits in the listener's
// backlog (or in ServeConn).
type limitListener struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, slots: l.slots}, nil
}

// limitedConn gives its slot back when closed. The tunnel copies through
// its Conn, so that TCP to TCP can splice.
type limitedConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}

// unwrap returns the connection under a limitedConn.
func unwrap(c net.Conn) net.Conn {
	if lc, ok := c.(*limitedConn); ok {
		return lc.Conn
	}
	return c
}
