// Package pgtest gives tests a PostgreSQL database of their own: a fresh
// schema in the server AEGIS_TEST_POSTGRES names (.ci/postgres starts one
// on loopback, and .ci/run exports it). Test-only.
package pgtest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"
)

// URL is AEGIS_TEST_POSTGRES; without it the test is skipped, saying how
// to run it, and fails under CI=true, where a skip would pass unseen.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("AEGIS_TEST_POSTGRES")
	if url == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("AEGIS_TEST_POSTGRES is not set: .ci/run starts PostgreSQL with .ci/postgres")
		}
		t.Skip("AEGIS_TEST_POSTGRES is not set (export AEGIS_TEST_POSTGRES=$(.ci/postgres) to run this)")
	}
	return url
}

// Schema makes a schema of the test's own in the database at url,
// dropped after the test, and returns url with it as the search path.
func Schema(t testing.TB, url string) string {
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
		t.Fatalf("PostgreSQL at %s: %v", url, err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("pgx", url); err == nil {
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
