// Package testlocal builds what the coordinator's planner and statement
// executor run on in their packages' tests: the local catalog in a test's
// directory, mounted under catalog.LocalCatalogName, a small DuckDB, a
// ticket key and a Flight pool. It imports neither planner nor statement,
// so the tests inside both packages share it.
package testlocal

import (
	"context"
	"testing"

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
