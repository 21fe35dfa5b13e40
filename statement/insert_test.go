package statement

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/planner"
)

func TestDDLInsert(t *testing.T) {
	checked := memory.NewCheckedAllocator(memory.DefaultAllocator)
	alloc = checked
	defer func() { alloc = memory.DefaultAllocator }()
	defer checked.AssertSize(t, 0)

	e := newEnv(t)
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
	e.execErr(t, `INSERT INTO "Order Lines" (qty) VALUES (1)`, planner.ErrInvalid, "NOT NULL", "id")
	e.execErr(t, `INSERT INTO "Order Lines" (id, qty) VALUES (9, 1), (NULL, 2)`, planner.ErrInvalid, "NOT NULL", "id")
	e.execErr(t, `INSERT INTO "Order Lines" (id, qty) VALUES (9, 'many')`, planner.ErrInvalid, "many")
	e.execErr(t, `INSERT INTO "Order Lines" (id, nope) VALUES (9, 1)`, planner.ErrInvalid, "nope")
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES (9, 1)`, planner.ErrInvalid)
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES (9`, planner.ErrSyntax)
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES (9) RETURNING id`, planner.ErrUnsupported, "RETURNING")
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES (9) ON CONFLICT DO NOTHING`, planner.ErrUnsupported, "ON CONFLICT")
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES ((SELECT 1))`, planner.ErrUnsupported)
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES ((FROM "Order Lines" SELECT max(id)))`, planner.ErrUnsupported)
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES ((  from range(3)))`, planner.ErrUnsupported)
	e.execErr(t, `INSERT INTO "Order Lines" (id, qty) VALUES (9, (TABLE "Order Lines"))`, planner.ErrUnsupported)
	e.execErr(t, `INSERT INTO "Order Lines" (id) VALUES ((SELECT count(*) FROM read_csv('/etc/passwd')))`, planner.ErrUnsupported)

	// INSERT … SELECT is planned like a query: its errors come at plan time.
	e.execErr(t, `INSERT INTO "Order Lines" (nope) SELECT 1`, planner.ErrInvalid, "nope")
	e.execErr(t, `INSERT INTO "Order Lines" (SELECT 1)`, planner.ErrInvalid, "returns 1")
	e.execErr(t, `INSERT INTO "Order Lines" (id) SELECT * FROM read_csv('/etc/passwd')`, planner.ErrRefused, "read_csv")
	e.execErr(t, `INSERT INTO "Order Lines" (id) SELECT 'x'`, planner.ErrInvalid, "implicitly")
	e.execErr(t, `INSERT INTO "Order Lines" DEFAULT VALUES`, planner.ErrUnsupported)
	e.execErr(t, `INSERT OR REPLACE INTO "Order Lines" VALUES (1)`, planner.ErrUnsupported)
	e.execErr(t, `INSERT INTO nosuch VALUES (1)`, planner.ErrNotFound, "nosuch")
	e.execErr(t, `INSERT INTO "Order Lines" VALUES (1); DROP TABLE x`, planner.ErrSyntax)
	if got := len(e.load(t, "default", "Order Lines").Metadata().Snapshots()); got != snaps {
		t.Fatalf("a failed INSERT committed: %d snapshots, want %d", got, snaps)
	}
}

// TestDDLInsertIcebergTypes covers Iceberg types DuckDB has no column type
// for: fixed[L] (a BLOB whose length is checked) and a required struct
// field, on a table made straight through the catalog.
func TestDDLInsertIcebergTypes(t *testing.T) {
	e := newEnv(t)
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
	e.execErr(t, `INSERT INTO raw (id, fx) VALUES (3, '\x01'::BLOB)`, planner.ErrInvalid, "fx", "fixed[3]")
	e.execErr(t, `INSERT INTO raw (id, st) VALUES (3, {'must': NULL, 'may': 1})`, planner.ErrInvalid, "st.must")
	e.execErr(t, `INSERT INTO raw (id, req_list) VALUES (3, [1, NULL])`, planner.ErrInvalid, "req_list")
}

// TestDDLInsertConcurrent commits several INSERTs into one table at once:
// the losers of each commit race must retry, though the table (made
// without icefloe) does not set commit.retry.num-retries.
func TestDDLInsertConcurrent(t *testing.T) {
	e := newEnv(t)
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
			_, errs[i] = run(ctx, e.x, e.sess, fmt.Sprintf("INSERT INTO race VALUES (%d)", i))
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
	e := newEnv(t)
	e.exec(t, "CREATE TABLE t (a INT)")
	for _, c := range []struct {
		q, kind string
		err     error
	}{
		{"CREATE MACRO m(a) AS a", "CREATE MACRO", planner.ErrUnsupported},
		{"CREATE SEQUENCE s", "CREATE SEQUENCE", planner.ErrUnsupported},
		{"COPY t TO 'x.csv'", "COPY", planner.ErrRefused},
		{"SET threads = 1", "SET", planner.ErrRefused},
		{"PRAGMA version", "PRAGMA", planner.ErrRefused},
		{"SELECT 1", "SELECT", planner.ErrUnsupported},
	} {
		e.execErr(t, c.q, c.err, c.kind)
	}
	e.execErr(t, "", planner.ErrSyntax, "empty")
	e.execErr(t, " ; -- nothing", planner.ErrSyntax, "empty")
}
