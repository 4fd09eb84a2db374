// Package dnstest runs a DNS server on loopback whose answers a test
// scripts: a name can answer one address first and another later, as a
// DNS rebinding attacker's server does. It serves aegis's tests only (the
// egress resolver's and the end-to-end sandbox tests), over UDP and TCP on
// one port, for A and AAAA queries; it knows nothing of aegis.
package dnstest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"golang.org/x/net/dns/dnsmessage"
)

// Answers says which addresses the nth query of a name (counted from 0,
// for A and AAAA queries apart) is answered with. An A query gets its
// IPv4 addresses, an AAAA query its IPv6 ones.
type Answers func(n int) []netip.Addr

// Sequence answers the nth query with answers[n], and every query past
// the last with the last answer: Sequence(allowed, denied) is the
// rebinding name that resolves to allowed once, then to denied.
func Sequence(answers ...[]netip.Addr) Answers {
	return func(n int) []netip.Addr {
		if len(answers) == 0 {
			return nil
		}
		return answers[min(n, len(answers)-1)]
	}
}

// Alternate answers the queries with answers in turn, over and over.
func Alternate(answers ...[]netip.Addr) Answers {
	return func(n int) []netip.Addr {
		if len(answers) == 0 {
			return nil
		}
		return answers[n%len(answers)]
	}
}

// Served is one answer the server gave.
type Served struct {
	Name  string // the name asked, lower case, with its trailing dot
	Type  dnsmessage.Type
	Addrs []netip.Addr
}

// Server is a DNS server on 127.0.0.1. A name the zone does not hold is
// answered NXDOMAIN; a held name asked for another type than A or AAAA
// is answered with no records.
type Server struct {
	udp net.PacketConn
	tcp net.Listener
	wg  sync.WaitGroup

	mu     sync.Mutex
	zone   map[string]Answers
	asked  map[string]int // by name and type: "name/A"
	served []Served
}

// NewServer starts a server for zone, whose keys are names ("rebind.test",
// any case, with or without the trailing dot). Close stops it.
func NewServer(zone map[string]Answers) (*Server, error) {
	s := &Server{zone: map[string]Answers{}, asked: map[string]int{}}
	for name, a := range zone {
		s.zone[canonical(name)] = a
	}
	// UDP and TCP on the same port: a resolver falls back to TCP for a
	// truncated answer, or uses it only (resolv.conf's use-vc).
	var err error
	for range 10 {
		if s.udp, err = net.ListenPacket("udp4", "127.0.0.1:0"); err != nil {
			return nil, err
		}
		s.tcp, err = net.Listen("tcp4", s.udp.LocalAddr().String())
		if err == nil {
			break
		}
		s.udp.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("dnstest: no port free for both UDP and TCP: %w", err)
	}
	s.wg.Add(2)
	go s.serveUDP()
	go s.serveTCP()
	return s, nil
}

// Addr is the server's address, to give a resolver as its nameserver.
func (s *Server) Addr() netip.AddrPort {
	return s.udp.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Served returns the answers given so far, in order.
func (s *Server) Served() []Served {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.served)
}

// Close stops the server and waits for it.
func (s *Server) Close() error {
	err := errors.Join(s.udp.Close(), s.tcp.Close())
	s.wg.Wait()
	return err
}

func (s *Server) serveUDP() {
	defer s.wg.Done()
	buf := make([]byte, 1500)
	for {
		n, from, err := s.udp.ReadFrom(buf)
		if err != nil {
			return
		}
		if out, ok := s.answer(buf[:n]); ok {
			s.udp.WriteTo(out, from)
		}
	}
}

func (s *Server) serveTCP() {
	defer s.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := s.tcp.Accept()
		if err != nil {
			return
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer c.Close()
			for {
				var n uint16
				if binary.Read(c, binary.BigEndian, &n) != nil {
					return
				}
				msg := make([]byte, n)
				if _, err := io.ReadFull(c, msg); err != nil {
					return
				}
				out, ok := s.answer(msg)
				if !ok {
					return
				}
				if _, err := c.Write(binary.BigEndian.AppendUint16(nil, uint16(len(out)))); err != nil {
					return
				}
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}()
	}
}

// answer builds the response to one query message; false means the
// message is no query to answer.
func (s *Server) answer(msg []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil || h.Response {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	name := canonical(q.Name.String())
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	var addrs []netip.Addr
	s.mu.Lock()
	answers, ok := s.zone[name]
	if !ok {
		rh.RCode = dnsmessage.RCodeNameError
	} else if q.Type == dnsmessage.TypeA || q.Type == dnsmessage.TypeAAAA {
		key := name + "/" + q.Type.String()
		for _, a := range answers(s.asked[key]) {
			if a.Is4() == (q.Type == dnsmessage.TypeA) {
				addrs = append(addrs, a)
			}
		}
		s.asked[key]++
		s.served = append(s.served, Served{Name: name, Type: q.Type, Addrs: addrs})
	}
	s.mu.Unlock()

	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	rrh := dnsmessage.ResourceHeader{Name: q.Name, Type: q.Type, Class: dnsmessage.ClassINET, TTL: 0}
	for _, a := range addrs {
		var err error
		if a.Is4() {
			err = b.AResource(rrh, dnsmessage.AResource{A: a.As4()})
		} else {
			err = b.AAAAResource(rrh, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, false
		}
	}
	out, err := b.Finish()
	return out, err == nil
}

// canonical is a name as the zone keys it: lower case, with the trailing
// dot.
func canonical(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, ".")) + "."
}
