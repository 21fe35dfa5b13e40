package integration

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
)

// TestPlacementThroughADBC: a client cannot have files written outside
// the catalog's warehouse, by any property that places them; under the
// warehouse it may choose.
func TestPlacementThroughADBC(t *testing.T) {
	s := StartCluster(t, Workers(1))
	cnxn := adbcConn(t, s.Addr())
	wh := filepath.Join(dataDir(t, s), "warehouse")
	outside := t.TempDir()
	execUpdate(t, cnxn, "CREATE TABLE t (a INT)")
	for _, c := range []struct{ q, key string }{
		{"CREATE TABLE x (a INT) WITH ('write.data.path' = '" + outside + "')", "write.data.path"},
		{"CREATE TABLE x (a INT) WITH ('write.metadata.path' = '" + outside + "')", "write.metadata.path"},
		{"CREATE TABLE x (a INT) WITH (location = '" + wh + "/../x')", "location"},
		{"CREATE TABLE x WITH ('write.object-storage.path' = 's3://other/x') AS SELECT 1 AS a", "write.object-storage.path"},
		{"ALTER TABLE t SET TBLPROPERTIES ('write.data.path' = 'file://" + outside + "')", "write.data.path"},
		{"CREATE SCHEMA s WITH (location = '" + outside + "')", "location"},
	} {
		err := runADBC(cnxn, c.q, true, true)
		var ae adbc.Error
		if !errors.As(err, &ae) || ae.Code != adbc.StatusUnauthorized || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: got %v, want PermissionDenied naming %s", c.q, err, c.key)
		}
	}
	execUpdate(t, cnxn, "CREATE TABLE y (a INT) WITH ('write.data.path' = '"+wh+"/y-data')")
	execUpdate(t, cnxn, "INSERT INTO y VALUES (1), (2)")
	wantRows(t, cnxn, "SELECT count(*) FROM y", "2")
	if files, _ := filepath.Glob(filepath.Join(wh, "y-data", "*.parquet")); len(files) == 0 {
		t.Error("no data file under the chosen write.data.path")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("files were written outside the warehouse: %v", entries)
	}
}
