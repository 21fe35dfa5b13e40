package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/icefloe/icefloe/internal/conform"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/icemeta"
	"github.com/icefloe/icefloe/internal/orphans"
	"github.com/icefloe/icefloe/internal/tracing"
	"github.com/icefloe/icefloe/wire"
)

// writeResultSchema is the schema of a write fragment's result stream.
var writeResultSchema = arrow.NewSchema([]arrow.Field{{Name: wire.WriteResultColumn, Type: arrow.BinaryTypes.Binary}}, nil)

// write runs a write fragment (t.Write set): it writes the fragment's rows
// as data files of the target and streams one wire.WriteResult per file.
// On any failure it deletes what it wrote, so a failed fragment leaves no
// file behind; the coordinator commits nothing either.
func (s *Server) write(ctx context.Context, conn *engine.Conn, t *wire.Ticket, stream flight.DataStreamWriter) (err error) {
	w := t.Write
	tbl, err := s.opts.Cache.Open(ctx, w.Table, w.MetadataLocation, w.Props)
	if err != nil {
		return fmt.Errorf("open %s: %w", w.Display, err)
	}
	base, err := uuid.Parse(w.WriteUUID)
	if err != nil {
		return fmt.Errorf("%w: write uuid: %v", wire.ErrMalformed, err)
	}
	target, err := table.SchemaToArrowSchema(fileSchema(tbl, w), nil, true, false)
	if err != nil {
		return fmt.Errorf("%w: arrow schema of %s: %v", errInternal, w.Display, err)
	}
	var results []wire.WriteResult
	var written []iceberg.DataFile
	defer func() {
		if err == nil {
			return
		}
		s.removeWritten(ctx, tbl, written, w.WriteUUID)
	}()
	if !w.Rewrite {
		for _, sc := range t.Scans {
			if err := s.loadScan(ctx, conn, sc, true); err != nil {
				return err
			}
		}
		if _, err := s.loadChildren(ctx, conn, t); err != nil {
			return err
		}
		query := t.SQL
		if w.Project != "" {
			cols := make([]string, w.InputColumns)
			for i := range cols {
				cols[i] = fmt.Sprintf("__c%d", i)
			}
			query = "SELECT " + w.Project + " FROM (" + t.SQL + ") AS __q(" + strings.Join(cols, ", ") + ")"
			if w.OrderBy != "" {
				query += " ORDER BY " + w.OrderBy
			}
		}
		files, err := s.writeQuery(ctx, conn, tbl, target, query, w, base)
		written = append(written, files...)
		if err != nil {
			return err
		}
		for _, df := range files {
			r, err := encodeResult(tbl, df)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
	} else {
		if len(t.Scans) == 0 {
			return fmt.Errorf("%w: a rewrite fragment has no scan", wire.ErrMalformed)
		}
		// The scans after the first are other tables the statement reads
		// in full (a MERGE's source): loaded once, as tables, for every
		// file's statements.
		for _, other := range t.Scans[1:] {
			if err := s.loadScan(ctx, conn, other, false); err != nil {
				return err
			}
		}
		sc := t.Scans[0]
		files, err := decodeByFile(tbl, sc)
		if err != nil {
			return err
		}
		for i, f := range files {
			if err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+engine.Quote(sc.View)); err != nil {
				return fmt.Errorf("%w: %v", errInternal, err)
			}
			sub := sc
			sub.Tasks = f.tasks
			if err := s.loadScan(ctx, conn, sub, false); err != nil {
				return err
			}
			affected, err := countRows(ctx, conn, w.MatchSQL)
			if err != nil {
				return err
			}
			if affected == 0 {
				continue
			}
			id := base
			id[13], id[14], id[15] = byte((i+1)>>16), byte((i+1)>>8), byte(i+1)
			out, err := s.writeQuery(ctx, conn, tbl, target, t.SQL, w, id)
			written = append(written, out...)
			if err != nil {
				return err
			}
			results = append(results, wire.WriteResult{Replaced: f.path, Affected: affected})
			for _, df := range out {
				r, err := encodeResult(tbl, df)
				if err != nil {
					return err
				}
				results = append(results, r)
			}
		}
	}
	return sendResults(ctx, s, results, stream)
}

