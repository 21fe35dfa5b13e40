// Package testlocal builds what the coordinator's planner and statement
// executor run on in their packages' tests: the local catalog in a test's
// directory, mounted under catalog.LocalCatalogName, a small DuckDB, a
// ticket key and a Flight pool. It imports neither planner nor statement,
// so the tests inside both packages share it.
package testlocal

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	icecat "github.com/apache/iceberg-go/catalog"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/wire"
)

// Env is one test's coordinator side; the test's cleanup closes it.
type Env struct {
	Mounts *catalog.Mounts
	// Cat is the local catalog mounted as catalog.LocalCatalogName.
	Cat  icecat.Catalog
	Eng  *engine.Engine
	Key  *wire.Key
	Pool *flightclient.Pool
	// Dir holds the warehouse, the catalog's database and DuckDB's spill
	// folder (Dir/spill).
	Dir string
}

// New returns an Env in a new t.TempDir.
func New(t testing.TB) *Env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cat, props, err := catalog.OpenLocal(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	mounts := catalog.NewMounts()
	if err := mounts.Mount(catalog.LocalCatalogName, cat, props); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mounts.Close() })
	eng, err := engine.Open(ctx, engine.Options{Threads: 1, MemoryLimit: "256MB", TempDir: dir + "/spill"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	key, err := wire.RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	pool := flightclient.NewPool(flightclient.Options{}, 0)
	t.Cleanup(func() { pool.Close() })
	return &Env{Mounts: mounts, Cat: cat, Eng: eng, Key: key, Pool: pool, Dir: dir}
}

// Rows reads tbl into a connection of eng as the table "t", runs q
// against it and returns its rows, each as its values printed and joined
// by "|".
func Rows(t testing.TB, eng *engine.Engine, tbl *table.Table, q string) []string {
	t.Helper()
	ctx := context.Background()
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	conn, err := eng.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rdr := array.NewTableReader(at, 0)
	defer rdr.Release()
	if err := conn.LoadTable(ctx, "t", rdr); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.DB().QueryContext(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
