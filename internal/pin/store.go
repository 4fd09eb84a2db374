package pin

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aegis-mcp/aegis/internal/atomicfile"
	"github.com/aegis-mcp/aegis/internal/filelock"
)

// Pin is the pinned definition of one tool.
type Pin struct {
	Full   Digest          `json:"full"`
	Shape  Digest          `json:"shape"`
	Def    json.RawMessage `json:"definition"`
	Pinned time.Time       `json:"pinned"`
	// Pending is a definition the server listed later whose shape differs
	// from the pinned one. While it is set the tool is held.
	Pending *Listing `json:"pending,omitempty"`
}

// Listing is a definition the server listed and no one accepted yet.
type Listing struct {
	Full  Digest          `json:"full"`
	Shape Digest          `json:"shape"`
	Def   json.RawMessage `json:"definition"`
	Seen  time.Time       `json:"seen"`
}

// Held reports whether the tool is held: listed with a shape no one has
// accepted.
func (p *Pin) Held() bool { return p.Pending != nil }

// Status is what one listing of a tool did to its pin.
type Status int

const (
	// Same: the definition is the pinned one.
	Same Status = iota
	// New: no pin existed; the definition is pinned now.
	New
	// Described: only the description or other annotations changed; the
	// new definition replaced the pinned one (and its full hash is recorded
	// from now on) without holding the tool.
	Described
	// Held: the input schema's shape changed; the tool is held until the
	// new definition is accepted.
	Held
)

func (s Status) String() string {
	return [...]string{"same", "new", "described", "held"}[s]
}

const fileVersion = 1

type fileDoc struct {
	Version int             `json:"version"`
	Tools   map[string]*Pin `json:"tools"`
}

// Store holds the pins of one server, backed by a file, or by a row of a
// PostgreSQL database that replicas of aegis serve share (OpenPostgres):
// a tool held on one is held on all. It is safe for concurrent use, and
// for use by several processes at once.
type Store struct {
	path string

	// db, server and version back the store in PostgreSQL: the row of
	// server, at version as last read or written.
	db      *sql.DB
	server  string
	version int64

	mu    sync.Mutex
	tools map[string]*Pin
	stamp fs.FileInfo // of the file as last read or written
}

// unchanged reports whether fi is the file last read or written: the same
// file (a rename over it makes a new one), modified at the same time, of
// the same size.
func (s *Store) unchanged(fi fs.FileInfo) bool {
	return s.stamp != nil && os.SameFile(s.stamp, fi) &&
		fi.ModTime().Equal(s.stamp.ModTime()) && fi.Size() == s.stamp.Size()
}

// Open opens the pin file at path, creating its directory. A missing file
// is an empty store; a file aegis cannot read exactly is an error, never an
// empty store (that would re-pin whatever the server lists next).
func Open(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("pins: %w", err)
	}
	s := &Store{path: path}
	if err := s.reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Path returns the file the store is kept in.
func (s *Store) Path() string { return s.path }

