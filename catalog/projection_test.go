package catalog

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
)

// A column added after a file was written: reading only it needs another
// column from that file, and then reads NULLs for it.
func TestWidenForFiles(t *testing.T) {
	ctx := context.Background()
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 2, Name: "id", Type: iceberg.PrimitiveTypes.Int32})
	_, tbl := newLocalTable(t, "w", schema)
	tbl = appendJSON(t, tbl, `[{"s": "a", "id": 1}]`)
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"v"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tbl = appendJSON(t, tbl, `[{"s": "b", "id": 2, "v": "new"}]`)
	tasks, err := tbl.Scan(ScanOptions(0, []string{"v"})...).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := WidenForFiles(tbl.Schema(), tasks, []string{"v"}); !slices.Equal(got, []string{"id", "v"}) {
		t.Errorf("only v: widened to %v, want the narrow id added", got)
	}
	for _, cols := range [][]string{{"s"}, {"id", "v"}, nil} {
		if got := WidenForFiles(tbl.Schema(), tasks, cols); got != nil {
			t.Errorf("%v: widened to %v, want no change", cols, got)
		}
	}
}
