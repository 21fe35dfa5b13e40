package flightsql

import (
	"context"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcfs "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/icefloe/icefloe/planner"
)

// adbcConn opens the ADBC Flight SQL driver (the code Python ADBC runs) on
// e's server, with cookies so session options stick.
func adbcConn(t *testing.T, e *env) adbc.Connection {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	db, err := adbcfs.NewDriver(mem).NewDatabase(map[string]string{
		adbc.OptionKeyURI:             "grpc://" + e.addr,
		adbcfs.OptionCookieMiddleware: adbc.OptionValueEnabled,
	})
	if err != nil {
		t.Fatal(err)
	}
	cnxn, err := db.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cnxn.Close()
		db.Close()
		mem.AssertSize(t, 0)
	})
	return cnxn
}

// Python's cursor.execute("INSERT …") prepares the statement and runs it
// through GetFlightInfo; rows affected come back as the update count.
func TestADBCUpdateThroughQuery(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	cnxn := adbcConn(t, e)
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := stmt.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	rdr, n, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if n != 7 {
		t.Errorf("rows affected = %d, want 7", n)
	}
	got := 0
	for rdr.Next() {
		got += int(rdr.RecordBatch().NumRows())
	}
	if rdr.Err() != nil || got != 0 || rdr.Schema().NumFields() != 0 {
		t.Errorf("reader: err %v, %d rows, schema %s", rdr.Err(), got, rdr.Schema())
	}
	// executemany: DoPut CommandPreparedStatementUpdate.
	n, err = stmt.ExecuteUpdate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 7 {
		t.Errorf("ExecuteUpdate = %d", n)
	}
}

// adbc_get_objects and adbc_get_table_schema check the metadata schemas
// strictly and send no catalog filter.
func TestADBCMetadata(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	cnxn := adbcConn(t, e)
	rdr, err := cnxn.GetObjects(ctx, adbc.ObjectDepthAll, nil, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	catalogs, tables, columns := 0, 0, 0
	for rdr.Next() {
		rec := rdr.RecordBatch()
		catalogs += int(rec.NumRows())
		schemas := rec.Column(1).(*array.List).ListValues().(*array.Struct)
		tbls := schemas.Field(1).(*array.List).ListValues().(*array.Struct)
		tables += tbls.Len()
		columns += tbls.Field(2).(*array.List).ListValues().Len()
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	rdr.Release()
	// local: orders (6 columns), order_items, orderXitems, facts (1 each); other: remote (1).
	if catalogs != 2 || tables != 5 || columns != 10 {
		t.Errorf("get_objects: %d catalogs, %d tables, %d columns", catalogs, tables, columns)
	}

	sc, err := cnxn.GetTableSchema(ctx, ptr("local"), ptr("default"), "orders")
	if err != nil {
		t.Fatal(err)
	}
	if sc.NumFields() != 6 || sc.Field(0).Name != "id" || sc.Field(0).Type.ID() != arrow.INT64 {
		t.Errorf("table schema = %s", sc)
	}
}

func TestADBCSessionCatalog(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	cnxn := adbcConn(t, e)
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyCurrentDbSchema, "sales"); err != nil {
		t.Fatal(err)
	}
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery("DELETE FROM t"); err != nil {
		t.Fatal(err)
	}
	if _, err := stmt.ExecuteUpdate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.planner.last(t, "Exec").session; got != (planner.Session{Catalog: "local", Schema: "sales"}) {
		t.Errorf("session = %+v", got)
	}
}
