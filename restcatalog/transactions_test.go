package restcatalog

import (
	"context"
	"net/http"
	"testing"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
)

func change2(name string, reqs, upds []any) map[string]any {
	return map[string]any{"identifier": map[string]any{"namespace": []string{"s"}, "name": name}, "requirements": reqs, "updates": upds}
}

func setProp(k, v string) any {
	return map[string]any{"action": "set-properties", "updates": map[string]string{k: v}}
}

// TestTransactionsAllOrNothing: transactions/commit commits every table
// or none. A transaction whose second table's update cannot apply, or
// whose second requirement fails, leaves the first table as it was; one
// that holds commits both; a catalog that commits one table at a time
// refuses a transaction over two tables before committing anything.
func TestTransactionsAllOrNothing(t *testing.T) {
	f := newFixture(t)
	f.create("a")
	f.create("b")
	tx := func(changes ...any) (int, map[string]any) {
		return f.call("creator", http.MethodPost, "/v1/local/transactions/commit", map[string]any{"table-changes": changes})
	}
	unchanged := func(what string) {
		t.Helper()
		for _, n := range []string{"a", "b"} {
			if v, ok := f.load(n).Properties()["k"]; ok {
				t.Fatalf("%s: s.%s has k=%s: the transaction committed in part", what, n, v)
			}
		}
	}
	code, ans := tx(change2("a", []any{}, []any{setProp("k", "1")}),
		change2("b", []any{}, []any{setProp("k", "1"), map[string]any{"action": "set-current-schema", "schema-id": 99}}))
	if code < 400 {
		t.Fatalf("a transaction whose second update cannot apply: status %d", code)
	}
	unchanged("an update that cannot apply")
	code, ans = tx(change2("a", []any{}, []any{setProp("k", "1")}),
		change2("b", []any{map[string]any{"type": "assert-current-schema-id", "current-schema-id": 7}}, []any{setProp("k", "1")}))
	f.want("a transaction whose second requirement fails", code, ans, http.StatusConflict)
	unchanged("a requirement that fails")
	code, ans = tx(change2("a", []any{}, []any{setProp("k", "a")}), change2("b", []any{}, []any{setProp("k", "b")}))
	f.want("a transaction that holds", code, ans, http.StatusNoContent)
	if a, b := f.load("a").Properties()["k"], f.load("b").Properties()["k"]; a != "a" || b != "b" {
		t.Fatalf("after the transaction: a.k=%q b.k=%q", a, b)
	}

	// A catalog that commits one table at a time.
	cat, props, err := catalog.OpenLocal(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.mounts.Mount("plain", oneAtATime{cat}, props); err != nil {
		t.Fatal(err)
	}
	plain, _ := f.mounts.Get("plain")
	ctx := context.Background()
	if err := plain.Internal().CreateNamespace(ctx, table.Identifier{"s"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if _, err := plain.Internal().CreateTable(ctx, table.Identifier{"s", n}, testSchema); err != nil {
			t.Fatal(err)
		}
	}
	code, ans = f.call("root", http.MethodPost, "/v1/plain/transactions/commit", map[string]any{"table-changes": []any{
		change2("a", []any{}, []any{setProp("k", "a")}), change2("b", []any{}, []any{setProp("k", "b")})}})
	f.want("a transaction over two tables of a catalog without multi-table commits", code, ans, http.StatusNotAcceptable, "catalog plain", "one table at a time")
	tbl, err := plain.Internal().LoadTable(ctx, table.Identifier{"s", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tbl.Properties()["k"]; ok {
		t.Fatal("the refused transaction committed s.a")
	}
	code, ans = f.call("root", http.MethodPost, "/v1/plain/transactions/commit", map[string]any{"table-changes": []any{
		change2("a", []any{}, []any{setProp("k", "a")})}})
	f.want("a transaction over one table of it", code, ans, http.StatusNoContent)
}

// oneAtATime is a catalog without a multi-table commit.
type oneAtATime struct{ icecat.Catalog }
