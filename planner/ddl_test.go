package planner

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
)

type ddlTestWorkers struct{}

func (ddlTestWorkers) Live() []Worker { return []Worker{{Location: "grpc://127.0.0.1:1", Slots: 1}} }

type ddlEnv struct {
	p    *Planner
	cat  icecat.Catalog
	eng  *engine.Engine
	sess Session
	dir  string
}

func newDDLEnv(t *testing.T) *ddlEnv {
	t.Helper()
	l := testlocal.New(t)
	p, err := New(Options{Mounts: l.Mounts, Engine: l.Eng, Key: l.Key, Workers: ddlTestWorkers{}, Flight: l.Pool})
	if err != nil {
		t.Fatal(err)
	}
	return &ddlEnv{p: p, cat: l.Cat, eng: l.Eng, dir: l.Dir,
		sess: Session{Catalog: catalog.LocalCatalogName, Schema: catalog.DefaultSchema}}
}

func (e *ddlEnv) exec(t *testing.T, q string) int64 {
	t.Helper()
	n, err := execSQL(e.p, context.Background(), e.sess, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// execErr runs q and checks that it fails with want and that the message
// holds every one of words.
func (e *ddlEnv) execErr(t *testing.T, q string, want error, words ...string) {
	t.Helper()
	_, err := execSQL(e.p, context.Background(), e.sess, q)
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", q, err, want)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not mention %q", q, err, w)
		}
	}
}

func (e *ddlEnv) load(t *testing.T, ident ...string) *table.Table {
	t.Helper()
	tbl, err := e.cat.LoadTable(context.Background(), table.Identifier(ident))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// query reads the table into DuckDB and runs q against it as "t"; it
// returns the rows as strings (testlocal.Rows).
func (e *ddlEnv) query(t *testing.T, tbl *table.Table, q string) []string {
	t.Helper()
	return testlocal.Rows(t, e.eng, tbl, q)
}