// writeQuery runs query on conn and writes its rows as data files of tbl
// named with id. The query's columns are the target's, in order, with the
// DuckDB types of the target's types.
func (s *Server) writeQuery(ctx context.Context, conn *engine.Conn, tbl *table.Table, target *arrow.Schema, query string, w *wire.Write, id uuid.UUID) ([]iceberg.DataFile, error) {
	// DuckDB hands out chunks of 2048 rows; a partitioned writer splits
	// every batch by partition, so the stream merges them to BatchRows
	// rows (into Go memory) first, and to no more than BatchBytes: what
	// the writer holds is counted in batches (writeQueueBatches), so a
	// batch must be bounded by bytes too.
	rdr, err := conn.Query(ctx, query, engine.QueryOptions{BatchRows: s.opts.BatchRows, BatchBytes: s.opts.BatchBytes, Allocator: s.opts.Allocator})
	if err != nil {
		return nil, &queryError{err: err}
	}
	defer rdr.Release()
	// The first batch tells the row width the row groups are sized by.
	// Whoever takes it (the records below, or this function's end if
	// they never do) releases it.
	var first arrow.RecordBatch
	var firstHeld atomic.Pointer[arrow.RecordBatch]
	if rdr.Next() {
		first = rdr.RecordBatch()
		first.Retain()
		firstHeld.Store(&first)
	}
	defer func() {
		if p := firstHeld.Swap(nil); p != nil {
			(*p).Release()
		}
	}()
	copyCols := partitionStringColumns(tbl, target)
	var convErr error
	records := func(yield func(arrow.RecordBatch, error) bool) {
		fail := func(err error) {
			convErr = err
			yield(nil, err)
		}
		var seen int64
		var held arrow.RecordBatch // first, until the next batch
		defer func() {
			if held != nil {
				held.Release()
			}
		}()
		next := func() arrow.RecordBatch {
			if held != nil {
				held.Release()
				held = nil
			}
			if p := firstHeld.Swap(nil); p != nil {
				held = *p
				return held
			}
			if rdr.Next() {
				return rdr.RecordBatch()
			}
			return nil
		}
		for rec := next(); rec != nil; rec = next() {
			out, err := conform.Record(s.opts.Allocator, rec, target, seen)
			seen += rec.NumRows()
			if err == nil && len(copyCols) > 0 {
				out, err = copyColumns(out, copyCols)
			}
			if err != nil {
				fail(err)
				return
			}
			if !yield(out, nil) {
				return
			}
		}
		if err := rdr.Err(); err != nil {
			fail(err)
		}
	}
	var opts []table.WriteRecordOption
	if w.Lineage {
		opts = append(opts, table.WithPreserveRowLineage(fileSchema(tbl, w)))
	}
	if w.TargetFileSize > 0 {
		opts = append(opts, table.WithTargetFileSize(w.TargetFileSize))
	}
	// One writer goroutine: a worker already runs a fragment per slot, and
	// the rows arrive ordered by partition, so each open partition file
	// fills before the next one starts. Each open file's writer queues
	// at most writeQueueBatches batches (iceberg-go's default is 64) and
	// buffers a row group of about WriteRowGroupBytes before it is
	// flushed, so what a write holds is bounded by bytes.
	opts = append(opts, table.WithMaxWriteWorkers(1), table.WithRecordBatchBufferSize(writeQueueBatches))
	if n := rowGroupRows(first, s.opts.WriteRowGroupBytes); n > 0 {
		// The table's own write.parquet.row-group-limit stays when it is
		// smaller: the option replaces it.
		if own, err := strconv.Atoi(tbl.Properties()[table.ParquetRowGroupLimitKey]); err == nil && own > 0 {
			n = min(n, own)
		}
		opts = append(opts, table.WithParquetRowGroupLimit(n))
	}
	var files []iceberg.DataFile
	for df, err := range icemeta.Write(ctx, tbl, target, records, id, opts...) {
		if err != nil {
			if convErr != nil {
				err = convErr
			}
			if errors.Is(err, conform.ErrNotNull) || errors.Is(err, conform.ErrValue) {
				return files, &queryError{err: fmt.Errorf("write %s: %w", w.Display, err)}
			}
			if ctx.Err() != nil {
				return files, context.Cause(ctx)
			}
			return files, fmt.Errorf("write %s: %w", w.Display, err)
		}
		files = append(files, df)
	}
	return files, ctx.Err()
}

// writeQueueBatches is how many batches each open data file's writer
// queues ahead of the one it writes.
const writeQueueBatches = 2

// rowGroupRows is the row count of a row group of about bytes, for rows
// as wide as rec's (in Arrow memory; Parquet's encoded pages are as
// large or smaller); 0 when rec is nil or empty.
func rowGroupRows(rec arrow.RecordBatch, bytes int64) int {
	if rec == nil || rec.NumRows() == 0 || bytes <= 0 {
		return 0
	}
	perRow := max(util.TotalRecordSize(rec)/rec.NumRows(), 1)
	return int(max(bytes/perRow, 1))
}

// fileSchema is the schema of the files a fragment writes: the table's,
// followed by the row-lineage columns when the fragment carries them.
func fileSchema(tbl *table.Table, w *wire.Write) *iceberg.Schema {
	if w.Lineage {
		return iceberg.SchemaWithRowLineage(tbl.Schema())
	}
	return tbl.Schema()
}

