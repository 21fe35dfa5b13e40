package statement

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/conform"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/icemeta"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// INSERT: VALUES runs into a stand-in of the table in the coordinator's
// DuckDB and is written and committed here; a query is planned as any
// other, each of its endpoints becomes a write fragment on the workers,
// and the files they write are committed in one snapshot.

// alloc allocates the Arrow data INSERT builds; tests swap in a checked
// allocator.
var alloc memory.Allocator = memory.DefaultAllocator

func init() { runsWithParams(parse.KindInsert, (*Executor).insert) }

// insert runs an INSERT, once per parameter row (none: once without
// values). INSERT … VALUES writes all rows in one commit; INSERT … SELECT
// commits once per row.
func (e *Executor) insert(ctx context.Context, sess planner.Session, ins *parse.Insert, b *params) (int64, error) {
	if ins.Query != nil {
		return e.insertQueryRows(ctx, sess, ins.Name, ins.Columns, ins.Query, b)
	}
	columns := ""
	if ins.Columns != nil {
		columns = "(" + planner.QuotedNames(ins.Columns) + ")"
	}
	return e.insertValues(ctx, sess, ins.Name, columns, ins.Values, b)
}

// insertQueryRows runs INSERT … SELECT once per parameter row.
func (e *Executor) insertQueryRows(ctx context.Context, sess planner.Session, parts, cols []string, query *parse.Statement, b *params) (int64, error) {
	rows, err := b.values()
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return e.insertQuery(ctx, sess, parts, cols, query)
	}
	var total int64
	for i, row := range rows {
		n, err := e.insertQuery(ctx, sess, parts, cols, query, row...)
		if err != nil {
			return total, rowError(i, len(rows), err)
		}
		total += n
	}
	return total, nil
}

// insertValues runs INSERT INTO parts columns values into a stand-in of
// the table in the coordinator's DuckDB, for every parameter row, and then
// writes and commits the stand-in's rows once. DuckDB casts the values to
// the columns' types and enforces NOT NULL; an error names the parameter
// row.
func (e *Executor) insertValues(ctx context.Context, sess planner.Session, parts []string, columns, values string, b *params) (int64, error) {
	// LoadTarget resolves t.branch_b and the session's WAP branch, so the
	// rows commit to the branch the statement names; a caller without
	// INSERT is denied before any parameter row is read.
	tgt, err := e.LoadTarget(ctx, sess, parts, authz.Insert)
	if err != nil {
		return 0, err
	}
	ref := tgt.Ref
	tbl := tgt.Pinned.Table
	target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return 0, fmt.Errorf("arrow schema of %s: %w", ref, err)
	}
	conn, err := e.opts.Engine.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	standIn, err := planner.CreateStandIn(ctx, conn, ref, tbl.Schema(), true)
	if err != nil {
		return 0, err
	}
	// DuckDB checks that the client's text is one VALUES list, and then
	// that the INSERT it ends is one INSERT statement.
	if err := planner.CheckValues(ctx, conn, values, e.opts.MaxValueBytes); err != nil {
		return 0, err
	}
	if err := fillStandIn(ctx, conn, "INSERT INTO "+standIn+" "+columns, values, b); err != nil {
		return 0, err
	}
	read := "SELECT * FROM " + standIn
	if order := planner.PartitionOrder(tbl); order != "" && b.len() > 1 {
		read += " ORDER BY " + order
	}
	recs, n, err := readStandIn(ctx, conn, ref, read, target)
	defer releaseBatches(recs)
	if err != nil || n == 0 {
		return 0, err
	}
	// Written here, committed as INSERT … SELECT commits: one snapshot,
	// retried against the refreshed table on conflict.
	return e.commitValues(ctx, tgt, target, recs, n)
}

