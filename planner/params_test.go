package planner

import (
	"context"
	"errors"
	"fmt"
	"github.com/icefloe/icefloe/internal/parse"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/icefloe/icefloe/internal/engine"
)

// substituted binds args into query through the AST and returns what
// DuckDB computes for it, as "col=value" strings.
func substituted(t *testing.T, conn *engine.Conn, query string, args ...any) []string {
	t.Helper()
	ctx := context.Background()
	text, err := conn.SerializeSQL(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	ast, err := parseAST(text)
	if err != nil {
		t.Fatal(err)
	}
	if err := substituteParams(ast, args); err != nil {
		t.Fatal(err)
	}
	doc, err := ast.document()
	if err != nil {
		t.Fatal(err)
	}
	sql, err := conn.DeserializeSQL(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := conn.Query(ctx, sql, engine.QueryOptions{})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for c := 0; c < int(rec.NumCols()); c++ {
			out = append(out, fmt.Sprintf("%s:%s", rec.Column(c).DataType(), rec.Column(c).ValueStr(0)))
		}
	}
	return out
}

func TestSubstituteParamsKeepsTypesAndValues(t *testing.T) {
	conn := testConn(t)

	ts := time.Date(2024, 3, 1, 10, 0, 0, 123456000, time.UTC)
	dec := scalar.NewDecimal128Scalar(decimal128.FromI64(123450), &arrow.Decimal128Type{Precision: 10, Scale: 2})
	cases := []struct {
		arg  any
		want string
	}{
		{int64(5), "int64:5"},
		{int32(-7), "int32:-7"},
		{uint64(1 << 63), "uint64:9223372036854775808"},
		{0.1, "float64:0.1"},
		{float32(2.5), "float32:2.5"},
		{true, "bool:true"},
		{"it's; --", "utf8:it's; --"},
		{[]byte("a\x00b'"), "binary:YQBiJw=="}, // base64 of the four bytes
		{nil, "int32:(null)"},
		{scalar.NewDate32Scalar(arrow.Date32FromTime(ts)), "date32:2024-03-01"},
		{scalar.NewTimestampScalar(arrow.Timestamp(ts.UnixMicro()), &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}),
			"timestamp[us, tz=UTC]:2024-03-01T10:00:00.123456Z"},
		{scalar.NewTimestampScalar(arrow.Timestamp(ts.UnixMicro()), &arrow.TimestampType{Unit: arrow.Microsecond}),
			"timestamp[us]:2024-03-01T10:00:00.123456"},
		{scalar.NewTime64Scalar(arrow.Time64(3723000000), arrow.FixedWidthTypes.Time64us), "time64[us]:01:02:03.000000"},
		{dec, "decimal(10, 2):1234.5"},
		{scalar.MakeNullScalar(arrow.PrimitiveTypes.Int64), "int64:(null)"},
	}
	for _, c := range cases {
		got := substituted(t, conn, "SELECT ? AS v", c.arg)
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%T %v: got %v, want %s", c.arg, c.arg, got, c.want)
		}
	}
	// Positional $n may repeat.
	if got := substituted(t, conn, "SELECT $2 AS a, $1 AS b, $2 + 1 AS c", int64(1), int64(10)); strings.Join(got, ",") != "int64:10,int64:1,int64:11" {
		t.Fatalf("$n: %v", got)
	}
}

// TestSubstituteWholeNumberFloats: a float or double parameter is a
// float or double constant whatever its value: Go's JSON encoder writes
// 7.0 as 7, which DuckDB's deserializer reads as an unsigned integer and
// refuses for a DOUBLE value; -0.0 keeps its sign, NaN and the infinities
// are DuckDB's.
func TestSubstituteWholeNumberFloats(t *testing.T) {
	conn := testConn(t)
	cases := []struct {
		arg  any
		want string
	}{
		{7.0, "float64:7"},
		{2.0, "float64:2"},
		{100.0, "float64:100"},
		{0.0, "float64:0"},
		{math.Copysign(0, -1), "float64:-0"},
		{1e15, "float64:1e+15"},
		{-1e15, "float64:-1e+15"},
		{1e300, "float64:1e+300"},
		{math.MaxFloat64, "float64:1.7976931348623157e+308"},
		{-12345678.0, "float64:-1.2345678e+07"},
		{math.Inf(1), "float64:+Inf"},
		{math.Inf(-1), "float64:-Inf"},
		{math.NaN(), "float64:NaN"},
		{float32(7), "float32:7"},
		{float32(math.Copysign(0, -1)), "float32:-0"},
		{float32(1e15), "float32:1e+15"},
		{float32(math.MaxFloat32), "float32:3.4028235e+38"},
		{scalar.NewFloat64Scalar(2), "float64:2"},
		{scalar.NewFloat32Scalar(100), "float32:100"},
	}
	for _, c := range cases {
		got := substituted(t, conn, "SELECT ? AS v", c.arg)
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%T %v: got %v, want %s", c.arg, c.arg, got, c.want)
		}
	}
	// The sign of -0.0 survives into what DuckDB computes with it.
	if got := substituted(t, conn, "SELECT 1 / ? AS v", math.Copysign(0, -1)); len(got) != 1 || got[0] != "float64:-Inf" {
		t.Errorf("1 / -0.0: %v", got)
	}
}

