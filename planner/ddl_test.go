package planner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
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
	n, err := e.p.Exec(context.Background(), e.sess, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// execErr runs q and checks that it fails with want and that the message
// holds every one of words.
func (e *ddlEnv) execErr(t *testing.T, q string, want error, words ...string) {
	t.Helper()
	_, err := e.p.Exec(context.Background(), e.sess, q)
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

func TestDDLCreateTableTypes(t *testing.T) {
	e := newDDLEnv(t)
	e.exec(t, `CREATE TABLE "All Types" (
		b BOOLEAN NOT NULL, i1 TINYINT, i2 SMALLINT, i4 INTEGER, i8 BIGINT NOT NULL,
		f4 FLOAT, f8 DOUBLE, dec DECIMAL(12,2), dec38 DECIMAL(38,10), d DATE, tm TIME,
		ts TIMESTAMP, tstz TIMESTAMP WITH TIME ZONE, s VARCHAR, "Mixed Case" TEXT,
		u UUID, bl BLOB, l INTEGER[], ll VARCHAR[][],
		st STRUCT(x INTEGER, "y z" VARCHAR, inr STRUCT(q DOUBLE)),
		m MAP(VARCHAR, BIGINT), ml MAP(INTEGER, VARCHAR[])
	)`)
	sc := e.load(t, "default", "All Types").Schema()
	want := []struct {
		name, typ string
		required  bool
	}{
		{"b", "boolean", true}, {"i1", "int", false}, {"i2", "int", false}, {"i4", "int", false},
		{"i8", "long", true}, {"f4", "float", false}, {"f8", "double", false},
		{"dec", "decimal(12, 2)", false}, {"dec38", "decimal(38, 10)", false},
		{"d", "date", false}, {"tm", "time", false}, {"ts", "timestamp", false},
		{"tstz", "timestamptz", false}, {"s", "string", false}, {"Mixed Case", "string", false},
		{"u", "uuid", false}, {"bl", "binary", false},
		{"l", "list<int>", false}, {"ll", "list<list<string>>", false},
		{"st", "struct<", false},
		{"m", "map<string, long>", false}, {"ml", "map<int, list<string>>", false},
	}
	if got := len(sc.Fields()); got != len(want) {
		t.Fatalf("got %d columns, want %d: %s", got, len(want), sc)
	}
	for i, w := range want {
		f := sc.Field(i)
		if f.Name != w.name || !strings.HasPrefix(f.Type.String(), w.typ) || f.Required != w.required {
			t.Errorf("column %d: got %s %s required=%v, want %s %s required=%v", i, f.Name, f.Type, f.Required, w.name, w.typ, w.required)
		}
	}
	st := sc.Field(19).Type.(*iceberg.StructType)
	if len(st.FieldList) != 3 || st.FieldList[1].Name != "y z" || st.FieldList[2].Type.(*iceberg.StructType).FieldList[0].Type != iceberg.PrimitiveTypes.Float64 {
		t.Errorf("struct: %s", st)
	}
	for _, f := range st.FieldList {
		if f.Required {
			t.Errorf("struct field %s is required", f.Name)
		}
	}
	m := sc.Field(20).Type.(*iceberg.MapType)
	if m.ValueRequired {
		t.Error("map value is required")
	}
	if l := sc.Field(17).Type.(*iceberg.ListType); l.ElementRequired {
		t.Error("list element is required")
	}
	// Field ids are unique.
	byID, err := iceberg.IndexByID(sc)
	if err != nil {
		t.Fatal(err)
	}
	if len(byID) != 34 {
		t.Errorf("%d field ids, want 34", len(byID))
	}

	for _, c := range []struct{ decl, typ string }{
		{"HUGEINT", "HUGEINT"},
		{"UHUGEINT", "UHUGEINT"},
		{"UTINYINT", "UTINYINT"},
		{"USMALLINT", "USMALLINT"},
		{"UINTEGER", "UINTEGER"},
		{"UBIGINT", "UBIGINT"},
		{"INTERVAL", "INTERVAL"},
		{"TIMESTAMP_NS", "TIMESTAMP_NS"},
		{"TIMESTAMP_MS", "TIMESTAMP_MS"},
		{"TIMESTAMP_S", "TIMESTAMP_S"},
		{"TIMETZ", "TIME WITH TIME ZONE"},
		{"JSON", "JSON"},
		{"BIT", "BIT"},
		{"INTEGER[3]", "INTEGER[3]"},
		{"UNION(a INTEGER, b VARCHAR)", "UNION"},
		{"ENUM('a', 'b')", "ENUM"},
		{"STRUCT(a HUGEINT)", "HUGEINT"},
		{"MAP(VARCHAR, INTERVAL)", "INTERVAL"},
		{"UBIGINT[]", "UBIGINT"},
	} {
		e.execErr(t, "CREATE TABLE bad (ok INTEGER, col_x "+c.decl+")", ErrInvalid, `"col_x"`, c.typ)
	}
	if ok, _ := e.cat.CheckTableExists(context.Background(), table.Identifier{"default", "bad"}); ok {
		t.Fatal("a refused table was created")
	}
}

func TestDDLCreateTablePartitioned(t *testing.T) {
	e := newDDLEnv(t)
	// The column list holds a comment and a quoted name that look like the
	// clauses cut out by hand; DuckDB must still see all of it.
	e.exec(t, `CREATE TABLE IF NOT EXISTS local.default.events (
		id BIGINT NOT NULL, -- ) PARTITIONED BY (x)
		ts TIMESTAMPTZ, ts2 TIMESTAMP, "TS 3" TIMESTAMPTZ, d DATE, "with" VARCHAR /* ) WITH ( */, s VARCHAR, n INTEGER,
		dec DECIMAL(9,2)
	)
	PARTITIONED BY (day(ts), year(ts2), month(d), hour("TS 3"), bucket(16, id), truncate(4, s), "with", truncate(n, 10), bucket(4, dec))
	WITH ('write.format.default' = 'parquet', "owner" = 'me; and ) you', format-version = 2, x.y = true);`)
	tbl := e.load(t, "default", "events")
	spec := tbl.Spec()
	want := []struct{ name, transform, source string }{
		{"ts_day", "day", "ts"},
		{"ts2_year", "year", "ts2"},
		{"d_month", "month", "d"},
		{"TS 3_hour", "hour", "TS 3"},
		{"id_bucket", "bucket[16]", "id"},
		{"s_trunc", "truncate[4]", "s"},
		{"with", "identity", "with"},
		{"n_trunc", "truncate[10]", "n"},
		{"dec_bucket", "bucket[4]", "dec"},
	}
	if spec.NumFields() != len(want) {
		t.Fatalf("spec: %s", spec)
	}
	for i, w := range want {
		f := spec.Field(i)
		src, _ := tbl.Schema().FindColumnName(f.SourceID())
		if f.Name != w.name || f.Transform.String() != w.transform || src != w.source {
			t.Errorf("partition field %d: got %s %s(%s), want %s %s(%s)", i, f.Name, f.Transform, src, w.name, w.transform, w.source)
		}
	}
	props := tbl.Properties()
	for k, v := range map[string]string{
		"write.format.default":    "parquet",
		"owner":                   "me; and ) you",
		"x.y":                     "true",
		table.CommitNumRetriesKey: "4",
	} {
		if props[k] != v {
			t.Errorf("property %s = %q, want %q", k, props[k], v)
		}
	}
	if tbl.Metadata().Version() != 2 {
		t.Errorf("format version %d", tbl.Metadata().Version())
	}
	if !tbl.Schema().Field(0).Required || tbl.Schema().Field(1).Required {
		t.Errorf("nullability: %s", tbl.Schema())
	}

	e.exec(t, "CREATE TABLE IF NOT EXISTS events (other INT)")
	e.execErr(t, "CREATE TABLE events (other INT)", ErrExists, "events")
	if got := e.load(t, "default", "events").Schema().NumFields(); got != 9 {
		t.Fatalf("IF NOT EXISTS replaced the table: %d columns", got)
	}

	for _, c := range []struct {
		q     string
		want  error
		words []string
	}{
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (nope)", ErrInvalid, []string{`"nope"`}},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (bucket(4, nope))", ErrInvalid, []string{`"nope"`}},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (fortnight(a))", ErrInvalid, []string{`"fortnight"`}},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (bucket(a))", ErrInvalid, []string{"bucket"}},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (bucket(0, a))", ErrInvalid, []string{"bucket"}},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (day(a))", ErrInvalid, []string{"day", `"a"`}},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (year(3, a))", ErrInvalid, []string{"year"}},
		{"CREATE TABLE p1 (a TIMESTAMP) PARTITIONED BY (day(a), day(a))", ErrInvalid, nil},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY a", ErrSyntax, nil},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (a", ErrSyntax, nil},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (a) PARTITIONED BY (a)", ErrSyntax, nil},
		{"CREATE TABLE p1 (a INT) WITH ('k')", ErrSyntax, nil},
		{"CREATE TABLE p1 (a INT) WITH ('k' = x)", ErrSyntax, nil},
		{"CREATE TABLE p1 (a INT) WITH ('format-version' = 'nine')", ErrInvalid, nil},
		{"CREATE TABLE p1 (a INT) extra", ErrSyntax, []string{"extra"}},
		{"CREATE TABLE p1 (a INT, a INT)", ErrInvalid, nil},
		{"CREATE TABLE p1 (a NOSUCHTYPE)", ErrInvalid, []string{"NOSUCHTYPE"}},
		{"CREATE TABLE p1 (a INT PRIMARY KEY)", ErrUnsupported, []string{"PRIMARY KEY"}},
		{"CREATE TABLE p1 (a INT CHECK (a > 0))", ErrUnsupported, []string{"CHECK"}},
		{"CREATE TABLE p1 (a INT DEFAULT 3)", ErrUnsupported, []string{`"a"`, "DEFAULT"}},
		{"CREATE TABLE p1 (a INT, b INT GENERATED ALWAYS AS (a + 1))", ErrUnsupported, []string{`"b"`}},
		{"CREATE TABLE p1 (a) AS SELECT 1", ErrUnsupported, nil},
		{"CREATE TABLE p1 (a INT); DROP TABLE events", ErrSyntax, []string{"one statement"}},
		{"CREATE TABLE nosuch.p1 (a INT)", ErrNotFound, []string{"nosuch"}},
		{"CREATE TABLE elsewhere.default.p1 (a INT)", ErrNotFound, []string{"elsewhere"}},
		{"CREATE TABLE a.b.c.d (a INT)", ErrSyntax, nil},
		{"CREATE TABLE 'p1' (a INT)", ErrSyntax, nil},
		{"CREATE TABLE p1 (a VARCHAR '", ErrSyntax, []string{"unterminated"}},
		{"CREATE OR REPLACE TABLE IF NOT EXISTS p1 (a INT)", ErrSyntax, []string{"IF NOT EXISTS"}},
		{"CREATE OR REPLACE TEMP TABLE p1 (a INT)", ErrUnsupported, []string{"CREATE OR"}},
		{"CREATE TEMP TABLE p1 (a INT)", ErrUnsupported, nil},
	} {
		e.execErr(t, c.q, c.want, c.words...)
	}
	if ok, _ := e.cat.CheckTableExists(context.Background(), table.Identifier{"default", "p1"}); ok {
		t.Fatal("a refused table was created")
	}
}

