package approval

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// eachStore runs test against each backend: a SQLite file, and the
// PostgreSQL of AEGIS_TEST_POSTGRES (.ci/postgres starts one), in a schema
// of the test's own. Without it the PostgreSQL runs are skipped, saying
// so, and fail under CI=true.
func eachStore(t *testing.T, test func(t *testing.T, where func(*testing.T) string)) {
	t.Run("sqlite", func(t *testing.T) {
		test(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "approvals.db") })
	})
	t.Run("postgres", func(t *testing.T) {
		url := postgresURL(t)
		var where string
		test(t, func(t *testing.T) string {
			if where == "" {
				where = freshSchema(t, url)
			}
			return where
		})
	})
}

// postgresURL is AEGIS_TEST_POSTGRES, or skips the test (fails it in CI).
func postgresURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv("AEGIS_TEST_POSTGRES")
	if url == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("AEGIS_TEST_POSTGRES is not set: .ci/run starts PostgreSQL with .ci/postgres")
		}
		t.Skip("AEGIS_TEST_POSTGRES is not set (export AEGIS_TEST_POSTGRES=$(.ci/postgres) to run these)")
	}
	return url
}

// freshSchema makes a schema of its own for one test in the database at
// url, dropped after it, and returns url with it as the search path.
func freshSchema(t *testing.T, url string) string {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", url)
		if err == nil {
			db.Exec("DROP SCHEMA " + schema + " CASCADE")
			db.Close()
		}
	})
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}

// TestPostgresReplicasStart: replicas that open the store at the same
// moment create its table once, and all work.
func TestPostgresReplicasStart(t *testing.T) {
	where := freshSchema(t, postgresURL(t))
	c := newClock()
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			s, err := OpenPostgres(context.Background(), where, c.opts())
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Errorf("open: %v", err)
		}
	}
}
