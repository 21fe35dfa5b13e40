package catalog

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
)

// TestStaging: staging tables are left out of a mount's listings, listed
// by Staging, and dropped by DropStaging once older than the grace.
func TestStaging(t *testing.T) {
	ctx := context.Background()
	cat, m := localMounts(t)
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	staging := StagingName("t")
	for _, name := range []string{"t", staging} {
		if _, err := cat.CreateTable(ctx, icecat.ToIdentifier(DefaultSchema, name), sc); err != nil {
			t.Fatal(err)
		}
	}
	mt, err := m.Get(LocalCatalogName)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for id, err := range mt.Catalog.ListTables(ctx, icecat.ToIdentifier(DefaultSchema)) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, id[len(id)-1])
	}
	if !slices.Equal(listed, []string{"t"}) {
		t.Fatalf("listed %v, want only t", listed)
	}
	if st := m.Staging(ctx); len(st) != 1 || st[0].String() != "local.default."+staging {
		t.Fatalf("Staging: %v", st)
	}
	if got := m.DropStaging(ctx, time.Hour); len(got) != 0 {
		t.Fatalf("dropped a fresh staging table: %v", got)
	}
	if got := m.DropStaging(ctx, time.Nanosecond); len(got) != 1 {
		t.Fatalf("DropStaging past the grace: %v", got)
	}
	if st := m.Staging(ctx); len(st) != 0 {
		t.Fatalf("left: %v", st)
	}
	if ok, err := cat.CheckTableExists(ctx, icecat.ToIdentifier(DefaultSchema, "t")); err != nil || !ok {
		t.Fatalf("the table t: %v, %v", ok, err)
	}
}