func TestDDLInsert(t *testing.T) {
	checked := memory.NewCheckedAllocator(memory.DefaultAllocator)
	ddlAlloc = checked
	defer func() { ddlAlloc = memory.DefaultAllocator }()
	defer checked.AssertSize(t, 0)

	e := newDDLEnv(t)
	e.exec(t, `CREATE TABLE "Order Lines" (
		id BIGINT NOT NULL, qty INTEGER, price DECIMAL(10,2), ok BOOLEAN, f FLOAT, dd DOUBLE,
		d DATE, tm TIME, ts TIMESTAMP, tstz TIMESTAMPTZ, s VARCHAR, u UUID, bl BLOB,
		tags VARCHAR[], st STRUCT(a INTEGER, "b c" VARCHAR), m MAP(VARCHAR, INTEGER), nested STRUCT(l UUID[])
	) PARTITIONED BY (day(tstz), bucket(4, id))`)
	n := e.exec(t, `INSERT INTO "Order Lines" VALUES
		(1, 2, 3.456, true, 1.5, 2.25, DATE '2024-03-01', TIME '12:34:56.789', TIMESTAMP '2024-03-01 10:00:00',
		 TIMESTAMPTZ '2024-03-01 23:30:00+00', 'héllo', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\x01\x02'::BLOB,
		 ['x', NULL, 'z'], {'a': 7, 'b c': 'q'}, MAP {'k': 1, 'j': NULL}, {'l': ['00000000-0000-0000-0000-000000000001']}),
		(2, '5', 1, false, NULL, NULL, '2024-03-02', NULL, NULL, '2024-03-02 01:00:00+00', NULL, NULL, NULL, [], NULL, NULL, NULL);`)
	if n != 2 {
		t.Fatalf("update count %d, want 2", n)
	}
	n = e.exec(t, `insert into local.default."Order Lines" (tstz, id, s) values ('2024-03-05 00:00:00+00', 3, 'it''s'),
		('2024-03-05 00:00:00+00', EXTRACT(year FROM DATE '0004-01-01'), $$dollar$$)`)
	if n != 2 {
		t.Fatalf("update count %d, want 2", n)
	}
	tbl := e.load(t, "default", "Order Lines")
	got := e.query(t, tbl, `SELECT id, qty, price, ok, f, dd, d, tm, ts, epoch(tstz)::BIGINT, s, u::VARCHAR, hex(bl),
		tags::VARCHAR, st::VARCHAR, m::VARCHAR, nested::VARCHAR FROM t ORDER BY id`)
	want := []string{
		"1|2|3.46|true|1.5|2.25|2024-03-01 00:00:00 +0000 UTC|0001-01-01 12:34:56.789 +0000 UTC|2024-03-01 10:00:00 +0000 UTC|1709335800|héllo|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|0102|[x, NULL, z]|{'a': 7, 'b c': q}|{k=1, j=NULL}|{'l': [00000000-0000-0000-0000-000000000001]}",
		"2|5|1|false|<nil>|<nil>|2024-03-02 00:00:00 +0000 UTC|<nil>|<nil>|1709341200|<nil>|<nil>|<nil>|[]|<nil>|<nil>|<nil>",
		"3|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|1709596800|it's|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>",
		"4|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|1709596800|dollar|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	snaps := len(tbl.Metadata().Snapshots())
	if snaps != 2 {
		t.Fatalf("%d snapshots, want one per INSERT", snaps)
	}
	// The files follow the partition spec: 3 days × ≤4 buckets, one file each.
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if len(task.File.Partition()) != 2 {
			t.Fatalf("file %s has partition %v", task.File.FilePath(), task.File.Partition())
		}
	}

	// NOT NULL, casts and sizes fail the statement, name the column and
	// commit nothing.
	e.execErr(t, `INSERT INTO "Order Lines" (qty) VALUES (1)`, ErrInvalid, "NOT NULL", "id")
	e.execErr(t, `INSERT INTO "Order Lines" (id, qty) VALUES (9, 1), (NULL, 2)`, ErrInvalid, "NOT NULL", "id")
	e.execErr(t, `INSERT INTO "Order Lines" (id, qty) VALUES (9, 'many')`, ErrInvalid, "many")
	e.execErr(t, `INSERT INTO "Order Lines" (id, nope) VALUES (9, 1)`, ErrInvalid, "nope")
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES (9, 1)`, ErrInvalid)
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES (9`, ErrSyntax)
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES (9) RETURNING id`, ErrUnsupported, "RETURNING")
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES (9) ON CONFLICT DO NOTHING`, ErrUnsupported, "ON CONFLICT")
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES ((SELECT 1))`, ErrUnsupported)
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES ((FROM "Order Lines" SELECT max(id)))`, ErrUnsupported)
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES ((  from range(3)))`, ErrUnsupported)
	e.execErr(t, `INSERT INTO "Order Lines" (id, qty) VALUES (9, (TABLE "Order Lines"))`, ErrUnsupported)
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES ((SELECT count(*) FROM read_csv('/etc/passwd')))`, ErrUnsupported)

	// INSERT … SELECT is planned like a query: its errors come at plan time.
	e.execErr(t, `INSERT INTO "Order Lines" (nope) SELECT 1`, ErrInvalid, "nope")
	e.execErr(t, `INSERT INTO "Order Lines" (SELECT 1)`, ErrInvalid, "returns 1")
	e.execErr(t, `INSERT INTO "Order Lines" (id) SELECT * FROM read_csv('/etc/passwd')`, ErrRefused, "read_csv")
	e.execErr(t, `INSERT INTO "Order Lines" (id) SELECT 'x'`, ErrInvalid, "implicitly")
	e.execErr(t, `INSERT INTO "Order Lines" DEFAULT VALUES`, ErrUnsupported)
	e.execErr(t, `INSERT OR REPLACE INTO "Order Lines" VALUES (1)`, ErrUnsupported)
	e.execErr(t, `INSERT INTO nosuch VALUES (1)`, ErrNotFound, "nosuch")
	e.execErr(t, `INSERT INTO "Order Lines" VALUES (1); DROP TABLE x`, ErrSyntax)
	if got := len(e.load(t, "default", "Order Lines").Metadata().Snapshots()); got != snaps {
		t.Fatalf("a failed INSERT committed: %d snapshots, want %d", got, snaps)
	}
}

