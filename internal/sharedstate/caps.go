// Package sharedstate keeps in PostgreSQL the session state that replicas
// of aegis serve share: a principal's stateless requests may reach any
// replica, so what its session has spent, read and proven must be known
// to all of them.
//
// Caps ([Store]): calls are counted against their caps (R18) across
// every replica, under concurrent load, with no call counted twice or
// missed. Each taking is one transaction that holds an advisory lock on the
// session and tool, counts what the session took of the tool (in all,
// in the turn, in the last minute) and records the call only when every
// cap allows it.
package sharedstate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"

	"github.com/aegis-mcp/aegis/internal/session"
)

// A Store counts caps in a PostgreSQL database. It is safe for concurrent
// use, by any number of processes.
type Store struct {
	db  *sql.DB
	now func() time.Time
}

const schema = `
CREATE TABLE IF NOT EXISTS cap_takes (
	session TEXT NOT NULL,
	tool    TEXT NOT NULL,
	turn    TEXT NOT NULL,
	at      BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS cap_takes_session ON cap_takes (session, tool, at)
`

// keep is how long a taking is kept: past it no cap a session can still
// use counts it (sessions of aegis end after a day idle).
const keep = 7 * 24 * time.Hour

// Open opens the store in the database at url, creating its table.
func OpenCaps(ctx context.Context, url string, now func() time.Time) (*Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("caps: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	s := &Store{db: db, now: now}
	if err := s.create(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("caps: PostgreSQL: %w", err)
	}
	db.ExecContext(ctx, `DELETE FROM cap_takes WHERE at < $1`, now().Add(-keep).UnixNano())
	return s, nil
}

// create creates the table, once among replicas that start together.
func (s *Store) create(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7340022)`); err != nil {
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
func (s *Store) Close() error { return s.db.Close() }

// Take counts a call of tool in session and turn against l, as
// session.Store.Take does in memory: ok when every cap allows it, else
// the cap that refuses (per_session, then per_turn, then per_minute). An
// error means the call could not be counted (a name PostgreSQL text
// cannot hold, a NUL, is one), and MUST be refused.
func (s *Store) Take(ctx context.Context, sess, turn, tool string, l session.Limits) (ok bool, c session.Cap, err error) {
	if l == (session.Limits{}) {
		return true, session.NoCap, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, session.NoCap, fmt.Errorf("caps: %w", err)
	}
	defer tx.Rollback()
	// One taker of this session's tool at a time, on every replica.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(31) || $2, 7340023))`, sess, tool); err != nil {
		return false, session.NoCap, fmt.Errorf("caps: %w", err)
	}
	now := s.now().UnixNano()
	var total, inTurn, inMinute int
	err = tx.QueryRowContext(ctx, `SELECT count(*),
		count(*) FILTER (WHERE turn = $3),
		count(*) FILTER (WHERE at > $4)
		FROM cap_takes WHERE session = $1 AND tool = $2`,
		sess, tool, turn, now-int64(time.Minute)).Scan(&total, &inTurn, &inMinute)
	if err != nil {
		return false, session.NoCap, fmt.Errorf("caps: %w", err)
	}
	switch {
	case over(total, l.PerSession):
		return false, session.PerSession, nil
	case over(inTurn, l.PerTurn):
		return false, session.PerTurn, nil
	case over(inMinute, l.PerMinute):
		return false, session.PerMinute, nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO cap_takes (session, tool, turn, at) VALUES ($1, $2, $3, $4)`, sess, tool, turn, now); err != nil {
		return false, session.NoCap, fmt.Errorf("caps: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return false, session.NoCap, fmt.Errorf("caps: %w", err)
	}
	return true, session.NoCap, nil
}

func over(n, limit int) bool { return limit != 0 && n >= limit }
