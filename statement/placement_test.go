package statement

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"

	"github.com/icefloe/icefloe/catalog"
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
	if z := e.load(t, "s", "z"); !regexp.MustCompile(`^(file://)?` + regexp.QuoteMeta(wh) + `/s-here/z-[0-9a-f]{32}$`).MatchString(z.Location()) {
		t.Fatalf("table in the schema at %s", z.Location())
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("files were written outside the warehouse: %v", entries)
	}
}

// TestLocationsAreOwned: a table gets a folder of its own; a location or
// a property placing files that is, holds or lies in another table's
// place, or is or holds a schema's folder or the warehouse, is refused at
// CREATE TABLE, ALTER TABLE … SET TBLPROPERTIES and CREATE SCHEMA; a
// CREATE OR REPLACE of the same definition keeps the table's folder, one
// of another gets a new folder named after the table; DROP TABLE … PURGE
// of a table sharing a folder (made so by an earlier version) leaves the
// other table's files.
func TestLocationsAreOwned(t *testing.T) {
	e := newEnv(t)
	wh := filepath.Join(e.dir, "warehouse")
	db := filepath.Join(wh, "default.db")
	e.exec(t, "CREATE TABLE t (a INT)")
	e.exec(t, "INSERT INTO t VALUES (1), (2)")
	tloc := strings.TrimPrefix(e.load(t, "default", "t").Location(), "file://")
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(db) + `/t-[0-9a-f]{32}$`).MatchString(tloc) {
		t.Fatalf("t's location %s, want a folder of its own in %s", tloc, db)
	}
	e.exec(t, "CREATE TABLE y (a INT)")
	for _, c := range []struct{ q, why string }{
		{"CREATE TABLE x (a INT) WITH (location = '" + tloc + "')", "is the location of another table"},
		{"CREATE TABLE x (a INT) WITH (location = 'file://" + tloc + "/')", "is the location of another table"},
		{"CREATE TABLE x (a INT) WITH (location = '" + tloc + "/sub')", "lies in the location of another table"},
		{"CREATE TABLE x (a INT) WITH (location = '" + db + "')", "schema's folder"},
		{"CREATE TABLE x (a INT) WITH (location = '" + wh + "')", "schema's folder or the warehouse"},
		{"CREATE TABLE x (a INT) WITH ('write.data.path' = '" + tloc + "/data')", "lies in the location of another table"},
		{"CREATE TABLE x (a INT) WITH (location = '" + wh + "/x', 'write.metadata.path' = '" + tloc + "/metadata')", "another table"},
		{"ALTER TABLE y SET TBLPROPERTIES ('write.data.path' = '" + tloc + "/data')", "lies in the location of another table"},
		{"ALTER TABLE y SET TBLPROPERTIES ('write.data.path' = '" + db + "')", "schema's folder"},
		{"CREATE SCHEMA s2 WITH (location = '" + tloc + "/s2')", "lies in the location of another table"},
		{"CREATE SCHEMA s2 WITH (location = '" + db + "')", "schema's folder"},
		{"CREATE OR REPLACE TABLE y (a INT) WITH (location = '" + tloc + "')", "is the location of another table"},
	} {
		e.execErr(t, c.q, planner.ErrRefused, c.why)
	}
	if _, err := e.cat.LoadTable(t.Context(), []string{"default", "x"}); err == nil {
		t.Fatal("a refused CREATE TABLE made table x")
	}
	// A table's own folder is its own to use.
	e.exec(t, "ALTER TABLE t SET TBLPROPERTIES ('write.data.path' = '"+tloc+"/data2')")
	e.exec(t, "CREATE OR REPLACE TABLE y (a INT) WITH (location = '"+wh+"/y-here')")
	e.exec(t, "CREATE OR REPLACE TABLE y (a BIGINT) WITH (location = '"+wh+"/y-here')")
	if loc := strings.TrimPrefix(e.load(t, "default", "y").Location(), "file://"); loc != wh+"/y-here" {
		t.Fatalf("y replaced at its own location is at %s", loc)
	}
	// The same definition replaces in place; another makes a new folder.
	e.exec(t, "CREATE OR REPLACE TABLE t (a INT)")
	if loc := strings.TrimPrefix(e.load(t, "default", "t").Location(), "file://"); loc != tloc {
		t.Fatalf("a replace of the same definition moved t from %s to %s", tloc, loc)
	}
	e.exec(t, "CREATE OR REPLACE TABLE t (a BIGINT, b VARCHAR)")
	nloc := strings.TrimPrefix(e.load(t, "default", "t").Location(), "file://")
	if nloc == tloc || strings.Contains(nloc, "__icefloe_staging_") || !regexp.MustCompile(`/t-[0-9a-f]{32}$`).MatchString(nloc) {
		t.Fatalf("t after a replace of another definition at %s (was %s)", nloc, tloc)
	}
	// A table an earlier version made in u's folder: purging it keeps u.
	e.exec(t, "CREATE TABLE u (a INT)")
	e.exec(t, "INSERT INTO u VALUES (7)")
	u := e.load(t, "default", "u")
	if _, err := e.cat.CreateTable(t.Context(), []string{"default", "legacy"}, u.Schema(), icecat.WithLocation(u.Location())); err != nil {
		t.Fatal(err)
	}
	e.exec(t, "INSERT INTO legacy VALUES (8)")
	e.exec(t, "DROP TABLE legacy PURGE")
	if got := e.query(t, e.load(t, "default", "u"), "SELECT count(*) FROM t"); len(got) != 1 || got[0] != "1" {
		t.Fatalf("u after the purge of a table sharing its folder: %v", got)
	}
}

// TestStagingLocationWhereTheCatalogChooses: where the schema's folder
// cannot be told (a catalog without a warehouse location, as REST
// catalogs often are), a table made under a staging name does not keep
// the folder the catalog named after the staging table: it is made again
// in the same folder under one named after the table.
func TestStagingLocationWhereTheCatalogChooses(t *testing.T) {
	e := newEnv(t)
	cat, _, err := catalog.OpenLocal(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.x.opts.Mounts.Mount("nowh", cat, iceberg.Properties{}); err != nil {
		t.Fatal(err)
	}
	e.exec(t, "CREATE TABLE nowh.default.r (a INT)")
	e.exec(t, "CREATE OR REPLACE TABLE nowh.default.r (a BIGINT)")
	tbl, err := cat.LoadTable(t.Context(), []string{"default", "r"})
	if err != nil {
		t.Fatal(err)
	}
	if loc := tbl.Location(); strings.Contains(loc, "__icefloe_staging_") || !regexp.MustCompile(`/default\.db/r-[0-9a-f]{32}$`).MatchString(loc) {
		t.Fatalf("r after a replace at %s", loc)
	}
	if entries, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(filepath.Dir(tbl.Location()), "file:"), "*__icefloe_staging_*", "metadata", "*")); len(entries) != 0 {
		t.Fatalf("the first staging table's files stay: %v", entries)
	}
}