// TestDDLInsertIcebergTypes covers Iceberg types DuckDB has no column type
// for: fixed[L] (a BLOB whose length is checked) and a required struct
// field, on a table made straight through the catalog.
func TestDDLInsertIcebergTypes(t *testing.T) {
	e := newDDLEnv(t)
	ctx := context.Background()
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "fx", Type: iceberg.FixedTypeOf(3)},
		iceberg.NestedField{ID: 3, Name: "st", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 4, Name: "must", Type: iceberg.PrimitiveTypes.String, Required: true},
			{ID: 5, Name: "may", Type: iceberg.PrimitiveTypes.Int32},
		}}},
		iceberg.NestedField{ID: 6, Name: "req_list", Type: &iceberg.ListType{ElementID: 7, Element: iceberg.PrimitiveTypes.Int32, ElementRequired: true}},
	)
	if _, err := e.cat.CreateTable(ctx, table.Identifier{"default", "raw"}, sc); err != nil {
		t.Fatal(err)
	}
	e.exec(t, `INSERT INTO raw VALUES (1, '\x01\x02\x03'::BLOB, {'must': 'm', 'may': NULL}, [1, 2]), (2, NULL, NULL, NULL)`)
	got := e.query(t, e.load(t, "default", "raw"), `SELECT id, hex(fx), st::VARCHAR, req_list::VARCHAR FROM t ORDER BY id`)
	if strings.Join(got, ";") != "1|010203|{'must': m, 'may': NULL}|[1, 2];2|<nil>|<nil>|<nil>" {
		t.Fatalf("rows: %q", got)
	}
	e.execErr(t, `INSERT INTO raw (id, fx) VALUES (3, '\x01'::BLOB)`, ErrInvalid, "fx", "fixed[3]")
	e.execErr(t, `INSERT INTO raw (id, st) VALUES (3, {'must': NULL, 'may': 1})`, ErrInvalid, "st.must")
	e.execErr(t, `INSERT INTO raw (id, req_list) VALUES (3, [1, NULL])`, ErrInvalid, "req_list")
}