// fillStandIn runs into (INSERT INTO stand-in [(columns)]) with values,
// the checked VALUES clause, once without parameters, or for every
// parameter row: in one statement over a table of the client's parameter
// batches when the clause is one row (planner.ValuesSelect), and otherwise, or
// when that fails, once per row through one prepared statement, which
// finds the row an error is in.
func fillStandIn(ctx context.Context, conn *engine.Conn, into, values string, b *params) error {
	insert := into + " " + values
	if b.len() == 0 {
		if err := conn.ExecChecked(ctx, duckdb.STATEMENT_TYPE_INSERT, insert); err != nil {
			return planner.DuckError(ctx, err)
		}
		return nil
	}
	if len(b.recs) > 0 && b.len() > 1 {
		if ok, err := insertAll(ctx, conn, into, values, b.recs); ok || err != nil {
			return err
		}
	}
	rows, err := b.values()
	if err != nil {
		return err
	}
	return conn.Prepared(ctx, duckdb.STATEMENT_TYPE_INSERT, insert, func(st *duckdb.Stmt) error {
		for i, row := range rows {
			dargs, err := planner.DriverArgs(row)
			if err != nil {
				return rowError(i, len(rows), err)
			}
			named := make([]driver.NamedValue, len(dargs))
			for j, a := range dargs {
				named[j] = driver.NamedValue{Ordinal: j + 1, Value: a}
			}
			if _, err := st.ExecContext(ctx, named); err != nil {
				return rowError(i, len(rows), planner.DuckError(ctx, err))
			}
		}
		return nil
	})
}

// readStandIn reads the stand-in's rows as batches of the table's Arrow
// schema; the caller releases them (also on error).
func readStandIn(ctx context.Context, conn *engine.Conn, ref catalog.TableRef, query string, target *arrow.Schema) ([]arrow.RecordBatch, int64, error) {
	rdr, err := conn.Query(ctx, query, engine.QueryOptions{BatchRows: 64 << 10, Allocator: alloc})
	if err != nil {
		return nil, 0, fmt.Errorf("insert into %s: read stand-in: %w", ref, err)
	}
	defer rdr.Release()
	var (
		recs []arrow.RecordBatch
		rows int64
	)
	for rdr.Next() {
		rec, err := conformRecord(rdr.RecordBatch(), target, rows)
		if err != nil {
			return recs, 0, fmt.Errorf("insert into %s: %w", ref, err)
		}
		recs = append(recs, rec)
		rows += rec.NumRows()
	}
	if err := rdr.Err(); err != nil {
		return recs, 0, fmt.Errorf("insert into %s: read stand-in: %w", ref, err)
	}
	return recs, rows, nil
}

// paramsTable is the temp table insertAll loads the parameter rows into;
// its columns are named $1, $2, ….
const paramsTable = "__icefloe_params"

// insertAll inserts every parameter row with one INSERT … SELECT over a
// table of the batches: the VALUES row's expressions as DuckDB parsed
// them, each placeholder $n read from the column $n (planner.ValuesSelect). ok is
// false (and nothing was inserted) when the clause is not one row with
// placeholders, the batches hold a type DuckDB would not read as the
// row-by-row binding does, or the statement fails; the caller then inserts
// row by row.
func insertAll(ctx context.Context, conn *engine.Conn, into, values string, recs []arrow.RecordBatch) (ok bool, err error) {
	schema := recs[0].Schema()
	fields := make([]arrow.Field, schema.NumFields())
	for i, f := range schema.Fields() {
		if !bulkParamTypes[f.Type.ID()] {
			return false, nil
		}
		fields[i] = arrow.Field{Name: fmt.Sprintf("$%d", i+1), Type: f.Type, Nullable: true}
	}
	sel, n, err := planner.ValuesSelect(ctx, conn, values, paramsTable, len(fields))
	if err != nil || sel == "" {
		return false, err
	}
	if n != len(fields) {
		return false, fmt.Errorf("%w: the statement has %d parameters, %d values were bound", planner.ErrInvalid, n, len(fields))
	}
	named := arrow.NewSchema(fields, nil)
	batches := make([]arrow.RecordBatch, 0, len(recs))
	defer func() { releaseBatches(batches) }()
	for _, r := range recs {
		if !r.Schema().Equal(schema) {
			return false, nil
		}
		batches = append(batches, array.NewRecordBatch(named, r.Columns(), r.NumRows()))
	}
	rdr, err := array.NewRecordReader(named, batches)
	if err != nil {
		return false, err
	}
	defer rdr.Release()
	if err := conn.LoadTable(ctx, paramsTable, rdr); err != nil {
		return false, nil
	}
	defer conn.Exec(ctx, "DROP TABLE IF EXISTS "+paramsTable)
	err = conn.ExecChecked(ctx, duckdb.STATEMENT_TYPE_INSERT, into+" "+sel)
	if err != nil && ctx.Err() != nil {
		return false, ctx.Err()
	}
	return err == nil, nil
}

