package approval

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx", for PostgreSQL
	_ "modernc.org/sqlite"             // the database/sql driver "sqlite", pure Go
)

// A Store keeps approvals in a database that several processes share:
// `aegis run` and `aegis serve` put and await, `aegis approvals` and the
// console list and answer. The database is a SQLite file on one machine,
// or PostgreSQL, which the replicas of `aegis serve` share: a question put
// on one is answered on any and honoured where its call waits. Its
// methods are safe for concurrent use.
type Store struct {
	db       *sql.DB
	postgres bool
	now      func() time.Time
	poll     time.Duration
}

// q is query, written with ? placeholders, in the store's dialect.
func (s *Store) q(query string) string {
	if !s.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Options configure [Open]. The zero value works.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Poll is how often [Store.Await] looks for an answer; zero means
	// 100 ms.
	Poll time.Duration
}

const schema = `
CREATE TABLE IF NOT EXISTS approvals (
	id          TEXT PRIMARY KEY,
	created     BIGINT NOT NULL,
	expires     BIGINT NOT NULL,
	session     TEXT NOT NULL,
	principal   TEXT NOT NULL,
	server      TEXT NOT NULL,
	method      TEXT NOT NULL,
	tool        TEXT NOT NULL,
	args_hash   TEXT NOT NULL,
	policy_hash TEXT NOT NULL,
	request     TEXT NOT NULL,
	state       TEXT NOT NULL,
	answer      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS approvals_state ON approvals (state, created);
`

// keep is how long an answered or expired approval is kept, for `aegis
// approvals show`; the chain keeps the record for good.
const keep = 7 * 24 * time.Hour

// Open opens (creating it, mode 0600) the store at path.
func Open(path string, o *Options) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	// Created with the right mode before SQLite opens it.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	f.Close()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	s := newStore(db, false, o)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("approvals: %s: %w", path, err)
	}
	s.tidy()
	return s, nil
}

// IsURL reports whether where names a PostgreSQL database (a
// postgres:// or postgresql:// URL) rather than a file.
func IsURL(where string) bool {
	return strings.HasPrefix(where, "postgres://") || strings.HasPrefix(where, "postgresql://")
}

// OpenPostgres opens the store in the PostgreSQL database at url (a
// postgres:// URL; a password is better in PGPASSWORD or ~/.pgpass than
// in it), creating its table if need be.
func OpenPostgres(ctx context.Context, url string, o *Options) (*Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	s := newStore(db, true, o)
	if err := s.createPostgres(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("approvals: PostgreSQL: %w", err)
	}
	s.tidy()
	return s, nil
}

// createPostgres creates the table, once among replicas that start at
// the same moment (CREATE TABLE IF NOT EXISTS races with itself).
func (s *Store) createPostgres(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7340021)`); err != nil {
		return err
	}
	for _, stmt := range strings.Split(schema, ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func newStore(db *sql.DB, postgres bool, o *Options) *Store {
	s := &Store{db: db, postgres: postgres, now: time.Now, poll: 100 * time.Millisecond}
	if o != nil && o.Now != nil {
		s.now = o.Now
	}
	if o != nil && o.Poll > 0 {
		s.poll = o.Poll
	}
	return s
}

// tidy deletes the approvals answered or expired long ago.
func (s *Store) tidy() {
	s.db.Exec(s.q(`DELETE FROM approvals WHERE state != ? AND created < ?`), Pending, s.now().Add(-keep).UnixNano())
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// Put adds a pending approval for r; r.ID, Created and Expires must be
// set.
func (s *Store) Put(ctx context.Context, r *Request) error {
	if err := checkID(r.ID); err != nil || len(r.ID) != 16 {
		return fmt.Errorf("approvals: put: id %q: want 16 hex digits", r.ID)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("approvals: put: %w", err)
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO approvals
		(id, created, expires, session, principal, server, method, tool, args_hash, policy_hash, request, state)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		r.ID, r.Created.UnixNano(), r.Expires.UnixNano(), r.Session, r.Principal, r.Server, r.Method, r.Tool,
		r.ArgsHash, r.PolicyHash, string(b), Pending)
	if err != nil {
		return fmt.Errorf("approvals: put: %w", err)
	}
	return nil
}

// Answer records a person's answer to the pending approval id (or a
// unique prefix of it). It fails with ErrAnswered, ErrExpired or
// ErrUnknown when there is nothing to answer.
func (s *Store) Answer(ctx context.Context, id string, a Answer) (*Approval, error) {
	if a.Approve {
		if _, err := ParseScope(string(a.Scope)); err != nil {
			return nil, err
		}
	} else {
		a.Scope = ""
	}
	if a.At.IsZero() {
		a.At = s.now()
	}
	ap, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(a)
	state := Denied
	if a.Approve {
		state = Approved
	}
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE approvals SET state = ?, answer = ?
		WHERE id = ? AND state = ? AND expires > ?`), state, string(b), ap.ID, Pending, a.At.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("approvals: answer: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return nil, s.whyNot(ctx, ap.ID)
	}
	return s.Get(ctx, ap.ID)
}

