package engine

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	bindings "github.com/duckdb/duckdb-go-bindings"
)

// Arrow streams scanned in place.
//
// Stream makes an Arrow stream a view DuckDB scans as it runs the query,
// without copying it into a table first. It goes through a table function
// of icefloe's own (streamFunction), not DuckDB's registered Arrow views
// (duckdb_arrow_scan), which are wrong in two ways that DuckDB 1.5.6 and
// 2.0.0 share (TestArrowViewBugs):
//
//   - duckdb/duckdb#17012: DuckDB assumes the stream behind a view already
//     dropped the columns and rows the query does not need. With its
//     default optimizers a query over such a view returns another
//     column's values, crashes the process, or returns rows its WHERE
//     should have removed. The table function declares projection
//     pushdown and honours it (each scan converts only the columns DuckDB
//     asks for); the C API has no filter pushdown, so DuckDB filters every
//     row itself.
//   - duckdb/duckdb#19040: a registered stream is read once across all
//     queries, so a second scan of the view (a self-join, a UNION ALL of
//     it with itself) silently sees too few rows. Here a second scan fails
//     with ErrStreamRead instead; the planner streams only views a
//     fragment reads once.
//
// Each call of the function converts at most one vector's worth of rows
// of the current batch with DuckDB's own Arrow conversion
// (duckdb_data_chunk_from_arrow, the one duckdb_arrow_scan uses) and hands
// DuckDB those vectors by reference, so DuckDB holds at most a batch of
// the stream at a time. The declared cardinality lets the optimizer order
// joins as it would over a table.

// ErrStreamRead is a second scan of a streamed view: its stream was read
// by the first.
var ErrStreamRead = errors.New("engine: a streamed view can be scanned once")

// streamFunction is the name of the table function behind streamed views.
// It takes a stream id only the connection that registered the stream can
// use; client SQL cannot call table functions at all (the planner refuses
// them).
const streamFunction = "__icefloe_stream"

// streams are the registered streams by id.
var streams sync.Map // uint64 → *streamSource

// streamSource is one registered stream: the reader DuckDB pulls, the
// connection it belongs to and the DuckDB types of its columns.
type streamSource struct {
	conn   bindings.Connection
	connID uint64
	rdr    array.RecordReader
	types  []bindings.LogicalType
	rows   int64
	// scanned is set by the first scan; a second fails.
	scanned atomic.Bool
}

// registerStreams registers the stream table function in the database of
// boot, once, before the lockdown.
func registerStreams(boot *sql.Conn) error {
	return boot.Raw(func(dc any) error {
		raw, err := rawConn(dc)
		if err != nil {
			return err
		}
		return registerStreamFunction(raw)
	})
}

// Stream creates the temp view name on c over rdr, which DuckDB pulls as
// the query that reads the view runs, from its own threads, one call at a
// time. rows is an estimate of the stream's rows for the optimizer (< 0:
// unknown). The view can be scanned once (ErrStreamRead after); the
// caller keeps rdr until c is closed, and when a query over the view
// fails, rdr's own Err says whether the stream was the cause (DuckDB
// keeps only its text).
func (c *Conn) Stream(ctx context.Context, name string, rdr array.RecordReader, rows int64) error {
	types, err := duckTypes(c.raw, rdr.Schema())
	if err != nil {
		return err
	}
	src := &streamSource{conn: c.raw, connID: connectionID(c.raw), rdr: rdr, types: types, rows: rows}
	id, err := streamID()
	if err != nil {
		destroyTypes(types)
		return err
	}
	if _, dup := streams.LoadOrStore(id, src); dup {
		destroyTypes(types)
		return errors.New("engine: stream id reused")
	}
	// The view and the scans DuckDB made of it go with the connection;
	// the source must outlive them.
	c.Hold(func() {
		streams.Delete(id)
		destroyTypes(src.types)
	})
	return c.Exec(ctx, fmt.Sprintf("CREATE TEMP VIEW %s AS SELECT * FROM %s(%d::UBIGINT)", Quote(name), streamFunction, id))
}

