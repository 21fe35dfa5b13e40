package planner

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/testlocal"
	"github.com/icefloe/icefloe/wire"
)

type fixedWorkers []Worker

func (f fixedWorkers) Live() []Worker { return f }

// testPlanner returns a planner over a fresh local catalog with table
// default.t (id long, s string) appended in `files` commits.
func testPlanner(t *testing.T, workers fixedWorkers, files int) (*Planner, *wire.Key) {
	p, key, _ := testPlannerWith(t, workers, files, nil)
	return p, key
}

// testPlannerWith is testPlanner with options set by opts; it returns the
// catalog too, for more tables (testTable).
func testPlannerWith(t *testing.T, workers fixedWorkers, files int, opts func(*Options)) (*Planner, *wire.Key, icecat.Catalog) {
	t.Helper()
	l := testlocal.New(t)
	cat := l.Cat
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "s", Type: iceberg.PrimitiveTypes.String})
	testTable(t, cat, "t", schema, files, func(f, i int) []any { return []any{int64(f*10 + i), fmt.Sprint("v", i)} })
	o := Options{Mounts: l.Mounts, Engine: l.Eng, Key: l.Key, Workers: workers, Flight: l.Pool}
	if opts != nil {
		opts(&o)
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p, l.Key, cat
}

// testTable creates default.name with schema, appended in `files`
// commits of ten rows each, row(f, i) being row i of commit f (int64,
// int32 and string cells).
func testTable(t *testing.T, cat icecat.Catalog, name string, schema *iceberg.Schema, files int, row func(f, i int) []any) {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.CreateTable(ctx, table.Identifier{"default", name}, schema)
	if err != nil {
		t.Fatal(err)
	}
	asch, err := table.SchemaToArrowSchema(schema, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for f := 0; f < files; f++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, asch)
		for i := 0; i < 10; i++ {
			for c, v := range row(f, i) {
				switch v := v.(type) {
				case int64:
					b.Field(c).(*array.Int64Builder).Append(v)
				case int32:
					b.Field(c).(*array.Int32Builder).Append(v)
				case string:
					b.Field(c).(*array.StringBuilder).Append(v)
				case nil:
					b.Field(c).AppendNull()
				}
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		tx := tbl.NewTransaction()
		if err := tx.AppendTable(ctx, array.NewTableFromRecords(asch, []arrow.RecordBatch{rec}), 10, nil); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

var twoWorkers = fixedWorkers{{Location: "grpc://w1:1", Slots: 2}, {Location: "grpc://w2:2", Slots: 2}}

func TestPlanScatterSpreadsGroups(t *testing.T) {
	p, key := testPlanner(t, twoWorkers, 8)
	plan, err := planText(context.Background(), p, Session{Catalog: "local", Schema: "default"}, "SELECT id FROM t WHERE id > 3")
	if err != nil {
		t.Fatal(err)
	}
	// Files go to workers by rendezvous hashing of their (random) paths,
	// so how many groups each worker gets varies; every file is in one.
	if plan.Strategy != Scatter || len(plan.Endpoints) < 2 {
		t.Fatalf("got %s with %d endpoints, want scatter with 2 or more:\n%s", plan.Strategy, len(plan.Endpoints), plan.Explain)
	}
	owners := map[string]int{}
	tasks := 0
	for _, ep := range plan.Endpoints {
		if len(ep.Locations) != 2 || ep.Locations[0] == ep.Locations[1] {
			t.Fatalf("locations %v: want owner and a different fallback", ep.Locations)
		}
		owners[ep.Locations[0]]++
		tk, err := key.Open(ep.Ticket, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(tk.Scans) != 1 || tk.Scans[0].MetadataLocation == "" {
			t.Fatalf("ticket scans: %v", tk)
		}
		tasks += len(tk.Scans[0].Tasks)
		if tk.SQL == "" || len(tk.Schema) == 0 {
			t.Fatal("ticket without SQL or schema")
		}
	}
	if tasks != 8 {
		t.Fatalf("tasks over all tickets = %d, want each of 8 exactly once", tasks)
	}
	if plan.Schema.NumFields() != 1 || plan.Schema.Field(0).Name != "id" {
		t.Fatalf("schema %s", plan.Schema)
	}
}

func TestPlanStrategies(t *testing.T) {
	p, key := testPlanner(t, twoWorkers, 3)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	cases := []struct {
		q        string
		strategy Strategy
		ordered  bool
	}{
		{"SELECT count(*) FROM t", TwoPhase, false},
		{"SELECT s, sum(id) AS total, avg(id), min(s), max(id), count(s) FROM t GROUP BY s HAVING sum(id) > 3 ORDER BY total DESC", TwoPhase, true},
		{"SELECT s, stddev(id), var_pop(id), bool_and(id > 3) FROM t GROUP BY 1", TwoPhase, false},
		{"SELECT id FROM t ORDER BY id LIMIT 3", TwoPhase, true},
		{"SELECT id FROM t LIMIT 3", TwoPhase, false},
		{"SELECT DISTINCT s FROM t", TwoPhase, false},
		{"SELECT id FROM t UNION ALL SELECT id FROM t", Scatter, false},
		{"SELECT a.id FROM t a JOIN t b ON a.id = b.id", Gather, false},
		{"SELECT row_number() OVER () FROM t", Gather, false},
		{"WITH x AS (SELECT id FROM t) SELECT * FROM x", Gather, false},
		{"SELECT id FROM t WHERE id IN (SELECT id FROM t)", Gather, false},
		{"SELECT count(DISTINCT s) FROM t", Gather, false},
		{"SELECT median(id) FROM t", Gather, false},
		{"SELECT id FROM t INTERSECT SELECT id FROM t", Gather, false},
		{"SELECT id, s FROM t WHERE id > 3", Scatter, false},
	}
	for _, c := range cases {
		plan, err := planText(ctx, p, s, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		if plan.Strategy != c.strategy || plan.Ordered != c.ordered {
			t.Errorf("%s: got %s ordered=%v, want %s ordered=%v\n%s", c.q, plan.Strategy, plan.Ordered, c.strategy, c.ordered, plan.Explain)
			continue
		}
		if c.strategy == Scatter {
			continue
		}
		if len(plan.Endpoints) != 1 {
			t.Errorf("%s: %d endpoints, want one final endpoint", c.q, len(plan.Endpoints))
			continue
		}
		tk, err := key.Open(plan.Endpoints[0].Ticket, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		// Three files on two workers of two slots each: a group per file
		// on the worker it hashes to, at most two per worker, pulled as
		// children; every file in exactly one.
		files := 0
		for _, ch := range tk.Children {
			ct, err := key.Open(ch.Ticket, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			files += len(ct.Scans[0].Tasks)
		}
		if len(tk.Children) < 2 || len(tk.Children) > 3 || files != 3 || len(tk.Scans) != 0 {
			t.Errorf("%s: final ticket has %d children over %d files and %d scans, want 2 or 3 children over 3 files", c.q, len(tk.Children), files, len(tk.Scans))
		}
	}
	plan, err := planText(ctx, p, s, "SELECT 1 AS x")
	if err != nil || len(plan.Endpoints) != 1 {
		t.Fatalf("SELECT 1: %v %v", plan, err)
	}
}

func TestPlanErrors(t *testing.T) {
	p, _ := testPlanner(t, twoWorkers, 1)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	cases := []struct {
		q    string
		want error
	}{
		{"SELEC 1", ErrSyntax},
		{"SELECT * FROM nope", ErrNotFound},
		{"SELECT * FROM other.default.t", ErrNotFound},
		{"SELECT nope FROM t", ErrInvalid},
		{"SELECT * FROM read_csv('/etc/passwd')", ErrRefused},
		{"SELECT * FROM t, glob('*')", ErrRefused},
		{"SELECT 1; SELECT 2", ErrInvalid},
	}
	for _, c := range cases {
		_, err := planText(ctx, p, s, c.q)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.q, err, c.want)
		}
	}
	none, _ := testPlanner(t, fixedWorkers{}, 1)
	if _, err := planText(ctx, none, s, "SELECT 1"); !errors.Is(err, ErrNoWorkers) {
		t.Errorf("no workers: %v", err)
	}
}

func TestEmptyTableOneGroup(t *testing.T) {
	p, _ := testPlanner(t, twoWorkers, 0)
	plan, err := planText(context.Background(), p, Session{Catalog: "local", Schema: "default"}, "SELECT * FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Endpoints) != 1 {
		t.Fatalf("empty table: %d endpoints, want 1", len(plan.Endpoints))
	}
}

func TestGroupTasks(t *testing.T) {
	if g := groupTasks(nil, 4); len(g) != 1 || len(g[0]) != 0 {
		t.Fatalf("no tasks: %v", g)
	}
	var tasks []table.FileScanTask
	for i := 1; i <= 9; i++ {
		tasks = append(tasks, table.FileScanTask{Length: int64(i * 100)})
	}
	groups := groupTasks(tasks, 3)
	if len(groups) != 3 {
		t.Fatalf("%d groups", len(groups))
	}
	var total, maxB, minB int64 = 0, 0, 1 << 62
	n := 0
	for _, g := range groups {
		var b int64
		for _, t := range g {
			b += t.Length
		}
		n += len(g)
		total += b
		maxB, minB = max(maxB, b), min(minB, b)
	}
	if n != 9 || total != 4500 {
		t.Fatalf("tasks %d bytes %d", n, total)
	}
	if maxB-minB > 900 { // greedy bin-packing keeps groups within one task of each other
		t.Fatalf("unbalanced groups: %d..%d", minB, maxB)
	}
	if g := groupTasks(tasks[:2], 8); len(g) != 2 {
		t.Fatalf("more groups than tasks: %d", len(g))
	}
	if n := targetGroups(twoWorkers, 10<<30, 1<<30); n != 10 {
		t.Fatalf("target groups by size: %d", n)
	}
	if n := targetGroups(twoWorkers, 1, 1<<30); n != 4 {
		t.Fatalf("target groups by slots: %d", n)
	}
}

// The bound schema carries Flight SQL column metadata: DuckDB's type name
// and, where they apply, precision and scale; the plan's tickets carry the
// same schema, so every stream agrees with it.
func TestBindColumnMetadata(t *testing.T) {
	e := newDDLEnv(t)
	ctx := context.Background()
	e.exec(t, `CREATE TABLE m (id BIGINT NOT NULL, amount DECIMAL(12,2), u UUID, tz TIMESTAMPTZ, s VARCHAR)`)
	sc, err := bindText(ctx, e.p, e.sess, "SELECT amount, id, u, tz, s, sum(id) OVER () AS total, amount AS amount FROM m")
	if err != nil {
		t.Fatal(err)
	}
	want := [][3]string{
		{"DECIMAL(12,2)", "12", "2"}, {"BIGINT", "19", "0"}, {"UUID", "36", "0"},
		{"TIMESTAMP WITH TIME ZONE", "", ""}, {"VARCHAR", "", ""}, {"HUGEINT", "38", "0"}, {"DECIMAL(12,2)", "12", "2"},
	}
	for i, w := range want {
		md := sc.Field(i).Metadata
		get := func(k string) string {
			v, _ := md.GetValue(k)
			return v
		}
		got := [3]string{get("ARROW:FLIGHT:SQL:TYPE_NAME"), get("ARROW:FLIGHT:SQL:PRECISION"), get("ARROW:FLIGHT:SQL:SCALE")}
		if got != w {
			t.Errorf("column %d (%s): metadata %v, want %v", i, sc.Field(i).Name, got, w)
		}
	}
}
