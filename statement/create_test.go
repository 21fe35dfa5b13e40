package statement

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/planner"
)

func TestDDLCreateTableTypes(t *testing.T) {
	e := newEnv(t)
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
		e.execErr(t, "CREATE TABLE bad (ok INTEGER, col_x "+c.decl+")", planner.ErrInvalid, `"col_x"`, c.typ)
	}
	if ok, _ := e.cat.CheckTableExists(context.Background(), table.Identifier{"default", "bad"}); ok {
		t.Fatal("a refused table was created")
	}
}

func TestDDLCreateTablePartitioned(t *testing.T) {
	e := newEnv(t)
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
	e.execErr(t, "CREATE TABLE events (other INT)", planner.ErrExists, "events")
	if got := e.load(t, "default", "events").Schema().NumFields(); got != 9 {
		t.Fatalf("IF NOT EXISTS replaced the table: %d columns", got)
	}

	for _, c := range []struct {
		q     string
		want  error
		words []string
	}{
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (nope)", planner.ErrInvalid, []string{`"nope"`}},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (bucket(4, nope))", planner.ErrInvalid, []string{`"nope"`}},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (fortnight(a))", planner.ErrInvalid, []string{`"fortnight"`}},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (bucket(a))", planner.ErrInvalid, []string{"bucket"}},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (bucket(0, a))", planner.ErrInvalid, []string{"bucket"}},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (day(a))", planner.ErrInvalid, []string{"day", `"a"`}},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (year(3, a))", planner.ErrInvalid, []string{"year"}},
		{"CREATE TABLE p1 (a TIMESTAMP) PARTITIONED BY (day(a), day(a))", planner.ErrInvalid, nil},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY a", planner.ErrSyntax, nil},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (a", planner.ErrSyntax, nil},
		{"CREATE TABLE p1 (a INT) PARTITIONED BY (a) PARTITIONED BY (a)", planner.ErrSyntax, nil},
		{"CREATE TABLE p1 (a INT) WITH ('k')", planner.ErrSyntax, nil},
		{"CREATE TABLE p1 (a INT) WITH ('k' = x)", planner.ErrSyntax, nil},
		{"CREATE TABLE p1 (a INT) WITH ('format-version' = 'nine')", planner.ErrInvalid, nil},
		{"CREATE TABLE p1 (a INT) extra", planner.ErrSyntax, []string{"extra"}},
		{"CREATE TABLE p1 (a INT, a INT)", planner.ErrInvalid, nil},
		{"CREATE TABLE p1 (a NOSUCHTYPE)", planner.ErrInvalid, []string{"NOSUCHTYPE"}},
		{"CREATE TABLE p1 (a INT PRIMARY KEY)", planner.ErrUnsupported, []string{"PRIMARY KEY"}},
		{"CREATE TABLE p1 (a INT CHECK (a > 0))", planner.ErrUnsupported, []string{"CHECK"}},
		{"CREATE TABLE p1 (a INT DEFAULT 3)", planner.ErrUnsupported, []string{`"a"`, "DEFAULT"}},
		{"CREATE TABLE p1 (a INT, b INT GENERATED ALWAYS AS (a + 1))", planner.ErrUnsupported, []string{`"b"`}},
		{"CREATE TABLE p1 (a) AS SELECT 1", planner.ErrUnsupported, nil},
		{"CREATE TABLE p1 (a INT); DROP TABLE events", planner.ErrSyntax, []string{"one statement"}},
		{"CREATE TABLE nosuch.p1 (a INT)", planner.ErrNotFound, []string{"nosuch"}},
		{"CREATE TABLE elsewhere.default.p1 (a INT)", planner.ErrNotFound, []string{"elsewhere"}},
		{"CREATE TABLE a.b.c.d (a INT)", planner.ErrSyntax, nil},
		{"CREATE TABLE 'p1' (a INT)", planner.ErrSyntax, nil},
		{"CREATE TABLE p1 (a VARCHAR '", planner.ErrSyntax, []string{"unterminated"}},
		{"CREATE OR REPLACE TABLE IF NOT EXISTS p1 (a INT)", planner.ErrSyntax, []string{"IF NOT EXISTS"}},
		{"CREATE OR REPLACE TEMP TABLE p1 (a INT)", planner.ErrUnsupported, []string{"CREATE OR"}},
		{"CREATE TEMP TABLE p1 (a INT)", planner.ErrUnsupported, nil},
	} {
		e.execErr(t, c.q, c.want, c.words...)
	}
	if ok, _ := e.cat.CheckTableExists(context.Background(), table.Identifier{"default", "p1"}); ok {
		t.Fatal("a refused table was created")
	}
}

func TestCreateTableSortOrder(t *testing.T) {
	e := newEnv(t)
	e.exec(t, "CREATE TABLE s (a INT, b VARCHAR, ts TIMESTAMP) PARTITIONED BY (day(ts)) ORDERED BY (b DESC, a NULLS LAST) WITH ('format-version' = 2)")
	tbl := e.load(t, "default", "s")
	order := tbl.SortOrder()
	if order.Len() != 2 {
		t.Fatalf("sort order %v", order)
	}
	b, a := order.Field(0), order.Field(1)
	if bn, _ := tbl.Schema().FindColumnName(b.SourceID()); bn != "b" || b.Direction != "desc" || b.NullOrder != "nulls-last" {
		t.Fatalf("first sort field %v (%s)", b, bn)
	}
	if an, _ := tbl.Schema().FindColumnName(a.SourceID()); an != "a" || a.Direction != "asc" || a.NullOrder != "nulls-last" {
		t.Fatalf("second sort field %v (%s)", a, an)
	}
	if got := planner.PartitionOrder(tbl); got != `"ts", "b" DESC NULLS LAST, "a" ASC NULLS LAST` {
		t.Fatalf("write order %s", got)
	}
	e.execErr(t, "CREATE TABLE s2 (a INT) ORDERED BY (nope)", planner.ErrInvalid, "nope")
	e.execErr(t, "CREATE TABLE s3 (a INT) ORDERED BY a", planner.ErrSyntax)
}