// streamID is a fresh random id, so no other session can guess one.
func streamID() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("engine: stream id: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

func connectionID(conn bindings.Connection) uint64 {
	var cc bindings.ClientContext
	bindings.ConnectionGetClientContext(conn, &cc)
	defer bindings.DestroyClientContext(&cc)
	return uint64(bindings.ClientContextGetConnectionId(cc))
}

func destroyTypes(types []bindings.LogicalType) {
	for i := range types {
		bindings.DestroyLogicalType(&types[i])
	}
}

// duckTypes are the DuckDB types DuckDB's Arrow conversion gives schema's
// columns: those of an empty batch converted.
func duckTypes(conn bindings.Connection, schema *arrow.Schema) ([]bindings.LogicalType, error) {
	conv, err := convertedSchema(conn, schema)
	if err != nil {
		return nil, err
	}
	defer bindings.DestroyArrowConvertedSchema(&conv)
	cols := make([]arrow.Array, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
	}
	empty := array.NewRecordBatch(schema, cols, 0)
	for _, c := range cols {
		c.Release()
	}
	defer empty.Release()
	chunk, ed := bindings.DataChunkFromArrow(conn, empty, conv)
	if err := errorData(ed); err != nil {
		return nil, fmt.Errorf("engine: arrow stream types: %w", err)
	}
	defer bindings.DestroyDataChunk(&chunk)
	out := make([]bindings.LogicalType, schema.NumFields())
	for i := range out {
		out[i] = bindings.VectorGetColumnType(bindings.DataChunkGetVector(chunk, bindings.IdxT(i)))
	}
	return out, nil
}

func convertedSchema(conn bindings.Connection, schema *arrow.Schema) (bindings.ArrowConvertedSchema, error) {
	conv, ed := bindings.SchemaFromArrow(conn, schema)
	if err := errorData(ed); err != nil {
		bindings.DestroyArrowConvertedSchema(&conv)
		return conv, fmt.Errorf("engine: arrow stream schema: %w", err)
	}
	return conv, nil
}

// rowIDColumn is the column index DuckDB asks for when a query needs no
// column but the row count (count(*)).
const rowIDColumn = ^uint64(0)

// streamScan is one scan of a stream: the columns DuckDB asked for, the
// batch being handed out and how far.
type streamScan struct {
	src *streamSource
	// cols is the stream column of each output column; -1 for a row id.
	cols []int
	// proj are the stream's columns the scan converts, in output order.
	proj   []int
	schema *arrow.Schema
	conv   bindings.ArrowConvertedSchema
	cur    arrow.RecordBatch
	off    int64
	rowID  int64
	ended  bool
}

func (s *streamSource) newScan(columns []uint64) (*streamScan, error) {
	if s.scanned.Swap(true) {
		return nil, ErrStreamRead
	}
	sc := &streamScan{src: s}
	schema := s.rdr.Schema()
	var fields []arrow.Field
	for _, c := range columns {
		if c == rowIDColumn || c >= uint64(schema.NumFields()) {
			sc.cols = append(sc.cols, -1)
			continue
		}
		sc.cols = append(sc.cols, int(c))
		sc.proj = append(sc.proj, int(c))
		fields = append(fields, schema.Field(int(c)))
	}
	sc.schema = arrow.NewSchema(fields, nil)
	if len(fields) > 0 {
		conv, err := convertedSchema(s.conn, sc.schema)
		if err != nil {
			return nil, err
		}
		sc.conv = conv
	}
	return sc, nil
}

// close releases what the scan holds; DuckDB calls it when the scan ends.
func (sc *streamScan) close() {
	if sc.cur != nil {
		sc.cur.Release()
		sc.cur = nil
	}
	bindings.DestroyArrowConvertedSchema(&sc.conv)
}

// vectorRows is how many rows DuckDB takes per call of a table function.
var vectorRows = int64(bindings.VectorSize())

// fill hands DuckDB the next rows of the stream in out: up to a vector of
// the current batch, by reference. Zero rows end the scan.
func (sc *streamScan) fill(out bindings.DataChunk) error {
	for sc.cur == nil || sc.off >= sc.cur.NumRows() {
		if sc.cur != nil {
			sc.cur.Release()
			sc.cur = nil
		}
		if sc.ended || !sc.src.rdr.Next() {
			sc.ended = true
			if err := sc.src.rdr.Err(); err != nil {
				return err
			}
			bindings.DataChunkSetSize(out, 0)
			return nil
		}
		sc.cur, sc.off = sc.src.rdr.RecordBatch(), 0
		sc.cur.Retain()
	}
	n := min(vectorRows, sc.cur.NumRows()-sc.off)
	if len(sc.proj) > 0 {
		cols := make([]arrow.Array, len(sc.proj))
		for i, c := range sc.proj {
			cols[i] = array.NewSlice(sc.cur.Column(c), sc.off, sc.off+n)
		}
		part := array.NewRecordBatch(sc.schema, cols, n)
		for _, c := range cols {
			c.Release()
		}
		chunk, ed := bindings.DataChunkFromArrow(sc.src.conn, part, sc.conv)
		part.Release()
		if err := errorData(ed); err != nil {
			return fmt.Errorf("engine: convert an arrow batch: %w", err)
		}
		k := 0
		for i, c := range sc.cols {
			if c >= 0 {
				bindings.VectorReferenceVector(bindings.DataChunkGetVector(out, bindings.IdxT(i)), bindings.DataChunkGetVector(chunk, bindings.IdxT(k)))
				k++
			}
		}
		bindings.DestroyDataChunk(&chunk)
	}
	for i, c := range sc.cols {
		if c < 0 {
			ids := unsafe.Slice((*int64)(bindings.VectorGetData(bindings.DataChunkGetVector(out, bindings.IdxT(i)))), n)
			for r := range ids {
				ids[r] = sc.rowID + int64(r)
			}
		}
	}
	sc.rowID += n
	sc.off += n
	bindings.DataChunkSetSize(out, bindings.IdxT(n))
	return nil
}

// TempDir is the engine's private spill folder, claimed for as long as
// the engine runs: other spills of the process (exchanges) go under it.
func (e *Engine) TempDir() string { return e.tempDir }
