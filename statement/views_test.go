package statement

import (
	"context"
	"errors"
	"testing"

	icecat "github.com/apache/iceberg-go/catalog"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/planner"
)

// TestViewsNeedAViewCatalog: CREATE VIEW and DROP VIEW in a catalog
// whose kind keeps no views are Unimplemented, naming the catalog; a
// query naming a missing table there is still "not found".
func TestViewsNeedAViewCatalog(t *testing.T) {
	e := newEnv(t)
	cat, props, err := catalog.OpenLocal(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Only the Catalog interface: no view methods, as with Glue.
	if err := e.x.opts.Mounts.Mount("flat", struct{ icecat.Catalog }{cat}, props); err != nil {
		t.Fatal(err)
	}
	e.execErr(t, `CREATE VIEW flat."default".v AS SELECT 1 AS x`, planner.ErrUnsupported, "flat", "keeps no views")
	e.execErr(t, `DROP VIEW flat."default".v`, planner.ErrUnsupported, "flat")
	if _, err := planText(context.Background(), e.x, e.sess, `SELECT * FROM flat."default".v`); err == nil || !errors.Is(err, planner.ErrNotFound) {
		t.Errorf("query of a missing table in a catalog without views: %v", err)
	}
	// The local catalog keeps them.
	e.exec(t, `CREATE VIEW v AS SELECT 1 AS x`)
	e.execErr(t, `CREATE VIEW v AS SELECT 2 AS x`, planner.ErrExists, "v")
	e.exec(t, `DROP VIEW v`)
	e.execErr(t, `DROP VIEW v`, planner.ErrNotFound, "v")
}
