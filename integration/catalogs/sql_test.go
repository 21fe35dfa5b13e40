//go:build catalogs

package catalogs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"google.golang.org/grpc/codes"

	"github.com/icefloe/icefloe/catalog"
)

// TestSQLPostgres runs the round trip on the SQL catalog on PostgreSQL,
// then the resolution cases with pyiceberg as the other engine.
func TestSQLPostgres(t *testing.T) {
	dsn, port := startPostgres(t)
	warehouse := t.TempDir()
	cfg := catalog.Config{Name: "pg", Type: "sql", Properties: map[string]string{
		"uri": dsn, "sql.dialect": "postgres", "warehouse": "file://" + warehouse,
	}}
	s := startCluster(t, cfg)
	cnxn := connect(t, s.Addr())
	roundTrip(t, cnxn, cfg, "s1")

	py, _ := json.Marshal(map[string]string{
		"name":      "pg",
		"uri":       fmt.Sprintf("postgresql+psycopg2://postgres@127.0.0.1:%d/postgres", port),
		"warehouse": "file://" + warehouse,
	})
	pyCat := string(py)

	t.Run("created by another engine", func(t *testing.T) {
		pyiceberg(t, pyCat, "create", "r.ext")
		wantRows(t, cnxn, "SELECT * FROM pg.r.ext ORDER BY id", "1 | x", "2 | y")
	})
	t.Run("column added by another engine", func(t *testing.T) {
		pyiceberg(t, pyCat, "add_column", "r.ext", "extra")
		wantRows(t, cnxn, "SELECT * FROM pg.r.ext ORDER BY id", "1 | x | NULL", "2 | y | NULL")
	})
	t.Run("column dropped and re-added", func(t *testing.T) {
		pyiceberg(t, pyCat, "drop_readd", "r.ext", "v")
		// The new v is another column: NULL in old files, never "x"/"y".
		wantRows(t, cnxn, "SELECT id, v FROM pg.r.ext ORDER BY id", "1 | NULL", "2 | NULL", "3 | new")
		// Only the new column read: files that predate it yield NULLs.
		wantRows(t, cnxn, "SELECT count(*) FROM pg.r.ext WHERE v IS NULL", "2")
		wantRows(t, cnxn, "SELECT v FROM pg.r.ext ORDER BY v NULLS FIRST", "NULL", "NULL", "new")
	})
	t.Run("tag", func(t *testing.T) {
		pyiceberg(t, pyCat, "tag", "r.ext", "v1")
		wantRows(t, cnxn, "SELECT count(*) FROM pg.r.ext AT (VERSION => 'v1')", "3")
		wantRows(t, cnxn, `SELECT name, type FROM pg.r."ext$refs" ORDER BY name`, "main | BRANCH", "v1 | TAG")
	})
	t.Run("dropped by another engine", func(t *testing.T) {
		pyiceberg(t, pyCat, "create", "r.gone")
		wantRows(t, cnxn, "SELECT count(*) FROM pg.r.gone", "2")
		pyiceberg(t, pyCat, "drop", "r.gone")
		_, err := query(t, cnxn, "SELECT count(*) FROM pg.r.gone")
		if code(err) != codes.NotFound {
			t.Fatalf("dropped table: %v, want NotFound", err)
		}
	})
	t.Run("dropped mid-query", func(t *testing.T) {
		pyiceberg(t, pyCat, "create", "r.mid")
		parts := planQuery(t, cnxn, "SELECT * FROM pg.r.mid")
		pyiceberg(t, pyCat, "purge", "r.mid")
		err := readPartitions(cnxn, parts)
		if err == nil {
			t.Fatal("a query whose table was purged mid-query succeeded")
		}
		if c := code(err); c == codes.OK || c == codes.Unknown {
			t.Fatalf("purged mid-query: %v, want a clean status", err)
		}
		if !strings.Contains(err.Error(), "pg.r.mid") {
			t.Fatalf("error %q does not name the table", err)
		}
		// The cluster is fine afterwards.
		wantRows(t, cnxn, "SELECT count(*) FROM pg.r.ext", "3")
	})
	t.Run("unreachable", func(t *testing.T) {
		bad := catalog.Config{Name: "pgdown", Type: "sql", Properties: map[string]string{
			"uri": "postgres://postgres:pw@127.0.0.1:1/postgres?sslmode=disable", "sql.dialect": "postgres",
		}}
		_, _, err := catalog.Open(context.Background(), bad)
		wantErrIs(t, err, catalog.ErrUnavailable)
		if !strings.Contains(err.Error(), "pgdown") || strings.Contains(err.Error(), ":pw@") {
			t.Fatalf("error %q: want the catalog named and no password", err)
		}
	})
}

func planQuery(t *testing.T, cnxn adbc.Connection, q string) adbc.Partitions {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		t.Fatal(err)
	}
	_, parts, _, err := stmt.ExecutePartitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

func readPartitions(cnxn adbc.Connection, parts adbc.Partitions) error {
	for _, p := range parts.PartitionIDs {
		rdr, err := cnxn.ReadPartition(context.Background(), p)
		if err != nil {
			return err
		}
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
