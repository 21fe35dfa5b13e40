package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// partitions are the tables' partition specs, as bench/tpch loads them.
var partitions = map[string]string{"lineitem": "year(l_shipdate)", "orders": "year(o_orderdate)"}

// ingestBatchRows keeps each ingest message well under gRPC's 16 MiB.
const ingestBatchRows = 32 * 1024

// expected are the figures the checked answers must show, computed from
// the Parquet files while they are loaded.
type expected struct {
	orders, lineitem int64
	orderKeys        []int64
	ordersByDate     map[int32]int64 // o_orderdate (days) → rows
	ordersByPrio     map[string]int64
	custKeys         map[int64]int64 // o_custkey → rows
	maxPrice         int64           // largest o_totalprice, unscaled
	maxPriceKey      int64           // its order, 0 when several share it
	// (l_returnflag, l_linestatus) → rows and sum of l_quantity (whole units)
	lineGroups map[[2]string][2]int64
	// rows of 1994 with l_discount in [0.05, 0.07] and l_quantity < 24
	q6Rows int64
}

// readParquet reads path as records of at most ingestBatchRows rows,
// every string column as plain utf8 (tpchgen-cli writes string_view);
// the caller releases them.
func readParquet(ctx context.Context, path string) (*arrow.Schema, []arrow.RecordBatch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: ingestBatchRows}, memory.DefaultAllocator)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	defer rr.Release()
	var schema *arrow.Schema
	var out []arrow.RecordBatch
	for rr.Next() {
		rec := plainStrings(rr.RecordBatch())
		schema = rec.Schema()
		out = append(out, rec)
	}
	if err := rr.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return schema, out, nil
}

// plainStrings is rec with every string_view column as utf8 (a new
// record the caller releases).
func plainStrings(rec arrow.RecordBatch) arrow.RecordBatch {
	fields := make([]arrow.Field, rec.NumCols())
	cols := make([]arrow.Array, rec.NumCols())
	for i, col := range rec.Columns() {
		fields[i] = rec.Schema().Field(i)
		fields[i].Metadata = arrow.Metadata{}
		sv, ok := col.(*array.StringView)
		if !ok {
			col.Retain()
			cols[i] = col
			continue
		}
		b := array.NewStringBuilder(memory.DefaultAllocator)
		b.Reserve(sv.Len())
		for j := range sv.Len() {
			if sv.IsNull(j) {
				b.AppendNull()
			} else {
				b.Append(sv.Value(j))
			}
		}
		cols[i] = b.NewArray()
		b.Release()
		fields[i].Type = arrow.BinaryTypes.String
	}
	out := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

// sqlType is the SQL type of an Arrow column of the TPC-H files.
func sqlType(t arrow.DataType) (string, error) {
	switch t := t.(type) {
	case *arrow.Int64Type:
		return "BIGINT", nil
	case *arrow.Int32Type:
		return "INTEGER", nil
	case *arrow.Decimal128Type:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale), nil
	case *arrow.Date32Type:
		return "DATE", nil
	case *arrow.StringType:
		return "VARCHAR", nil
	case *arrow.Float64Type:
		return "DOUBLE", nil
	}
	return "", fmt.Errorf("no SQL type for %s", t)
}

// ddl is the CREATE TABLE of table with schema (partitioned as bench/tpch
// loads it).
func ddl(table string, schema *arrow.Schema) (string, error) {
	cols := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		t, err := sqlType(f.Type)
		if err != nil {
			return "", fmt.Errorf("%s.%s: %w", table, f.Name, err)
		}
		cols[i] = f.Name + " " + t
		if !f.Nullable {
			cols[i] += " NOT NULL"
		}
	}
	q := fmt.Sprintf("CREATE TABLE %s (%s)", table, strings.Join(cols, ", "))
	if p, ok := partitions[table]; ok {
		q += " PARTITIONED BY (" + p + ")"
	}
	return q, nil
}

