package pin

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"
)

// The pins of replicas live in one table, a row per server holding the
// same document a pin file holds, with a version that each change
// increments: a replica reads the document again only when the version
// moved, which it checks on every lookup.

const postgresSchema = `CREATE TABLE IF NOT EXISTS pins (
	server  TEXT PRIMARY KEY,
	version BIGINT NOT NULL,
	doc     TEXT NOT NULL
)`

// OpenPostgres opens the pins of server in the PostgreSQL database at url,
// creating the table if need be.
func OpenPostgres(ctx context.Context, url, server string) (*Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("pins: %w", err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		defer tx.Rollback()
		// Replicas that start together create it once.
		if _, err = tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7340024)`); err == nil {
			if _, err = tx.ExecContext(ctx, postgresSchema); err == nil {
				err = tx.Commit()
			}
		}
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("pins: PostgreSQL: %w", err)
	}
	s := &Store{path: "postgres:pins/" + server, db: db, server: server, version: -1}
	if err := s.reload(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes a store in PostgreSQL; for a file it does nothing.
func (s *Store) Close() error {
	if s.db == nil {
		return nil
	}
	return s.db.Close()
}

// reloadRow reads the row if its version moved. Called with s.mu held.
func (s *Store) reloadRow() error {
	var version int64
	var doc sql.NullString
	err := s.db.QueryRow(`SELECT version, CASE WHEN version = $2 THEN NULL ELSE doc END FROM pins WHERE server = $1`, s.server, s.version).Scan(&version, &doc)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if s.tools == nil || s.version != 0 {
			s.tools, s.version = map[string]*Pin{}, 0
		}
		return nil
	case err != nil:
		return fmt.Errorf("pins: %w", err)
	case !doc.Valid:
		return nil // unchanged
	}
	tools, err := decodeFile(s.path, []byte(doc.String))
	if err != nil {
		return err
	}
	s.tools, s.version = tools, version
	return nil
}

// updateRow is update for a store in PostgreSQL: fn runs on the row's
// latest document, under the row's lock, in one transaction.
func (s *Store) updateRow(fn func(tools map[string]*Pin) (changed bool, err error)) error {
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	defer tx.Rollback()
	empty, _ := json.Marshal(fileDoc{Version: fileVersion, Tools: map[string]*Pin{}})
	if _, err := tx.ExecContext(ctx, `INSERT INTO pins (server, version, doc) VALUES ($1, 0, $2) ON CONFLICT (server) DO NOTHING`, s.server, string(empty)); err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	var version int64
	var doc string
	if err := tx.QueryRowContext(ctx, `SELECT version, doc FROM pins WHERE server = $1 FOR UPDATE`, s.server).Scan(&version, &doc); err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	tools, err := decodeFile(s.path, []byte(doc))
	if err != nil {
		return err
	}
	changed, err := fn(tools)
	if err != nil {
		return err
	}
	if !changed {
		s.tools, s.version = tools, version
		return nil
	}
	data, err := json.Marshal(fileDoc{Version: fileVersion, Tools: tools})
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE pins SET doc = $2, version = $3 WHERE server = $1`, s.server, string(data), version+1); err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	s.tools, s.version = tools, version+1
	return nil
}
