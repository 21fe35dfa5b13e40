package restcatalog

import (
	"context"
	"net/http"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
)

// TestViews: views load, create and replace through the REST catalog
// with their stored metadata: a view made through SQL loads with its
// SQL under its dialect, its schema and default namespace; a view made
// through REST keeps every representation and is what SQL expands;
// a replace adds a version. Grants as in SQL: loading needs SELECT on
// the view, creating CREATE, replacing CREATE and DROP.
func TestViews(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.create("t")
	vs, err := f.mt.Views()
	if err != nil {
		t.Fatal(err)
	}
	viewer := f.client("viewer")
	checkSQLView(t, ctx, vs, viewer)
	made := checkCreateRESTView(t, ctx, f, vs, viewer)
	checkReplaceRESTView(t, ctx, f, vs, viewer, made)
	checkListDropViews(t, ctx, f, vs, viewer)

	// Without SELECT on the view, no load, whether or not it exists.
	code, ans := f.call("viewer", http.MethodGet, "/v1/local/namespaces/other/views/by_sql", nil)
	f.want("a load without SELECT", code, ans, http.StatusForbidden, string(authz.Select))
}

// checkSQLView: a view as SQL's CREATE VIEW stores it loads through REST.
func checkSQLView(t *testing.T, ctx context.Context, vs catalog.Views, viewer *rest.Catalog) {
	t.Helper()
	// As SQL's CREATE VIEW stores it.
	if err := vs.CreateView(ctx, table.Identifier{"s", "by_sql"}, testSchema, "SELECT id FROM t WHERE id > 1"); err != nil {
		t.Fatal(err)
	}
	vw, err := viewer.LoadView(ctx, table.Identifier{"s", "by_sql"})
	if err != nil {
		t.Fatalf("load a view made through SQL: %v", err)
	}
	ver := vw.CurrentVersion()
	if len(ver.Representations) != 1 || ver.Representations[0].Sql != "SELECT id FROM t WHERE id > 1" || ver.Representations[0].Dialect != "default" ||
		len(ver.DefaultNamespace) != 1 || ver.DefaultNamespace[0] != "s" || ver.DefaultCatalog != "" || !vw.CurrentSchema().Equals(testSchema) {
		t.Fatalf("the SQL view as loaded: version %+v, schema %v", ver, vw.CurrentSchema())
	}
	if vw.MetadataLocation() == "" {
		t.Fatal("the load answered no metadata location")
	}
}

// checkCreateRESTView: a view created through REST with two dialects, by
// who may create only, expands in SQL as its duckdb SQL.
func checkCreateRESTView(t *testing.T, ctx context.Context, f *fixture, vs catalog.Views, viewer *rest.Catalog) *view.View {
	t.Helper()
	// Through REST, with two dialects.
	v1, err := view.NewVersion(1, testSchema.ID, view.Representations{
		view.NewRepresentation("SELECT id FROM s.t", "spark"), view.NewRepresentation("SELECT id FROM s.t WHERE true", "duckdb"),
	}, table.Identifier{"s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := viewer.CreateView(ctx, table.Identifier{"s", "by_rest"}, v1, testSchema); err == nil {
		t.Fatal("a reader created a view")
	}
	made, err := f.client("creator").CreateView(ctx, table.Identifier{"s", "by_rest"}, v1, testSchema)
	if err != nil {
		t.Fatalf("create a view through REST: %v", err)
	}
	if got := len(made.CurrentVersion().Representations); got != 2 {
		t.Fatalf("the created view has %d representations, want 2", got)
	}
	stored, err := vs.LoadView(ctx, table.Identifier{"s", "by_rest"})
	if err != nil || stored.SQL != "SELECT id FROM s.t WHERE true" {
		t.Fatalf("SQL expands the REST view as %q (%v), want its duckdb SQL", stored.SQL, err)
	}
	loaded, err := viewer.LoadView(ctx, table.Identifier{"s", "by_rest"})
	if err != nil || len(loaded.CurrentVersion().Representations) != 2 || loaded.Metadata().ViewUUID() != made.Metadata().ViewUUID() {
		t.Fatalf("load the REST view: %v", err)
	}
	return made
}

// checkReplaceRESTView: a replace adds a new current version.
func checkReplaceRESTView(t *testing.T, ctx context.Context, f *fixture, vs catalog.Views, viewer *rest.Catalog, made *view.View) {
	t.Helper()
	// A replace: a new current version.
	v2, err := view.NewVersion(2, testSchema.ID, view.Representations{
		view.NewRepresentation("SELECT id FROM s.t WHERE id < 10", "spark"), view.NewRepresentation("SELECT id FROM s.t WHERE id < 10", "duckdb"),
	}, table.Identifier{"s"})
	if err != nil {
		t.Fatal(err)
	}
	upds := []view.Update{view.NewAddViewVersionUpdate(v2), view.NewSetCurrentVersionUpdate(-1)}
	reqs := []view.Requirement{view.AssertViewUUID(made.Metadata().ViewUUID())}
	if _, err := viewer.UpdateView(ctx, table.Identifier{"s", "by_rest"}, reqs, upds); err == nil {
		t.Fatal("a reader replaced a view")
	}
	if _, err := f.client("creator").UpdateView(ctx, table.Identifier{"s", "by_rest"}, reqs, upds); err != nil {
		t.Fatalf("replace the view: %v", err)
	}
	if stored, err := vs.LoadView(ctx, table.Identifier{"s", "by_rest"}); err != nil || stored.SQL != "SELECT id FROM s.t WHERE id < 10" {
		t.Fatalf("after the replace SQL expands %q (%v)", stored.SQL, err)
	}
	if got, err := viewer.LoadView(ctx, table.Identifier{"s", "by_rest"}); err != nil || len(got.Versions()) != 2 {
		t.Fatalf("after the replace: %v", err)
	}
}

// checkListDropViews: views are listed to who may see them and dropped
// with DROP.
func checkListDropViews(t *testing.T, ctx context.Context, f *fixture, vs catalog.Views, viewer *rest.Catalog) {
	t.Helper()
	// Listed to who may see them; dropped with DROP.
	var listed []string
	for ident, err := range viewer.ListViews(ctx, table.Identifier{"s"}) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, ident[len(ident)-1])
	}
	if len(listed) != 2 || listed[0] != "by_rest" || listed[1] != "by_sql" {
		t.Fatalf("views listed: %v, want by_rest and by_sql", listed)
	}
	if err := viewer.DropView(ctx, table.Identifier{"s", "by_sql"}); err == nil {
		t.Fatal("a reader dropped a view")
	}
	if err := f.client("creator").DropView(ctx, table.Identifier{"s", "by_sql"}); err != nil {
		t.Fatalf("drop the view: %v", err)
	}
	if _, err := vs.LoadView(ctx, table.Identifier{"s", "by_sql"}); err == nil {
		t.Fatal("the dropped view still loads")
	}
}
