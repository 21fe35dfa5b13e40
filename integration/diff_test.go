package integration

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/engine"
)

// result is a query result reduced to comparable text.
type result struct {
	schema *arrow.Schema
	rows   []string
}

// collect reads rdr to its end.
func collect(t testing.TB, rdr array.RecordReader) result {
	t.Helper()
	defer rdr.Release()
	res := result{schema: rdr.Schema()}
	for rdr.Next() {
		res.rows = append(res.rows, rowsOf(rdr.RecordBatch())...)
	}
	if err := rdr.Err(); err != nil {
		t.Fatalf("read result: %v", err)
	}
	return res
}

// rowsOf formats each row of rec; floats are rounded to 9 significant
// digits, the differential harness's rounding rule.
func rowsOf(rec arrow.RecordBatch) []string {
	rows := make([]string, rec.NumRows())
	for r := range rows {
		var b strings.Builder
		for c := 0; c < int(rec.NumCols()); c++ {
			if c > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(cell(rec.Column(c), r))
		}
		rows[r] = b.String()
	}
	return rows
}

func cell(col arrow.Array, i int) string {
	if col.IsNull(i) {
		return "NULL"
	}
	switch a := col.(type) {
	case *array.Float64:
		return strconv.FormatFloat(a.Value(i), 'g', 9, 64)
	case *array.Float32:
		return strconv.FormatFloat(float64(a.Value(i)), 'g', 6, 32)
	}
	return col.ValueStr(i)
}

// sorted returns the rows in a canonical order, for queries without ORDER BY.
func (r result) sorted() []string { return slices.Sorted(slices.Values(r.rows)) }

// reference runs query on single-node DuckDB over the current snapshot of
// each named table (loaded in full through iceberg-go), with the tables
// visible under their bare names.
func reference(t testing.TB, s *cluster.Standalone, query string, tables ...string) result {
	t.Helper()
	ctx := context.Background()
	conn := referenceConn(t, s.Mounts, tables)
	rdr, err := conn.Query(ctx, query, engine.QueryOptions{})
	if err != nil {
		t.Fatalf("reference query %q: %v", query, err)
	}
	return collect(t, rdr)
}

// assertSameResult compares an icefloe result with the reference: equal
// schemas (names and types) and equal rows, in order when ordered is true.
func assertSameResult(t testing.TB, got, want result, ordered bool) {
	t.Helper()
	if got.schema.NumFields() != want.schema.NumFields() {
		t.Fatalf("schema: got %s, want %s", got.schema, want.schema)
	}
	for i := range got.schema.Fields() {
		g, w := got.schema.Field(i), want.schema.Field(i)
		if g.Name != w.Name || !arrow.TypeEqual(g.Type, w.Type) {
			t.Fatalf("schema field %d: got %s %s, want %s %s", i, g.Name, g.Type, w.Name, w.Type)
		}
	}
	gr, wr := got.rows, want.rows
	if !ordered {
		gr, wr = got.sorted(), want.sorted()
	}
	if len(gr) != len(wr) {
		t.Fatalf("got %d rows, want %d", len(gr), len(wr))
	}
	for i := range gr {
		if gr[i] != wr[i] {
			t.Fatalf("row %d: got %q, want %q", i, gr[i], wr[i])
		}
	}
}
