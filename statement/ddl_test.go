package statement

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/planner"
)

func TestDDLSchemas(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.exec(t, "CREATE SCHEMA sales")
	e.execErr(t, "CREATE SCHEMA sales", planner.ErrExists, "sales")
	e.exec(t, "create schema if not exists sales;")
	e.exec(t, `CREATE SCHEMA local."My Schema"`)
	for _, ns := range []string{"sales", "My Schema"} {
		ok, err := e.cat.CheckNamespaceExists(ctx, table.Identifier{ns})
		if err != nil || !ok {
			t.Fatalf("schema %q: exists=%v err=%v", ns, ok, err)
		}
	}
	e.execErr(t, "CREATE SCHEMA nowhere.s", planner.ErrNotFound, "nowhere")
	e.execErr(t, "CREATE SCHEMA a.b.c", planner.ErrSyntax)
	e.execErr(t, `CREATE SCHEMA "a.b"`, planner.ErrInvalid)

	e.exec(t, `DROP SCHEMA "My Schema"`)
	e.execErr(t, `DROP SCHEMA "My Schema"`, planner.ErrNotFound, "My Schema")
	e.exec(t, `DROP SCHEMA IF EXISTS "My Schema"`)
	e.execErr(t, "DROP SCHEMA nowhere.s", planner.ErrNotFound, "nowhere")

	e.exec(t, "CREATE TABLE sales.t1 (id BIGINT)")
	e.exec(t, "CREATE TABLE sales.t2 (id BIGINT)")
	e.execErr(t, "DROP SCHEMA sales", planner.ErrInvalid, "not empty", "CASCADE")
	e.execErr(t, "DROP SCHEMA sales RESTRICT", planner.ErrInvalid, "not empty")
	e.exec(t, "DROP SCHEMA sales CASCADE")
	if ok, _ := e.cat.CheckNamespaceExists(ctx, table.Identifier{"sales"}); ok {
		t.Fatal("sales still exists after DROP SCHEMA … CASCADE")
	}
	if ok, _ := e.cat.CheckTableExists(ctx, table.Identifier{"sales", "t1"}); ok {
		t.Fatal("sales.t1 still exists after DROP SCHEMA … CASCADE")
	}

	// Names default to the session's catalog.
	e.sess = planner.Session{Catalog: catalog.LocalCatalogName}
	e.exec(t, "CREATE SCHEMA s2")
	e.execErr(t, "CREATE TABLE t (a INT)", planner.ErrInvalid, "schema")
	e.sess = planner.Session{}
	e.execErr(t, "CREATE SCHEMA s3", planner.ErrInvalid, "catalog")
}

func TestDDLDropTable(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.exec(t, `CREATE TABLE "Drop Me" (a INT)`)
	e.exec(t, `DROP TABLE "Drop Me"`)
	if ok, _ := e.cat.CheckTableExists(ctx, table.Identifier{"default", "Drop Me"}); ok {
		t.Fatal("table still exists")
	}
	e.execErr(t, `DROP TABLE "Drop Me"`, planner.ErrNotFound, "Drop Me")
	e.exec(t, `DROP TABLE IF EXISTS "Drop Me"`)
	e.exec(t, `DROP TABLE IF EXISTS nosuch.t`)
	e.execErr(t, `DROP TABLE nosuch.t`, planner.ErrNotFound)
	e.execErr(t, `DROP TABLE other.s.t`, planner.ErrNotFound, "other")
	e.execErr(t, `DROP TABLE t CASCADE`, planner.ErrSyntax)

	e.exec(t, "CREATE TABLE purged (a INT)")
	e.exec(t, "INSERT INTO purged VALUES (1), (2)")
	loc := strings.TrimPrefix(e.load(t, "default", "purged").Location(), "file://")
	if _, err := os.Stat(loc); err != nil {
		t.Fatalf("table folder: %v", err)
	}
	e.exec(t, "DROP TABLE local.default.purged PURGE")
	if ok, _ := e.cat.CheckTableExists(ctx, table.Identifier{"default", "purged"}); ok {
		t.Fatal("purged table still exists")
	}
	var files []string
	_ = walkFiles(loc, &files)
	if len(files) != 0 {
		t.Fatalf("PURGE left files: %v", files)
	}
}

func walkFiles(dir string, out *[]string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, en := range ents {
		p := dir + "/" + en.Name()
		if en.IsDir() {
			_ = walkFiles(p, out)
			continue
		}
		*out = append(*out, p)
	}
	return nil
}
