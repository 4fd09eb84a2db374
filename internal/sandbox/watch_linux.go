package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// watch starts reading the init's status from ours; port is the proxy's,
// 0 if the server has no network.
func (s *Sandbox) watch(ours *os.File, port int) error {
	c, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return fmt.Errorf("sandbox: the status socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return errors.New("sandbox: the status socket is not a unix socket")
	}
	s.conn = uc
	if port > 0 {
		s.ln = newListener(port)
	}
	go s.receive()
	return nil
}

// receive reads the init's one message: its status, and the proxy's
// listening socket.
func (s *Sandbox) receive() {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := s.conn.ReadMsgUnix(buf, oob)
	// The init's descriptors stay open until Close: os/exec may still
	// hold them (Start's bookkeeping), and they cost nothing.
	s.conn.Close()
	var fds []int
	if err == nil {
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, m := range msgs {
				if rights, rerr := unix.ParseUnixRights(&m); rerr == nil {
					fds = append(fds, rights...)
				}
			}
		}
	}
	fail := func(err error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		if s.ln != nil {
			s.ln.set(nil, err)
		}
		s.finish(err)
	}
	if err != nil || n == 0 {
		fail(errors.New("sandbox: the init stopped before applying the sandbox (see the server's stderr)"))
		return
	}
	var st status
	if err := json.Unmarshal(buf[:n], &st); err != nil {
		fail(fmt.Errorf("sandbox: the init's status: %w", err))
		return
	}
	if st.Err != "" {
		fail(errors.New("sandbox: " + st.Err))
		return
	}
	if s.ln != nil {
		if len(fds) != 1 {
			fail(fmt.Errorf("sandbox: the init sent %d sockets for the proxy, want 1", len(fds)))
			return
		}
		f := os.NewFile(uintptr(fds[0]), "sandbox-proxy")
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			s.ln.set(nil, fmt.Errorf("sandbox: the proxy's socket: %w", err))
			s.finish(err)
			return
		}
		s.ln.set(ln, nil)
	} else {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	s.mu.Lock()
	s.report.Missing = append(s.report.Missing, st.Missing...)
	s.mu.Unlock()
	s.finish(nil)
}
