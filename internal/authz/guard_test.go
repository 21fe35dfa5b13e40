package authz

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/auth"
)

func TestGuard(t *testing.T) {
	ctx := context.Background()
	raw, props, err := catalog.OpenLocal(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64})
	for _, ns := range []string{"sales", "hr"} {
		if err := raw.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := raw.CreateTable(ctx, table.Identifier{ns, "t"}, schema); err != nil {
			t.Fatal(err)
		}
	}
	p := mustPolicy(t, Role{Name: "r", Grants: []Grant{
		{Privileges: []Privilege{Select}, On: "local.sales"},
		{Privileges: []Privilege{Create, Drop}, On: "local.sales.new*"},
	}})
	var dropped []string
	g := &Guard{Policy: p, OnDrop: func(_ context.Context, ref catalog.TableRef, uuid string) {
		dropped = append(dropped, ref.String())
	}}
	mounts := catalog.NewMounts()
	if err := mounts.Mount(catalog.LocalCatalogName, raw, props); err != nil {
		t.Fatal(err)
	}
	mounts.SetGuard(g.Wrap)
	mt, err := mounts.Get(catalog.LocalCatalogName)
	if err != nil {
		t.Fatal(err)
	}
	cat := mt.Catalog
	user := auth.NewContext(ctx, &auth.Principal{Name: "u", Roles: []string{"r"}})

	nss, err := cat.ListNamespaces(user, nil)
	if err != nil || len(nss) != 1 || nss[0][0] != "sales" {
		t.Fatalf("listed schemas %v, %v: want only sales", nss, err)
	}
	var tables []string
	for id, err := range cat.ListTables(user, table.Identifier{"hr"}) {
		if err == nil {
			tables = append(tables, id[len(id)-1])
		}
	}
	if len(tables) != 0 {
		t.Fatalf("listed hr tables %v", tables)
	}
	if _, err := cat.CreateTable(user, table.Identifier{"sales", "other"}, schema); !errors.Is(err, ErrDenied) {
		t.Fatalf("create without the privilege: %v", err)
	}
	if _, err := cat.CreateTable(user, table.Identifier{"sales", "new1"}, schema); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := cat.DropTable(user, table.Identifier{"hr", "t"}); !errors.Is(err, ErrDenied) {
		t.Fatalf("drop without the privilege: %v", err)
	}
	if err := cat.DropNamespace(user, table.Identifier{"hr"}); !errors.Is(err, ErrDenied) {
		t.Fatalf("drop schema without the privilege: %v", err)
	}
	if _, err := cat.RenameTable(user, table.Identifier{"sales", "new1"}, table.Identifier{"sales", "new2"}); !errors.Is(err, ErrDenied) {
		t.Fatalf("rename without ALTER: %v", err)
	}
	if err := cat.DropTable(user, table.Identifier{"sales", "new1"}); err != nil {
		t.Fatalf("drop: %v", err)
	}
	// The internal catalog skips the checks and still reports drops.
	if err := mt.Internal().DropTable(user, table.Identifier{"hr", "t"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dropped, []string{"local.sales.new1", "local.hr.t"}) {
		t.Errorf("dropped %v", dropped)
	}
	// What ddl.go and replace.go assert on a mounted catalog.
	if _, ok := cat.(icecat.PurgeableTable); !ok {
		t.Error("the guarded catalog is not PurgeableTable")
	}
	if cat.CatalogType() != raw.CatalogType() {
		t.Error("CatalogType changed")
	}
	// No principal at all while a policy is on: nothing.
	if _, err := cat.CreateTable(ctx, table.Identifier{"sales", "new3"}, schema); !errors.Is(err, ErrDenied) {
		t.Errorf("anonymous create: %v", err)
	}
	if err := mounts.Close(); err != nil {
		t.Error(err)
	}
}
