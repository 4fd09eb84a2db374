package session

import (
	"strings"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// What State reports as taintedBy for a session tainted by the store itself rather
// than by a tool.
const (
	TaintedUnattended     = "origin:unattended"      // the session was opened unattended
	TaintedUnknownOrigin  = "origin:unknown"         // the session was opened with an unknown origin
	TaintedUnknownSession = "session:unknown"        // the store had forgotten (or never opened) the session
	TaintedUnnamed        = "tool:unnamed-untrusted" // Taint was called with an empty name
)

// Taint marks session id tainted by the result of by, a tool the configuration marks
// untrusted (a web fetch, an email read). The first taint is the one State reports;
// taint is never cleared. Tainting a session the store does not hold starts it
// tainted by the store (see the package doc) and then by by.
func (s *Store) Taint(id, by string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if by == "" {
		by = TaintedUnnamed
	}
	s.ensure(id, s.clock()).taint(by)
}

// State returns what the policy needs to know about session id: its origin, whether
// it is tainted, and the first thing that tainted it. A session the store does not
// hold is of unknown origin and tainted by [TaintedUnknownSession]; asking does not
// start it.
func (s *Store) State(id string) (origin capability.Origin, tainted bool, taintedBy string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.lookup(id, s.clock())
	if st == nil {
		return capability.OriginUnknown, true, TaintedUnknownSession
	}
	return st.origin, st.tainted, st.taintedBy
}

// taint records the first taint of st.
func (st *state) taint(by string) {
	if !st.tainted {
		st.tainted, st.taintedBy = true, strings.Clone(by)
	}
}
