package planner

import (
	"context"
	"errors"
	"fmt"
	"github.com/icefloe/icefloe/internal/parse"
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