// removeWritten deletes the files a failed fragment wrote: the ones it was
// told about and any other file under the table carrying its UUID
// (e.g. one a writer had open when the fragment was cancelled).
func (s *Server) removeWritten(ctx context.Context, tbl *table.Table, written []iceberg.DataFile, writeUUID string) {
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		tracing.Logger(ctx, s.log).Warn("worker: delete files of failed write", zap.Error(err))
		return
	}
	for _, df := range written {
		if rerr := fsys.Remove(df.FilePath()); rerr != nil {
			tracing.Logger(ctx, s.log).Warn("worker: delete file of failed write", zap.Error(rerr))
		}
	}
	if prefix := uuidPrefix(writeUUID); prefix != "" {
		if _, rerr := orphans.Remove(context.Background(), fsys, tbl.Location(), prefix); rerr != nil {
			tracing.Logger(ctx, s.log).Warn("worker: delete files of failed write", zap.Error(rerr))
		}
	}
}

// uuidPrefix is the part of a write UUID every file of its statement
// shares (the planner varies only the last group per fragment).
func uuidPrefix(id string) string {
	if i := strings.LastIndexByte(id, '-'); i > 0 {
		return id[:i+1]
	}
	return ""
}

func encodeResult(tbl *table.Table, df iceberg.DataFile) (wire.WriteResult, error) {
	md := tbl.Metadata()
	spec := md.PartitionSpecByID(int(df.SpecID()))
	if spec == nil {
		return wire.WriteResult{}, fmt.Errorf("%w: written file has unknown spec %d", errInternal, df.SpecID())
	}
	data, err := codec.EncodeDataFile(df, *spec, tbl.Schema(), md.Version())
	if err != nil {
		return wire.WriteResult{}, fmt.Errorf("%w: encode data file: %v", errInternal, err)
	}
	return wire.WriteResult{SpecID: int(df.SpecID()), DataFile: data, Rows: df.Count(), Bytes: df.FileSizeBytes()}, nil
}

func sendResults(ctx context.Context, s *Server, results []wire.WriteResult, stream flight.DataStreamWriter) (err error) {
	noteWritten(ctx, results)
	wr := flight.NewRecordWriter(stream, ipc.WithSchema(writeResultSchema), ipc.WithAllocator(s.opts.Allocator))
	defer func() {
		if cerr := wr.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	b := array.NewBinaryBuilder(s.opts.Allocator, arrow.BinaryTypes.Binary)
	defer b.Release()
	for _, r := range results {
		v, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b.Append(v)
	}
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(writeResultSchema, []arrow.Array{col}, int64(col.Len()))
	defer rec.Release()
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	return wr.Write(rec)
}

// fileTasks are the tasks of one data file, in scan order.
type fileTasks struct {
	path  string
	tasks []wire.Task
}

// decodeByFile groups the scan's tasks by data file.
func decodeByFile(tbl *table.Table, sc wire.Scan) ([]fileTasks, error) {
	schema, err := snapshotSchema(tbl, sc.SnapshotID)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInternal, err)
	}
	decoded, err := decodeTasks(tbl, schema, sc.Tasks)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errInternal, sc.Table, err)
	}
	var out []fileTasks
	index := map[string]int{}
	for i, task := range decoded {
		p := task.File.FilePath()
		j, ok := index[p]
		if !ok {
			j = len(out)
			index[p] = j
			out = append(out, fileTasks{path: p})
		}
		out[j].tasks = append(out[j].tasks, sc.Tasks[i])
	}
	return out, nil
}

// countRows runs a query returning one BIGINT.
func countRows(ctx context.Context, conn *engine.Conn, query string) (int64, error) {
	var n int64
	if err := conn.DB().QueryRowContext(ctx, query).Scan(&n); err != nil {
		return 0, &queryError{err: err}
	}
	return n, nil
}

// partitionStringColumns are the indexes of the string and binary columns
// the partition spec reads. iceberg-go keeps partition values as Go
// strings that may alias the batch's buffers, and DuckDB's buffers are C
// memory freed when the batch is released: such columns are copied into
// Go memory first, or the manifests would record garbage.
func partitionStringColumns(tbl *table.Table, target *arrow.Schema) []int {
	spec := tbl.Spec()
	schema := tbl.Schema()
	var out []int
	for _, pf := range spec.Fields() {
		name, ok := schema.FindColumnName(pf.SourceID())
		if !ok {
			continue
		}
		for _, i := range target.FieldIndices(name) {
			switch target.Field(i).Type.ID() {
			case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY, arrow.STRING_VIEW, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY, arrow.EXTENSION:
				if !slices.Contains(out, i) {
					out = append(out, i)
				}
			}
		}
	}
	return out
}

// copyColumns returns rec with the columns cols copied into Go memory; it
// releases rec.
func copyColumns(rec arrow.RecordBatch, cols []int) (arrow.RecordBatch, error) {
	defer rec.Release()
	arrs := slices.Clone(rec.Columns())
	var made []arrow.Array
	defer func() {
		for _, a := range made {
			a.Release()
		}
	}()
	for _, i := range cols {
		c, err := array.Concatenate([]arrow.Array{arrs[i]}, memory.NewGoAllocator())
		if err != nil {
			return nil, err
		}
		made = append(made, c)
		arrs[i] = c
	}
	return array.NewRecordBatch(rec.Schema(), arrs, rec.NumRows()), nil
}