func releaseBatches(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// bulkParamTypes are the parameter types insertAll loads into DuckDB:
// those DuckDB reads from Arrow as the values the row-by-row binding
// (planner.DriverArgs) gives it.
var bulkParamTypes = map[arrow.Type]bool{
	arrow.NULL: true, arrow.BOOL: true,
	arrow.INT8: true, arrow.INT16: true, arrow.INT32: true, arrow.INT64: true,
	arrow.UINT8: true, arrow.UINT16: true, arrow.UINT32: true, arrow.UINT64: true,
	arrow.FLOAT32: true, arrow.FLOAT64: true, arrow.DECIMAL128: true,
	arrow.STRING: true, arrow.LARGE_STRING: true, arrow.BINARY: true, arrow.LARGE_BINARY: true,
	arrow.DATE32: true, arrow.TIME32: true, arrow.TIME64: true, arrow.TIMESTAMP: true,
}

// conformRecord turns a batch read from the stand-in into a batch of
// the table's Arrow schema (internal/conform); a NULL in a NOT NULL column
// or a value that does not fit is the client's mistake. The caller
// releases the result.
func conformRecord(rec arrow.RecordBatch, target *arrow.Schema, firstRow int64) (arrow.RecordBatch, error) {
	out, err := conform.Record(alloc, rec, target, firstRow)
	if errors.Is(err, conform.ErrNotNull) || errors.Is(err, conform.ErrValue) {
		return nil, fmt.Errorf("%w: %w", planner.ErrInvalid, err)
	}
	return out, err
}

// insertQuery runs INSERT INTO parts [(cols)] query.
func (e *Executor) insertQuery(ctx context.Context, sess planner.Session, parts, cols []string, query *parse.Statement, args ...any) (int64, error) {
	tgt, err := e.LoadTarget(ctx, sess, parts, authz.Insert)
	if err != nil {
		return 0, err
	}
	return e.insertSelect(ctx, sess, tgt, cols, query, args...)
}

// insertSelect runs INSERT INTO target [(cols)] query: the query is
// planned as any other, each of its endpoints becomes a write fragment, and
// the files they write are committed in one snapshot.
func (e *Executor) insertSelect(ctx context.Context, sess planner.Session, tgt *planner.WriteTarget, cols []string, query *parse.Statement, args ...any) (int64, error) {
	res, err := e.writeSelect(ctx, sess, tgt, cols, query, args...)
	if err != nil {
		return 0, err
	}
	return e.finishAppend(ctx, tgt, res)
}

// commitValues writes the rows of INSERT … VALUES on the coordinator and
// commits them as finishAppend does. recs stay owned by the caller.
func (e *Executor) commitValues(ctx context.Context, tgt *planner.WriteTarget, target *arrow.Schema, recs []arrow.RecordBatch, rows int64) (int64, error) {
	if err := e.Authorize(ctx, authz.TableObject(tgt.Ref), authz.Insert); err != nil {
		return 0, err
	}
	if d := planner.DryRunOf(ctx); d != nil {
		d.Note("write", "the coordinator writes the %d rows of VALUES as Parquet files of %s", rows, tgt.Ref)
		return 0, d.Commit("append: the written files are added in one snapshot")
	}
	w := e.NewWrite(tgt)
	id := uuid.MustParse(planner.FragmentUUID(w.WriteUUID, 0))
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for _, r := range recs {
			r.Retain()
			if !yield(r, nil) {
				return
			}
		}
	}
	res := &writeResults{Rows: rows}
	for df, err := range icemeta.Write(ctx, tgt.Pinned.Table, target, seq, id, table.WithMaxWriteWorkers(1)) {
		if err != nil {
			e.removeFiles(ctx, tgt, w.WriteUUID, res.Added)
			return 0, fmt.Errorf("insert into %s: write: %w", tgt.Ref, err)
		}
		res.Added = append(res.Added, df)
	}
	return e.finishAppend(ctx, tgt, res)
}
