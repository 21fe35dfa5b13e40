package integration

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestUnstorableValuesRefused: every write path (VALUES, INSERT …
// SELECT, CTAS, UPDATE, bulk ingest) refuses values Iceberg cannot store —
// DuckDB's infinities, dates and timestamps past 9999 or before year 1,
// TIME '24:00:00', invalid UTF-8 — with InvalidArgument naming the column
// and the row, and the table stays readable and writable.
func TestUnstorableValuesRefused(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, "CREATE TABLE v (id BIGINT, s VARCHAR, d DATE, ts TIMESTAMP, tstz TIMESTAMPTZ, tm TIME, l VARCHAR[])")
	execUpdate(t, cnxn, "INSERT INTO v VALUES (1, 'ok', DATE '0001-01-01', TIMESTAMP '9999-12-31 23:59:59.999999', TIMESTAMPTZ '2024-01-01 00:00:00+00', TIME '23:59:59', ['a'])")
	for _, c := range []struct{ q, column, row string }{
		{"INSERT INTO v (id, d) VALUES (2, DATE '2024-01-01'), (3, 'infinity'::DATE)", "d", "row 2"},
		{"INSERT INTO v (id, d) VALUES (2, '-infinity'::DATE)", "d", "row 1"},
		{"INSERT INTO v (id, d) VALUES (2, DATE '10000-01-01')", "d", "row 1"},
		{"INSERT INTO v (id, ts) VALUES (2, 'infinity'::TIMESTAMP)", "ts", "row 1"},
		{"INSERT INTO v (id, tstz) VALUES (2, '-infinity'::TIMESTAMPTZ)", "tstz", "row 1"},
		{"INSERT INTO v (id, tm) VALUES (2, TIME '24:00:00')", "tm", "row 1"},
		{"INSERT INTO v (id, d) SELECT id + 10, 'infinity'::DATE FROM v", "d", "row 1"},
		{"CREATE TABLE v2 AS SELECT 1 AS id, '-infinity'::TIMESTAMP AS ts", "ts", "row 1"},
		{"UPDATE v SET d = 'infinity'::DATE WHERE id = 1", "d", "row 1"},
	} {
		err := runADBC(cnxn, c.q, true, false)
		var ae adbc.Error
		if !errors.As(err, &ae) || ae.Code != adbc.StatusInvalidArgument || !strings.Contains(err.Error(), "column "+c.column+", "+c.row) {
			t.Errorf("%s: got %v, want InvalidArgument naming column %s, %s", c.q, err, c.column, c.row)
		}
	}
	// Bulk ingest: DuckDB's infinity as a raw date32, and invalid UTF-8,
	// also inside a list.
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	for _, c := range []struct {
		s, elem, column string
		d               arrow.Date32
	}{
		{"a\xffb", "x", "s", 0},
		{"ok", "x", "d", math.MaxInt32},
		{"ok", "\xc3", "l.element", 0},
	} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{7, 8}, nil)
		b.Field(1).(*array.StringBuilder).AppendValues([]string{"fine", c.s}, nil)
		b.Field(2).(*array.Date32Builder).AppendValues([]arrow.Date32{0, c.d}, nil)
		lb := b.Field(3).(*array.ListBuilder)
		for _, e := range []string{"y", c.elem} {
			lb.Append(true)
			lb.ValueBuilder().(*array.StringBuilder).Append(e)
		}
		rec := b.NewRecordBatch()
		b.Release()
		rdr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		_, err := ingestCancel(t, cnxn, "v", adbc.OptionValueIngestModeAppend, rdr)
		rdr.Release()
		rec.Release()
		var ae adbc.Error
		if !errors.As(err, &ae) || ae.Code != adbc.StatusInvalidArgument || !strings.Contains(err.Error(), "column "+c.column+", row 2") {
			t.Errorf("ingest of bad %s: got %v, want InvalidArgument naming column %s, row 2", c.column, err, c.column)
		}
	}
	// Nothing was written, v is readable, and its rows can still go.
	got := mustQuery(t, cnxn, "SELECT count(*), min(d)::VARCHAR, max(ts)::VARCHAR, max(l[1]) FROM v")
	if want := "1 | 0001-01-01 | 9999-12-31 23:59:59.999999 | a"; strings.Join(got.rows, ";") != want {
		t.Errorf("v holds %s, want %s", strings.Join(got.rows, ";"), want)
	}
	if _, err := query(t, cnxn, "SELECT * FROM v2"); err == nil {
		t.Error("the refused CTAS left table v2")
	}
	if n := execUpdate(t, cnxn, "DELETE FROM v WHERE id = 1"); n != 1 {
		t.Errorf("DELETE removed %d rows, want 1", n)
	}
}
