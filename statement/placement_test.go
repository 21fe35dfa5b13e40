package statement

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/icefloe/icefloe/planner"
)

// TestPlacementStaysInWarehouse: table and schema locations and the
// properties that place files must stay under the catalog's warehouse;
// anything else is refused naming the key.
func TestPlacementStaysInWarehouse(t *testing.T) {
	e := newEnv(t)
	wh := filepath.Join(e.dir, "warehouse")
	outside := filepath.Join(e.dir, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(wh, "link")); err != nil {
		t.Fatal(err)
	}
	e.exec(t, "CREATE TABLE t (a INT)")
	for _, c := range []struct{ q, key string }{
		{"CREATE TABLE x (a INT) WITH ('write.data.path' = '" + outside + "')", "write.data.path"},
		{"CREATE TABLE x (a INT) WITH ('write.metadata.path' = '/tmp/icefloe-evil')", "write.metadata.path"},
		{"CREATE TABLE x (a INT) WITH (location = '" + wh + "/../outside/x')", "location"},
		{"CREATE TABLE x (a INT) WITH (location = '" + wh + "/link/x')", "location"},
		{"CREATE TABLE x (a INT) WITH ('write.object-storage.path' = 's3://elsewhere/x')", "write.object-storage.path"},
		{"CREATE TABLE x (a INT) WITH ('write.folder-storage.path' = 'file:///tmp')", "write.folder-storage.path"},
		{"CREATE TABLE x (a INT) WITH ('write.location-provider.impl' = 'com.example.Anywhere')", "write.location-provider.impl"},
		{"CREATE TABLE x (a INT) WITH ('write.data.path' = 'relative/dir')", "write.data.path"},
		{"CREATE TABLE x WITH ('write.data.path' = '" + outside + "') AS SELECT 1 AS a", "write.data.path"},
		{"ALTER TABLE t SET TBLPROPERTIES ('write.data.path' = '" + outside + "')", "write.data.path"},
		{"ALTER TABLE t SET TBLPROPERTIES ('write.metadata.path' = '" + wh + "/link')", "write.metadata.path"},
		{"CREATE SCHEMA s WITH (location = '" + outside + "')", "location"},
	} {
		e.execErr(t, c.q, planner.ErrRefused, c.key)
	}
	if _, err := e.cat.LoadTable(t.Context(), []string{"default", "x"}); err == nil {
		t.Fatal("a refused CREATE TABLE made table x")
	}
	// Under the warehouse, a client may choose.
	e.exec(t, "CREATE TABLE y (a INT) WITH (location = '"+wh+"/custom/y', 'write.data.path' = 'file://"+wh+"/custom/y-data')")
	y := e.load(t, "default", "y")
	if y.Location() != wh+"/custom/y" || y.Properties()["location"] != "" {
		t.Fatalf("location %s, properties %v", y.Location(), y.Properties())
	}
	e.exec(t, "INSERT INTO y VALUES (1)")
	if files, err := filepath.Glob(filepath.Join(wh, "custom", "y-data", "*.parquet")); err != nil || len(files) != 1 {
		t.Fatalf("data files under write.data.path: %v %v", files, err)
	}
	e.exec(t, "ALTER TABLE t SET TBLPROPERTIES ('write.data.path' = '"+wh+"/t-data')")
	e.exec(t, "CREATE SCHEMA s WITH (location = '"+wh+"/s-here')")
	e.exec(t, "CREATE TABLE s.z (a INT)")
	if z := e.load(t, "s", "z"); z.Location() != "file://"+wh+"/s-here/z" && z.Location() != wh+"/s-here/z" {
		t.Fatalf("table in the schema at %s", z.Location())
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("files were written outside the warehouse: %v", entries)
	}
}
