package icemeta

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/conform"
	"github.com/icefloe/icefloe/internal/engine"
)

// fixture is a local catalog and a DuckDB to make rows with.
type fixture struct {
	t    *testing.T
	ctx  context.Context
	cat  icecat.Catalog
	conn *engine.Conn
}

var tableSeq atomic.Int64

// on is f reporting to t (a subtest).
func (f *fixture) on(t *testing.T) *fixture {
	g := *f
	g.t = t
	return &g
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	cat, _, err := catalog.OpenLocal(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.(icecat.Closer).Close() })
	eng, err := engine.Open(ctx, engine.Options{Threads: 1, MemoryLimit: "512MB", TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	conn, err := eng.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &fixture{t: t, ctx: ctx, cat: cat, conn: conn}
}

// identitySpec partitions by the identity of column name.
func identitySpec(name string) func(*iceberg.Schema) iceberg.PartitionSpec {
	return func(s *iceberg.Schema) iceberg.PartitionSpec {
		fld, _ := s.FindFieldByName(name)
		return iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{fld.ID}, FieldID: 1000, Name: name, Transform: iceberg.IdentityTransform{}})
	}
}

// table creates a table of columns "name TYPE; …" (Iceberg types by their
// DuckDB names) partitioned by spec, with properties props.
func (f *fixture) table(cols string, spec func(*iceberg.Schema) iceberg.PartitionSpec, props iceberg.Properties) *table.Table {
	f.t.Helper()
	var fields []iceberg.NestedField
	for i, c := range strings.Split(cols, ";") {
		name, typ, _ := strings.Cut(strings.TrimSpace(c), " ")
		fields = append(fields, iceberg.NestedField{ID: i + 1, Name: name, Type: icebergType(f.t, typ)})
	}
	schema := iceberg.NewSchema(0, fields...)
	opts := []icecat.CreateTableOpt{icecat.WithProperties(props)}
	if spec != nil {
		opts = append(opts, icecat.WithPartitionSpec(new(spec(schema))))
	}
	ident := table.Identifier{catalog.DefaultSchema, fmt.Sprintf("t%d", tableSeq.Add(1))}
	tbl, err := f.cat.CreateTable(f.ctx, ident, schema, opts...)
	if err != nil {
		f.t.Fatal(err)
	}
	return tbl
}

func icebergType(t *testing.T, name string) iceberg.Type {
	switch strings.ToUpper(name) {
	case "BOOLEAN":
		return iceberg.PrimitiveTypes.Bool
	case "INTEGER":
		return iceberg.PrimitiveTypes.Int32
	case "BIGINT":
		return iceberg.PrimitiveTypes.Int64
	case "FLOAT":
		return iceberg.PrimitiveTypes.Float32
	case "DOUBLE":
		return iceberg.PrimitiveTypes.Float64
	case "DATE":
		return iceberg.PrimitiveTypes.Date
	case "TIME":
		return iceberg.PrimitiveTypes.Time
	case "TIMESTAMP":
		return iceberg.PrimitiveTypes.Timestamp
	case "TIMESTAMPTZ":
		return iceberg.PrimitiveTypes.TimestampTz
	case "TIMESTAMP_NS":
		return iceberg.PrimitiveTypes.TimestampNs
	case "VARCHAR":
		return iceberg.PrimitiveTypes.String
	case "BLOB":
		return iceberg.PrimitiveTypes.Binary
	case "UUID":
		return iceberg.PrimitiveTypes.UUID
	}
	var p, s int
	if _, err := fmt.Sscanf(name, "DECIMAL(%d,%d)", &p, &s); err == nil {
		return iceberg.DecimalTypeOf(p, s)
	}
	t.Fatalf("no Iceberg type for %s", name)
	return nil
}

// rows runs each query in DuckDB and returns its rows conformed to tbl's
// Arrow schema, in Go memory, one batch per query.
func (f *fixture) rows(tbl *table.Table, queries ...string) iter.Seq2[arrow.RecordBatch, error] {
	f.t.Helper()
	target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		f.t.Fatal(err)
	}
	var batches []arrow.RecordBatch
	for _, q := range queries {
		rdr, err := f.conn.Query(f.ctx, q, engine.QueryOptions{})
		if err != nil {
			f.t.Fatalf("%s: %v", q, err)
		}
		for rdr.Next() {
			out, err := conform.Record(memory.DefaultAllocator, rdr.RecordBatch(), target, 0)
			if err != nil {
				f.t.Fatalf("%s: %v", q, err)
			}
			cols := make([]arrow.Array, out.NumCols())
			for i, c := range out.Columns() {
				if cols[i], err = array.Concatenate([]arrow.Array{c}, memory.NewGoAllocator()); err != nil {
					f.t.Fatal(err)
				}
			}
			batches = append(batches, array.NewRecordBatch(target, cols, out.NumRows()))
			out.Release()
		}
		if err := rdr.Err(); err != nil {
			f.t.Fatalf("%s: %v", q, err)
		}
		rdr.Release()
	}
	return func(yield func(arrow.RecordBatch, error) bool) {
		for _, b := range batches {
			if !yield(b, nil) {
				return
			}
		}
	}
}

// write writes the rows of queries into tbl with Write (corrected=true)
// or iceberg-go's WriteRecords alone.
func (f *fixture) write(tbl *table.Table, corrected bool, opts []table.WriteRecordOption, queries ...string) []iceberg.DataFile {
	f.t.Helper()
	target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		f.t.Fatal(err)
	}
	// WriteRecords starts reading rows when called: call one of them.
	var seq iter.Seq2[iceberg.DataFile, error]
	if corrected {
		seq = Write(f.ctx, tbl, target, f.rows(tbl, queries...), uuid.New(), opts...)
	} else {
		seq = table.WriteRecords(f.ctx, tbl, target, f.rows(tbl, queries...), opts...)
	}
	var out []iceberg.DataFile
	for df, err := range seq {
		if err != nil {
			f.t.Fatalf("write: %v", err)
		}
		out = append(out, df)
	}
	return out
}

// commit appends files to tbl (through iceberg-go only) and returns the
// new table.
func (f *fixture) commit(tbl *table.Table, files []iceberg.DataFile) *table.Table {
	f.t.Helper()
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(f.ctx, files, nil); err != nil {
		f.t.Fatal(err)
	}
	next, err := tx.Commit(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return next
}
