package planner

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
)

// TestViewsNeedAViewCatalog: CREATE VIEW and DROP VIEW in a catalog
// whose kind keeps no views are Unimplemented, naming the catalog; a
// query naming a missing table there is still "not found".
func TestViewsNeedAViewCatalog(t *testing.T) {
	e := newDDLEnv(t)
	cat, props, err := catalog.OpenLocal(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Only the Catalog interface: no view methods, as with Glue.
	if err := e.p.opts.Mounts.Mount("flat", struct{ icecat.Catalog }{cat}, props); err != nil {
		t.Fatal(err)
	}
	e.execErr(t, `CREATE VIEW flat."default".v AS SELECT 1 AS x`, ErrUnsupported, "flat", "keeps no views")
	e.execErr(t, `DROP VIEW flat."default".v`, ErrUnsupported, "flat")
	if _, err := e.p.Plan(context.Background(), e.sess, `SELECT * FROM flat."default".v`); err == nil || !errors.Is(err, ErrNotFound) {
		t.Errorf("query of a missing table in a catalog without views: %v", err)
	}
	// The local catalog keeps them.
	e.exec(t, `CREATE VIEW v AS SELECT 1 AS x`)
	e.execErr(t, `CREATE VIEW v AS SELECT 2 AS x`, ErrExists, "v")
	e.exec(t, `DROP VIEW v`)
	e.execErr(t, `DROP VIEW v`, ErrNotFound, "v")
}

// TestStoredViewSQLIsChecked: a view stored by another engine is checked
// like client SQL when it is read: no file-reading table function, no
// cycle of views.
func TestStoredViewSQLIsChecked(t *testing.T) {
	e := newDDLEnv(t)
	ctx := context.Background()
	mt, err := e.p.opts.Mounts.Get("local")
	if err != nil {
		t.Fatal(err)
	}
	views, err := mt.Views()
	if err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.String})
	for name, sql := range map[string]string{
		"leak":  "SELECT * FROM read_csv('/etc/passwd')",
		"state": "SELECT current_setting('temp_directory') AS x",
		"ping":  "SELECT * FROM pong",
		"pong":  "SELECT * FROM ping",
	} {
		if err := views.CreateView(ctx, table.Identifier{"default", name}, schema, sql); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string]error{
		"SELECT * FROM leak":  ErrRefused,
		"SELECT * FROM state": ErrRefused,
		"SELECT * FROM ping":  ErrInvalid,
	} {
		if _, err := e.p.Plan(ctx, e.sess, q); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", q, err, want)
		}
	}
}
