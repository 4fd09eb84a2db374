package gateway

// SharedSessions is where the session state that replicas share lives
// besides the caps (CapStore): taint, value taint and provenance ids. An
// engine that has one writes what it learns there as well as in its own
// memory, and consults it when its memory says a session is clean or an
// id unproven. A write that fails withholds the result that taught it; a
// read that fails counts as tainted, or unproven.
type SharedSessions interface {
	Taint(session, by string) error
	Tainted(session string) (bool, error)
	TaintValues(session, by string, tokens []string) error
	CarriesTaint(session string, tokens []string) (bool, error)
	Record(session, kind string, ids []string) error
	Has(session, kind string, ids []string) (bool, error)
}

// ShareSessions makes e keep its sessions' taint and provenance in s too.
// Call it before e decides anything.
func (e *Engine) ShareSessions(s SharedSessions) { e.sharedSessions = s }

// sharedTainted reports whether another replica tainted session (or the
// shared state cannot be read).
func (e *Engine) sharedTainted(session string) bool {
	if e.sharedSessions == nil || session == "" {
		return false
	}
	t, err := e.sharedSessions.Tainted(session)
	return t || err != nil
}

// sharedCarries reports whether tokens carry taint another replica saw
// in session (or the shared state cannot be read).
func (e *Engine) sharedCarries(session string, tokens []string) bool {
	if e.sharedSessions == nil || session == "" {
		return false
	}
	t, err := e.sharedSessions.CarriesTaint(session, tokens)
	return t || err != nil
}

// sharedHas reports whether another replica's servers returned every id
// of kind in session.
func (e *Engine) sharedHas(session, kind string, ids []string) bool {
	if e.sharedSessions == nil || session == "" {
		return false
	}
	ok, err := e.sharedSessions.Has(session, kind, ids)
	return ok && err == nil
}
