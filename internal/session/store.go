package session

import (
	"strings"
	"sync"
	"time"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// Options configures a [Store]. The zero value works: each zero field means the
// default it names.
type Options struct {
	// Now is the clock. Nil means time.Now, whose monotonic reading makes the TTLs
	// immune to wall-clock steps. Tests inject a fake.
	Now func() time.Time
	// MaxSessions bounds the sessions held; creating one more evicts the least
	// recently used. Zero means 10,000.
	MaxSessions int
	// IdleTTL is how long a session is kept after its last use. Zero means 24 hours.
	IdleTTL time.Duration
	// IDTTL is how long a recorded id stays a member of its session's ids. Zero means
	// one hour.
	IDTTL time.Duration
	// MaxIDs bounds the ids held per session and kind; recording one more forgets
	// the least recently recorded. Zero means 1,000; more than 1<<24 means 1<<24.
	MaxIDs int
	// MaxIDBytes is the longest id recorded, after trimming; a longer one is not
	// recorded, so a call naming it fails. Zero means 512.
	MaxIDBytes int
	// MaxKinds bounds the id kinds per session; ids of one more kind are not recorded.
	// Zero means 64.
	MaxKinds int
	// MaxTools bounds the capped tools counted per session; a call to one more is
	// refused with [Capacity]. Zero means 256.
	MaxTools int
}

// The defaults of the zero fields of Options.
const (
	DefaultMaxSessions = 10_000
	DefaultIdleTTL     = 24 * time.Hour
	DefaultIDTTL       = time.Hour
	DefaultMaxIDs      = 1_000
	DefaultMaxIDBytes  = 512
	DefaultMaxKinds    = 64
	DefaultMaxTools    = 256
)

// Store holds the state of many sessions. It is safe for concurrent use; one mutex
// guards it, held for a map lookup and a few comparisons per call.
type Store struct {
	mu       sync.Mutex
	opt      Options
	now      func() time.Time
	epoch    time.Time         // times are kept as offsets from it
	sessions map[string]*state // by session id
	lru      list              // every session, most recently used first
}

// New returns an empty Store. o may be nil for the defaults.
func New(o *Options) *Store {
	var opt Options
	if o != nil {
		opt = *o
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&opt.MaxSessions, DefaultMaxSessions)
	opt.MaxIDs = min(opt.MaxIDs, 1<<24) // node indexes are int32
	def(&opt.MaxIDs, DefaultMaxIDs)
	def(&opt.MaxIDBytes, DefaultMaxIDBytes)
	def(&opt.MaxKinds, DefaultMaxKinds)
	def(&opt.MaxTools, DefaultMaxTools)
	if opt.IdleTTL <= 0 {
		opt.IdleTTL = DefaultIdleTTL
	}
	if opt.IDTTL <= 0 {
		opt.IDTTL = DefaultIDTTL
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	return &Store{opt: opt, now: now, epoch: now(), sessions: make(map[string]*state)}
}

// state is one session.
type state struct {
	id         string
	origin     capability.Origin
	tainted    bool
	taintedBy  string
	used       time.Duration // last use, as an offset from the store's epoch
	prev, next *state        // in the store's lru list
	ids        map[string]*idSet
	// values are the tokens of the session's untrusted results (value-
	// level taint), each with the result it came from; valueOrder keeps
	// their order, to forget the oldest.
	values     map[string]string
	valueOrder []string
	tools      map[string]*counter
	// lastCounter is the counter Take counted last, one of tools (counters
	// are never removed from tools).
	lastCounter *counter
}

// Len returns the number of sessions held, expired ones included until they are swept.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Open starts session id with the given origin: the transport calls it once, when
// the session starts (an MCP initialize, a trigger firing). A new session of origin
// [Unattended] is tainted from the start. Opening a session the store holds never
// loosens it: an unknown origin takes the given one, interactive can become
// unattended (and tainted) but not the reverse, and taint is never cleared. Opening a
// session the store has forgotten starts it clean, so Open MUST NOT be called for a
// session that was already running.
func (s *Store) Open(id string, origin capability.Origin) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	st := s.lookup(id, now)
	if st == nil {
		st = s.create(id, now)
		if origin != capability.Interactive && origin != capability.Unattended {
			origin = capability.OriginUnknown
		}
		st.origin = origin
		if origin == capability.Unattended {
			st.taint(TaintedUnattended)
		} else if origin == capability.OriginUnknown {
			st.taint(TaintedUnknownOrigin)
		}
		return
	}
	switch {
	case origin == capability.Unattended && st.origin != capability.Unattended:
		st.origin = capability.Unattended
		st.taint(TaintedUnattended)
	case origin == capability.Interactive && st.origin == capability.OriginUnknown:
		st.origin = capability.Interactive
	}
}

// clock returns the time as an offset from the epoch. Callers hold s.mu.
func (s *Store) clock() time.Duration {
	if s.opt.Now == nil {
		// time.Since reads only the monotonic clock, which is all Sub would use of
		// time.Now: the epoch has a monotonic reading.
		return time.Since(s.epoch)
	}
	return s.now().Sub(s.epoch)
}

// lookup returns session id and marks it used, or nil if the store does not hold it or
// it has been idle too long. It sweeps expired sessions first. Callers hold s.mu.
func (s *Store) lookup(id string, now time.Duration) *state {
	s.sweep(now)
	// The session used last heads the lru list: a call of the session that
	// made the call before (the common case) needs no hashing. Every
	// session in the list is in the map and the reverse.
	st := s.lru.head
	if st == nil || st.id != id {
		if st = s.sessions[id]; st == nil {
			return nil
		}
	}
	if s.idle(st, now) { // only with a clock that went back, which sweep assumes not
		s.remove(st)
		return nil
	}
	st.used = now
	s.lru.moveToFront(st)
	return st
}

// ensure returns session id, starting it in the tainted state of a forgotten session
// if the store does not hold it. Callers hold s.mu.
func (s *Store) ensure(id string, now time.Duration) *state {
	if st := s.lookup(id, now); st != nil {
		return st
	}
	st := s.create(id, now)
	st.taint(TaintedUnknownSession)
	return st
}

// create adds a fresh session, evicting the least recently used one if the store is
// full. Callers hold s.mu and have checked that id is absent.
func (s *Store) create(id string, now time.Duration) *state {
	for len(s.sessions) >= s.opt.MaxSessions && s.lru.tail != nil {
		s.remove(s.lru.tail)
	}
	st := &state{id: strings.Clone(id), used: now}
	s.sessions[st.id] = st
	s.lru.pushFront(st)
	return st
}

// sweep removes the sessions idle for IdleTTL or longer. They sit at the tail of the
// lru list, so a call removes only what has expired. Callers hold s.mu.
func (s *Store) sweep(now time.Duration) {
	for st := s.lru.tail; st != nil && s.idle(st, now); st = s.lru.tail {
		s.remove(st)
	}
}

func (s *Store) idle(st *state, now time.Duration) bool { return now-st.used >= s.opt.IdleTTL }

func (s *Store) remove(st *state) {
	delete(s.sessions, st.id)
	s.lru.unlink(st)
}

// list is an intrusive doubly linked list of sessions.
type list struct{ head, tail *state }

func (l *list) pushFront(st *state) {
	st.prev, st.next = nil, l.head
	if l.head != nil {
		l.head.prev = st
	} else {
		l.tail = st
	}
	l.head = st
}

func (l *list) unlink(st *state) {
	if st.prev != nil {
		st.prev.next = st.next
	} else {
		l.head = st.next
	}
	if st.next != nil {
		st.next.prev = st.prev
	} else {
		l.tail = st.prev
	}
	st.prev, st.next = nil, nil
}

func (l *list) moveToFront(st *state) {
	if l.head != st {
		l.unlink(st)
		l.pushFront(st)
	}
}