// loadTables creates orders and lineitem from the Parquet files of
// dataDir and fills each with one ADBC bulk ingest; it returns the
// figures the checks expect and how long each load took.
func loadTables(ctx context.Context, cnxn adbc.Connection, dataDir string, logf func(string, ...any)) (*expected, map[string]float64, error) {
	exp := &expected{ordersByDate: map[int32]int64{}, ordersByPrio: map[string]int64{}, custKeys: map[int64]int64{},
		lineGroups: map[[2]string][2]int64{}}
	took := map[string]float64{}
	for _, table := range []string{"orders", "lineitem"} {
		schema, recs, err := readParquet(ctx, filepath.Join(dataDir, table+".parquet"))
		if err != nil {
			return nil, nil, err
		}
		for _, rec := range recs {
			if table == "orders" {
				exp.addOrders(rec)
			} else {
				exp.addLineitem(rec)
			}
		}
		q, err := ddl(table, schema)
		if err != nil {
			return nil, nil, err
		}
		if _, err := update(ctx, cnxn, q); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", q, err)
		}
		start := time.Now()
		n, err := ingest(ctx, cnxn, table, schema, recs)
		for _, r := range recs {
			r.Release()
		}
		if err != nil {
			return nil, nil, fmt.Errorf("ingest %s: %w", table, err)
		}
		want := exp.orders
		if table == "lineitem" {
			want = exp.lineitem
		}
		if n != want {
			return nil, nil, fmt.Errorf("ingest %s: %d rows, want %d", table, n, want)
		}
		took[table] = time.Since(start).Seconds()
		logf("loaded %s: %d rows in %.1f s", table, n, took[table])
	}
	return exp, took, nil
}

func ingest(ctx context.Context, cnxn adbc.Connection, table string, schema *arrow.Schema, recs []arrow.RecordBatch) (int64, error) {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	for k, v := range map[string]string{adbc.OptionKeyIngestTargetTable: table, adbc.OptionKeyIngestMode: adbc.OptionValueIngestModeAppend} {
		if err := stmt.SetOption(k, v); err != nil {
			return 0, err
		}
	}
	rdr, err := array.NewRecordReader(schema, recs)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	if err := stmt.BindStream(ctx, rdr); err != nil {
		return 0, err
	}
	return stmt.ExecuteUpdate(ctx)
}

func column[T arrow.Array](rec arrow.RecordBatch, name string) T {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		panic(fmt.Sprintf("no column %s", name))
	}
	return rec.Column(idx[0]).(T)
}

func (e *expected) addOrders(rec arrow.RecordBatch) {
	keys := column[*array.Int64](rec, "o_orderkey")
	cust := column[*array.Int64](rec, "o_custkey")
	date := column[*array.Date32](rec, "o_orderdate")
	prio := column[*array.String](rec, "o_orderpriority")
	price := column[*array.Decimal128](rec, "o_totalprice")
	for i := range int(rec.NumRows()) {
		switch p := int64(price.Value(i).LowBits()); {
		case p > e.maxPrice:
			e.maxPrice, e.maxPriceKey = p, keys.Value(i)
		case p == e.maxPrice:
			e.maxPriceKey = 0
		}
		e.orderKeys = append(e.orderKeys, keys.Value(i))
		e.custKeys[cust.Value(i)]++
		e.ordersByDate[int32(date.Value(i))]++
		e.ordersByPrio[prio.Value(i)]++
	}
	e.orders += rec.NumRows()
}

// q6 bounds: 1994-01-01 and 1995-01-01 as days since the epoch.
var q6From, q6To = daysOf("1994-01-01"), daysOf("1995-01-01")

func daysOf(date string) int32 {
	t, err := time.Parse(time.DateOnly, date)
	if err != nil {
		panic(err)
	}
	return int32(t.Unix() / 86400)
}

func (e *expected) addLineitem(rec arrow.RecordBatch) {
	flag := column[*array.String](rec, "l_returnflag")
	status := column[*array.String](rec, "l_linestatus")
	qty := column[*array.Decimal128](rec, "l_quantity") // scale 2
	disc := column[*array.Decimal128](rec, "l_discount")
	ship := column[*array.Date32](rec, "l_shipdate")
	for i := range int(rec.NumRows()) {
		k := [2]string{flag.Value(i), status.Value(i)}
		g := e.lineGroups[k]
		g[0]++
		g[1] += int64(qty.Value(i).LowBits()) / 100
		e.lineGroups[k] = g
		d, q, s := int64(disc.Value(i).LowBits()), int64(qty.Value(i).LowBits()), int32(ship.Value(i))
		if s >= q6From && s < q6To && d >= 5 && d <= 7 && q < 2400 {
			e.q6Rows++
		}
	}
	e.lineitem += rec.NumRows()
}

// update runs q as a Flight SQL update.
func update(ctx context.Context, cnxn adbc.Connection, q string) (int64, error) {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		return 0, err
	}
	return stmt.ExecuteUpdate(ctx)
}