// whyNot says why approval id could not be answered.
func (s *Store) whyNot(ctx context.Context, id string) error {
	ap, err := s.Get(ctx, id)
	switch {
	case err != nil:
		return err
	case ap.State == Pending || ap.State == Expired:
		return ErrExpired
	default:
		return ErrAnswered
	}
}

// Get returns the approval id, or the one approval whose id starts with
// it.
func (s *Store) Get(ctx context.Context, id string) (*Approval, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT request, state, answer, expires FROM approvals
		WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 2`), len(id), id)
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	aps, err := s.scan(rows)
	if err != nil {
		return nil, err
	}
	switch len(aps) {
	case 0:
		return nil, fmt.Errorf("%w: %s", ErrUnknown, id)
	case 1:
		return aps[0], nil
	}
	return nil, fmt.Errorf("%w: %s", ErrAmbiguous, id)
}

// List returns the approvals still pending, oldest first, or with all
// set every approval kept.
func (s *Store) List(ctx context.Context, all bool) ([]*Approval, error) {
	q := `SELECT request, state, answer, expires FROM approvals WHERE state = ? AND expires > ? ORDER BY created`
	args := []any{Pending, s.now().UnixNano()}
	if all {
		q, args = `SELECT request, state, answer, expires FROM approvals ORDER BY created`, nil
	}
	rows, err := s.db.QueryContext(ctx, s.q(q), args...)
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	return s.scan(rows)
}

func (s *Store) scan(rows *sql.Rows) ([]*Approval, error) {
	defer rows.Close()
	var out []*Approval
	now := s.now().UnixNano()
	for rows.Next() {
		var req, state, answer string
		var expires int64
		if err := rows.Scan(&req, &state, &answer, &expires); err != nil {
			return nil, fmt.Errorf("approvals: %w", err)
		}
		ap := &Approval{State: State(state)}
		if err := json.Unmarshal([]byte(req), &ap.Request); err != nil {
			return nil, fmt.Errorf("approvals: a stored request: %w", err)
		}
		if answer != "" {
			ap.Answer = new(Answer)
			if err := json.Unmarshal([]byte(answer), ap.Answer); err != nil {
				return nil, fmt.Errorf("approvals: a stored answer: %w", err)
			}
		}
		if ap.State == Pending && expires <= now {
			ap.State = Expired // nobody marked it yet: its call went
		}
		out = append(out, ap)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	return out, nil
}

// Await waits until approval id is answered, expires, or ctx is done.
// An approved approval is taken (used) then, atomically, and only if its
// arguments and policy hashes are still argsHash and policyHash: it
// returns the answer, or ErrMismatch. When it expires, or ctx is done, the
// approval is marked expired, so that a late answer is refused; the error
// is ErrExpired or ctx's.
func (s *Store) Await(ctx context.Context, id, argsHash, policyHash string) (Answer, error) {
	t := time.NewTicker(s.poll)
	defer t.Stop()
	for {
		ap, err := s.Get(context.WithoutCancel(ctx), id)
		if err != nil {
			return Answer{}, err
		}
		switch ap.State {
		case Approved:
			return s.take(ctx, ap, argsHash, policyHash)
		case Denied:
			return *ap.Answer, nil
		case Used:
			return Answer{}, ErrAnswered
		case Expired:
			if err := s.expire(id); err != nil {
				return Answer{}, err
			}
			return Answer{}, ErrExpired
		}
		select {
		case <-ctx.Done():
			if err := s.expire(id); err != nil {
				return Answer{}, err
			}
			return Answer{}, ctx.Err()
		case <-t.C:
		}
	}
}

// expire marks an approval its call no longer waits for expired: a
// pending one, and one approved as the call gave up (the approval lost
// the race and was never taken, so it does not stay "approved").
func (s *Store) expire(id string) error {
	_, err := s.db.Exec(s.q(`UPDATE approvals SET state = ? WHERE id = ? AND state IN (?, ?)`), Expired, id, Pending, Approved)
	if err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	return nil
}

// take uses an approved approval, once.
func (s *Store) take(ctx context.Context, ap *Approval, argsHash, policyHash string) (Answer, error) {
	res, err := s.db.ExecContext(context.WithoutCancel(ctx), s.q(`UPDATE approvals SET state = ?
		WHERE id = ? AND state = ? AND args_hash = ? AND policy_hash = ?`), Used, ap.ID, Approved, argsHash, policyHash)
	if err != nil {
		return Answer{}, fmt.Errorf("approvals: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		if ap.ArgsHash != argsHash || ap.PolicyHash != policyHash {
			return Answer{}, ErrMismatch
		}
		return Answer{}, ErrAnswered
	}
	return *ap.Answer, nil
}

// IsEnd reports whether err says the approval can no longer be answered.
func IsEnd(err error) bool {
	return errors.Is(err, ErrExpired) || errors.Is(err, ErrAnswered)
}
