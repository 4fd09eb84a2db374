package approval

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/aegis-mcp/aegis/internal/pgtest"
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
		url := pgtest.URL(t)
		var where string
		test(t, func(t *testing.T) string {
			if where == "" {
				where = pgtest.Schema(t, url)
			}
			return where
		})
	})
}

// TestPostgresReplicasStart: replicas that open the store at the same
// moment create its table once, and all work.
func TestPostgresReplicasStart(t *testing.T) {
	where := pgtest.Schema(t, pgtest.URL(t))
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