// TestDDLInsertConcurrent commits several INSERTs into one table at once:
// the losers of each commit race must retry, though the table (made
// without icefloe) does not set commit.retry.num-retries.
func TestDDLInsertConcurrent(t *testing.T) {
	e := newDDLEnv(t)
	ctx := context.Background()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := e.cat.CreateTable(ctx, table.Identifier{"default", "race"}, sc); err != nil {
		t.Fatal(err)
	}
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.p.Exec(ctx, e.sess, fmt.Sprintf("INSERT INTO race VALUES (%d)", i))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	tbl := e.load(t, "default", "race")
	if got := e.query(t, tbl, "SELECT count(*), sum(id) FROM t"); got[0] != "8|28" {
		t.Fatalf("count, sum = %s, want 8|28", got[0])
	}
	if _, ok := tbl.Properties()[table.CommitNumRetriesKey]; ok {
		t.Error("INSERT changed the table's properties")
	}
	if stray := strayMetadata(t, tbl); len(stray) > 0 {
		t.Errorf("the lost commit races left %d metadata files the table does not reference: %v", len(stray), stray)
	}
}

// strayMetadata lists the metadata files in tbl's metadata folder that
// neither its current metadata nor its metadata log references.
func strayMetadata(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	known := map[string]bool{tbl.MetadataLocation(): true}
	for e := range tbl.Metadata().PreviousFiles() {
		known[e.MetadataFile] = true
	}
	dir, ok := catalog.LocalPath(tbl.MetadataLocation())
	if !ok {
		t.Fatalf("metadata %s is not local", tbl.MetadataLocation())
	}
	dir = filepath.Dir(dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var stray []string
	for _, e := range entries {
		if !strings.Contains(e.Name(), ".metadata.json") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if !known[p] && !known["file://"+p] {
			stray = append(stray, e.Name())
		}
	}
	return stray
}

func TestDDLUnsupported(t *testing.T) {
	e := newDDLEnv(t)
	e.exec(t, "CREATE TABLE t (a INT)")
	for _, c := range []struct{ q, kind string }{
		{"CREATE MACRO m(a) AS a", "CREATE MACRO"},
		{"CREATE SEQUENCE s", "CREATE SEQUENCE"},
		{"COPY t TO 'x.csv'", "COPY"},
		{"SET threads = 1", "SET"},
		{"PRAGMA version", "PRAGMA"},
		{"SELECT 1", "SELECT"},
	} {
		e.execErr(t, c.q, ErrUnsupported, c.kind)
	}
	e.execErr(t, "", ErrSyntax, "empty")
	e.execErr(t, " ; -- nothing", ErrSyntax, "empty")
}

func TestDDLTokensErrors(t *testing.T) {
	for _, bad := range []string{`'open`, `"open`, `/* open`, `$q$ open`, "CREATE TABLE t (a INT)\x00; DROP TABLE t"} {
		if _, err := ddlTokens(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: got %v, want a syntax error", bad, err)
		}
	}
}