func TestSubstituteParamsCounts(t *testing.T) {
	ctx := context.Background()
	conn := testConn(t)
	text, _ := conn.SerializeSQL(ctx, "SELECT ?, ?")
	ast, _ := parseAST(text)
	if err := substituteParams(ast, []any{int64(1)}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("one value for two parameters: %v", err)
	}
	text, _ = conn.SerializeSQL(ctx, "SELECT $name")
	ast, _ = parseAST(text)
	if err := substituteParams(ast, []any{int64(1)}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("named parameter: %v", err)
	}
	if err := substituteParams(ast, []any{struct{}{}}); err == nil {
		t.Fatal("a struct value must be refused")
	}
}

func TestPlanBindExecWithParameters(t *testing.T) {
	p, key := testPlanner(t, twoWorkers, 2)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	q := "SELECT id, s FROM t WHERE id = ? AND s = ?"

	params, err := p.Parameters(ctx, s, parse.Must(q))
	if err != nil {
		t.Fatal(err)
	}
	if params.NumFields() != 2 || params.Field(0).Type.ID() != arrow.INT64 || params.Field(1).Type.ID() != arrow.STRING {
		t.Fatalf("parameter schema: %v", params)
	}
	sc, err := bindText(ctx, p, s, q)
	if err != nil {
		t.Fatal(err)
	}
	if sc.NumFields() != 2 || sc.Field(0).Name != "id" {
		t.Fatalf("schema without values: %v", sc)
	}
	if _, err := planText(ctx, p, s, q); !errors.Is(err, ErrInvalid) {
		t.Fatalf("plan without values: %v", err)
	}
	plan, err := planText(ctx, p, s, q, int64(13), "v3")
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Schema.Equal(sc) {
		t.Fatalf("schema with values %v, without %v", plan.Schema, sc)
	}
	for _, ep := range plan.Endpoints {
		tk, err := key.Open(ep.Ticket, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(tk.SQL, "?") || !strings.Contains(tk.SQL, "13") || !strings.Contains(tk.SQL, "'v3'") {
			t.Fatalf("ticket SQL does not carry the values: %s", tk.SQL)
		}
	}

	// INSERT … VALUES binds natively.
	ins := "INSERT INTO t VALUES (?, ?)"
	ps, err := p.Parameters(ctx, s, parse.Must(ins))
	if err != nil || ps.NumFields() != 2 || ps.Field(0).Type.ID() != arrow.INT64 {
		t.Fatalf("insert parameter schema: %v %v", ps, err)
	}
	if n, err := execSQL(p, ctx, s, ins, int64(1000), "it's"); err != nil || n != 1 {
		t.Fatalf("insert: %d %v", n, err)
	}
	if _, err := execSQL(p, ctx, s, ins, nil, "x"); err == nil || !strings.Contains(err.Error(), "NOT NULL") {
		t.Fatalf("NULL into a required column: %v", err)
	}
	if _, err := execSQL(p, ctx, s, "CREATE SCHEMA x", int64(1)); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("DDL with parameters: %v", err)
	}
}

// TestParameterColumnNames: a select-list expression with a parameter is
// named as DuckDB names it with the parameter unbound, with an alias or
// without, at any depth and for every parameter type, both in the schema
// of the statement prepared without values and with them.
func TestParameterColumnNames(t *testing.T) {
	p, _ := testPlanner(t, twoWorkers, 1)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	ref := testConn(t)
	if err := ref.Exec(ctx, "CREATE TABLE t (id BIGINT, s VARCHAR)"); err != nil {
		t.Fatal(err)
	}
	queries := []string{
		`SELECT ? AS x, ? AS "Mixed Alias", 7 AS y`,
		`SELECT ?, ? + 1 AS e, ?`,
		`SELECT ?, ?::VARCHAR, (SELECT ?), coalesce(?, ?), [?], id FROM t`,
		`SELECT * FROM (SELECT ? AS z, ?, id FROM t)`,
		`SELECT ? AS u UNION ALL SELECT ?`,
		`SELECT ? UNION ALL SELECT ? AS v`,
		`WITH c AS (SELECT ? AS w, ?) SELECT * FROM c`,
		`SELECT $2 AS a, $1, $2 IS NULL, $1 AS "$2"`,
		`SELECT s, ? AS "s" FROM t`,
	}
	ts := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	values := []any{
		int64(1), 7.0, float32(2), "it's", true, []byte("b"), nil, ts,
		scalar.NewDate32Scalar(arrow.Date32FromTime(ts)),
		scalar.NewDecimal128Scalar(decimal128.FromI64(12345), &arrow.Decimal128Type{Precision: 9, Scale: 2}),
	}
	checked := 0
	for _, q := range queries {
		n := strings.Count(q, "?")
		if n == 0 {
			n = 2 // $1 and $2
		}
		unbound, err := p.Bind(ctx, s, parse.Must(q))
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for _, v := range values {
			args := make([]any, n)
			for i := range args {
				args[i] = v
			}
			drv, err := DriverArgs(args)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := ref.DB().QueryContext(ctx, q, drv...)
			if err != nil {
				continue // a type the expression does not take
			}
			checked++
			want, _ := rows.Columns()
			rows.Close()
			plan, err := p.Plan(ctx, s, parse.Must(q), args...)
			if err != nil {
				t.Fatalf("%s with %T: %v", q, v, err)
			}
			got := fieldNames(plan.Schema)
			if !slices.Equal(got, want) {
				t.Errorf("%s with %T %v: columns %q, DuckDB %q", q, v, v, got, want)
			}
			if names := fieldNames(unbound); !slices.Equal(names, want) {
				t.Errorf("%s prepared: columns %q, DuckDB %q", q, names, want)
			}
		}
	}
	if checked < len(queries)*len(values)/2 {
		t.Fatalf("only %d of %d cases ran", checked, len(queries)*len(values))
	}
}