// reload reads the file (or row) if it changed since it was last read.
// Called with s.mu held (or before s is shared).
func (s *Store) reload() error {
	if s.db != nil {
		return s.reloadRow()
	}
	fi, err := os.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		if s.tools == nil {
			s.tools = map[string]*Pin{}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	if s.tools != nil && s.unchanged(fi) {
		return nil
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	tools, err := decodeFile(s.path, data)
	if err != nil {
		return err
	}
	s.tools, s.stamp = tools, fi
	return nil
}

func decodeFile(path string, data []byte) (map[string]*Pin, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var doc fileDoc
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("pins: %s: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("pins: %s: data after the document", path)
	}
	if doc.Version != fileVersion {
		return nil, fmt.Errorf("pins: %s: version %d, want %d", path, doc.Version, fileVersion)
	}
	if doc.Tools == nil {
		doc.Tools = map[string]*Pin{}
	}
	for name, p := range doc.Tools {
		if p == nil || len(p.Def) == 0 {
			return nil, fmt.Errorf("pins: %s: tool %q has no definition", path, name)
		}
		// The hashes must be those of the definition held: a pin file edited
		// by hand cannot pin one definition under another's hash.
		d, err := Parse(p.Def)
		if err != nil || d.Name != name || d.Full != p.Full || d.Shape != p.Shape {
			return nil, fmt.Errorf("pins: %s: tool %q: the definition does not match its hashes", path, name)
		}
		if q := p.Pending; q != nil {
			d, err := Parse(q.Def)
			if err != nil || d.Name != name || d.Full != q.Full || d.Shape != q.Shape {
				return nil, fmt.Errorf("pins: %s: tool %q: the pending definition does not match its hashes", path, name)
			}
		}
	}
	return doc.Tools, nil
}

// update runs fn on the pins under the file lock, with the file's latest
// content, and writes the result if fn reports a change.
func (s *Store) update(fn func(tools map[string]*Pin) (changed bool, err error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db != nil {
		return s.updateRow(fn)
	}
	lock, err := filelock.OpenLocked(s.path + ".lock")
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	defer lock.Close() // releases the lock
	if err := s.reload(); err != nil {
		return err
	}
	changed, err := fn(s.tools)
	if err != nil || !changed {
		return err
	}
	return s.write()
}

// write replaces the file atomically. Called with s.mu and the file lock
// held.
func (s *Store) write() error {
	data, err := json.MarshalIndent(fileDoc{Version: fileVersion, Tools: s.tools}, "", "  ")
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	data = append(data, '\n')
	if err := atomicfile.WriteFile(s.path, data, 0o600); err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	s.stamp = fi
	return nil
}

// Observe records one listing of tools and returns what it did to each.
// The first definition of a tool is pinned; a definition whose shape
// differs from the pin holds the tool; one that differs only in its
// annotations replaces the pin; the pinned definition listed again
// releases a hold, but for pins shared by replicas (OpenPostgres), where
// only a person releases it.
func (s *Store) Observe(defs []*Def, now time.Time) ([]Status, error) {
	out := make([]Status, len(defs))
	err := s.update(func(tools map[string]*Pin) (bool, error) {
		changed := false
		for i, d := range defs {
			p := tools[d.Name]
			switch {
			case p == nil:
				tools[d.Name] = &Pin{Full: d.Full, Shape: d.Shape, Def: d.Raw, Pinned: now.UTC()}
				out[i], changed = New, true
			case d.Shape != p.Shape:
				out[i] = Held
				if p.Pending == nil || p.Pending.Full != d.Full {
					p.Pending = &Listing{Full: d.Full, Shape: d.Shape, Def: d.Raw, Seen: now.UTC()}
					changed = true
				}
			case d.Full != p.Full:
				p.Full, p.Def, p.Pending = d.Full, d.Raw, nil
				out[i], changed = Described, true
			case p.Pending != nil && s.db != nil:
				// Shared by replicas, whose servers may differ while one
				// is updated: the pinned definition listed by one does not
				// release what another's changed definition held. A person
				// does (aegis pins accept), or forgets the pin.
				out[i] = Held
			default:
				out[i] = Same
				if p.Pending != nil {
					p.Pending, changed = nil, true
				}
			}
		}
		return changed, nil
	})
	return out, err
}

// Lookup returns the pin of tool, with the latest state of the file: a hold
// released by `aegis pins accept` in another process is seen at once.
func (s *Store) Lookup(tool string) (Pin, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A pin in a file is read again only when it is held or missing; a
	// shared one always (its version, one query), since another replica
	// may hold it now.
	if p, ok := s.tools[tool]; ok && !p.Held() && s.db == nil {
		return *p, true, nil
	}
	if err := s.reload(); err != nil {
		return Pin{}, false, err
	}
	p, ok := s.tools[tool]
	if !ok {
		return Pin{}, false, nil
	}
	return *p, true, nil
}

// Accept makes the pending definition of each named tool its pin (every
// held tool when names is empty) and returns the tools it accepted. Naming
// a tool that is not held is an error.
func (s *Store) Accept(names []string, now time.Time) ([]string, error) {
	var done []string
	err := s.update(func(tools map[string]*Pin) (bool, error) {
		if len(names) == 0 {
			for _, name := range sortedKeys(tools) {
				if tools[name].Held() {
					names = append(names, name)
				}
			}
		}
		for _, name := range names {
			p := tools[name]
			if p == nil {
				return false, fmt.Errorf("pins: no tool %q is pinned", name)
			}
			if !p.Held() {
				return false, fmt.Errorf("pins: tool %q is not held", name)
			}
		}
		for _, name := range names {
			p := tools[name]
			q := p.Pending
			tools[name] = &Pin{Full: q.Full, Shape: q.Shape, Def: q.Def, Pinned: now.UTC()}
			done = append(done, name)
		}
		return len(done) > 0, nil
	})
	return done, err
}

// Forget removes the pins of the named tools, so that their next listing
// is pinned anew.
func (s *Store) Forget(names []string) error {
	return s.update(func(tools map[string]*Pin) (bool, error) {
		for _, name := range names {
			if tools[name] == nil {
				return false, fmt.Errorf("pins: no tool %q is pinned", name)
			}
		}
		for _, name := range names {
			delete(tools, name)
		}
		return len(names) > 0, nil
	})
}

// All returns a copy of every pin, by tool name.
func (s *Store) All() (map[string]Pin, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reload(); err != nil {
		return nil, err
	}
	out := make(map[string]Pin, len(s.tools))
	for k, p := range s.tools {
		out[k] = *p
	}
	return out, nil
}

func sortedKeys(m map[string]*Pin) []string { return names(m) }
