package sharedstate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Sessions keeps the rest of a shared session's state (DESIGN.md R16,
// R32, R36): whether a result of an untrusted tool tainted it, the values
// such results brought (value-level taint), and the ids its servers
// returned (provenance). Each replica keeps its own in memory too; this is
// what it learns from the others. It is safe for concurrent use, by any
// number of processes. A write that fails is an error the caller MUST
// treat as failing closed (the result withheld); a read that fails, as
// tainted or unproven.
type Sessions struct {
	db      *sql.DB
	timeout time.Duration
}

const sessionsSchema = `
CREATE TABLE IF NOT EXISTS shared_taint (
	session TEXT PRIMARY KEY,
	by      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shared_values (
	session TEXT NOT NULL,
	token   TEXT NOT NULL,
	by      TEXT NOT NULL,
	PRIMARY KEY (session, token)
);
CREATE TABLE IF NOT EXISTS shared_ids (
	session TEXT NOT NULL,
	kind    TEXT NOT NULL,
	id      TEXT NOT NULL,
	PRIMARY KEY (session, kind, id)
)`

// OpenSessions opens the shared session state in the database at url.
func OpenSessions(ctx context.Context, url string) (*Sessions, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	if err := createOnce(ctx, db, 7340025, sessionsSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("sessions: PostgreSQL: %w", err)
	}
	return &Sessions{db: db, timeout: 10 * time.Second}, nil
}

// createOnce runs schema's statements in a transaction that holds the
// advisory lock key, so that replicas starting together create it once.
func createOnce(ctx context.Context, db *sql.DB, key int64, schema string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, key); err != nil {
		return err
	}
	for _, stmt := range strings.Split(schema, ";") {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Close closes the store.
func (s *Sessions) Close() error { return s.db.Close() }

func (s *Sessions) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

// Taint marks session tainted by source.
func (s *Sessions) Taint(session, by string) error {
	ctx, cancel := s.ctx()
	defer cancel()
	_, err := s.db.ExecContext(ctx, `INSERT INTO shared_taint (session, by) VALUES ($1, $2) ON CONFLICT (session) DO NOTHING`, session, by)
	return wrap(err)
}

// Tainted reports whether session is tainted.
func (s *Sessions) Tainted(session string) (bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM shared_taint WHERE session = $1`, session).Scan(&n)
	return n > 0, wrap(err)
}

// TaintValues records the values (tokens) an untrusted result brought
// into session.
func (s *Sessions) TaintValues(session, by string, tokens []string) error {
	if len(tokens) == 0 {
		return nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	_, err := s.db.ExecContext(ctx, `INSERT INTO shared_values (session, token, by)
		SELECT $1, t, $2 FROM unnest($3::text[]) AS t ON CONFLICT DO NOTHING`, session, by, tokens)
	return wrap(err)
}

// CarriesTaint reports whether any of tokens came from an untrusted
// result of session.
func (s *Sessions) CarriesTaint(session string, tokens []string) (bool, error) {
	if len(tokens) == 0 {
		return false, nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM shared_values WHERE session = $1 AND token = ANY($2::text[])`, session, tokens).Scan(&n)
	return n > 0, wrap(err)
}

// Record records ids of kind that a server returned in session.
func (s *Sessions) Record(session, kind string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	_, err := s.db.ExecContext(ctx, `INSERT INTO shared_ids (session, kind, id)
		SELECT $1, $2, i FROM unnest($3::text[]) AS i ON CONFLICT DO NOTHING`, session, kind, ids)
	return wrap(err)
}

// Has reports whether every one of ids of kind was returned in session.
func (s *Sessions) Has(session, kind string, ids []string) (bool, error) {
	if len(ids) == 0 {
		return true, nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(DISTINCT id) FROM shared_ids WHERE session = $1 AND kind = $2 AND id = ANY($3::text[])`, session, kind, ids).Scan(&n)
	if err != nil {
		return false, wrap(err)
	}
	distinct := map[string]bool{}
	for _, id := range ids {
		distinct[id] = true
	}
	return n == len(distinct), nil
}

func wrap(err error) error {
	if err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	return nil
}
