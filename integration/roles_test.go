package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/fleet"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

// TestSeparateRoles runs a coordinator and workers as separate roles sharing
// a ticket key: the coordinator plans only over workers its health checks
// find live, and with none live a query fails with UNAVAILABLE.
func TestSeparateRoles(t *testing.T) {
	ctx := context.Background()
	key, err := wire.KeyFromPassphrase("shared secret of the test cluster")
	if err != nil {
		t.Fatal(err)
	}
	var workers []*cluster.Worker
	var locs []string
	for i := 0; i < 2; i++ {
		w, err := cluster.StartWorker(ctx, cluster.WorkerOptions{Listen: "127.0.0.1:0", Key: key, Engine: engine.Options{Threads: 1, MemoryLimit: "512MB", TempDir: t.TempDir()}})
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
		locs = append(locs, w.Location())
	}
	closed := make([]bool, len(workers))
	defer func() {
		for i, w := range workers {
			if !closed[i] {
				w.Close()
			}
		}
	}()
	cat, props, err := catalog.OpenLocal(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.SeedDemo(ctx, cat, catalog.DefaultSchema); err != nil {
		t.Fatal(err)
	}
	mounts := catalog.NewMounts()
	if err := mounts.Mount(catalog.LocalCatalogName, cat, props); err != nil {
		t.Fatal(err)
	}
	defer mounts.Close()
	pool, err := fleet.NewWorkerPool(key, locs, fleet.WithHealthInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pool.Start(ctx); err != nil {
		t.Fatal(err)
	}
	coord, err := cluster.StartCoordinator(ctx, cluster.CoordinatorOptions{
		Listen: "127.0.0.1:0", Key: key, Mounts: mounts, Workers: pool,
		DefaultCatalog: catalog.LocalCatalogName, DefaultSchema: catalog.DefaultSchema,
		Engine: engine.Options{Threads: 1, TempDir: t.TempDir()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	cnxn := adbcConn(t, coord.Addr)
	if got := mustQuery(t, cnxn, "SELECT count(*) FROM orders"); len(got.rows) != 1 || got.rows[0] != "50000" {
		t.Fatalf("count: %v", got.rows)
	}
	cl := flightClient(t, coord.Addr)
	owners := func() map[string]bool {
		info, err := cl.Execute(ctx, "SELECT * FROM orders")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, ep := range info.Endpoint {
			m[ep.Location[0].Uri] = true
		}
		return m
	}
	if o := owners(); len(o) != 2 {
		t.Fatalf("with two live workers, owners = %v", o)
	}
	workers[0].Close()
	closed[0] = true
	waitFor(t, func() bool { return len(pool.Live()) == 1 })
	if o := owners(); len(o) != 1 || !o[locs[1]] {
		t.Fatalf("after stopping worker 0, owners = %v, want only %s", o, locs[1])
	}
	// The query still answers, from the live worker alone.
	if got := mustQuery(t, cnxn, "SELECT count(*) FROM orders"); got.rows[0] != "50000" {
		t.Fatalf("count with one worker: %v", got.rows)
	}
	workers[1].Close()
	closed[1] = true
	waitFor(t, func() bool { return len(pool.Live()) == 0 })
	_, err = cl.Execute(ctx, "SELECT count(*) FROM orders")
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "worker") {
		t.Fatalf("no live worker: got %v, want UNAVAILABLE naming the workers", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
