package statement

import (
	"context"
	"errors"
	"strings"
	"testing"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/testlocal"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

// oneWorker is a worker no test reaches: plans need one, statements that
// run on the coordinator or stop as dry runs never call it.
type oneWorker struct{}

func (oneWorker) Live() []planner.Worker {
	return []planner.Worker{{Location: "grpc://127.0.0.1:1", Slots: 1}}
}

// env is an Executor over the local catalog in a test's directory.
type env struct {
	x    *Executor
	cat  icecat.Catalog
	eng  *engine.Engine
	key  *wire.Key
	sess planner.Session
	dir  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	l := testlocal.New(t)
	pl, err := planner.New(planner.Options{Mounts: l.Mounts, Engine: l.Eng, Key: l.Key, Workers: oneWorker{}, Flight: l.Pool})
	if err != nil {
		t.Fatal(err)
	}
	return &env{x: New(pl), cat: l.Cat, eng: l.Eng, key: l.Key, dir: l.Dir,
		sess: planner.Session{Catalog: catalog.LocalCatalogName, Schema: catalog.DefaultSchema}}
}

func (e *env) exec(t *testing.T, q string) int64 {
	t.Helper()
	n, err := run(context.Background(), e.x, e.sess, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// execErr runs q and checks that it fails with want and that the message
// holds every one of words.
func (e *env) execErr(t *testing.T, q string, want error, words ...string) {
	t.Helper()
	_, err := run(context.Background(), e.x, e.sess, q)
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", q, err, want)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not mention %q", q, err, w)
		}
	}
}

func (e *env) load(t *testing.T, ident ...string) *table.Table {
	t.Helper()
	tbl, err := e.cat.LoadTable(context.Background(), table.Identifier(ident))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// query reads the table into DuckDB and runs q against it as "t"; it
// returns the rows as strings (testlocal.Rows).
func (e *env) query(t *testing.T, tbl *table.Table, q string) []string {
	t.Helper()
	return testlocal.Rows(t, e.eng, tbl, q)
}
