package worker

import (
	"context"
	"fmt"
	"iter"
	"net/url"
	"path"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

// loadScan reads the tasks of sc with iceberg-go into a temp table of conn
// named sc.View. With no task it still creates the table, empty, with the
// schema the planner bound against.
//
// With direct, a scan the engine can read straight from local Parquet
// files becomes a view over them instead (see direct.go); rewrites, which
// drop and reload the view per file, pass false.
func (s *Server) loadScan(ctx context.Context, conn *engine.Conn, sc wire.Scan, direct bool) error {
	name := scanName(sc)
	tbl, err := s.opts.Cache.Open(ctx, strings.Split(name, "."), sc.MetadataLocation, sc.Props)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	if sc.MetadataTable != "" {
		return loadMetaTable(ctx, conn, sc, tbl)
	}
	schema, tasks, err := scanTasks(tbl, name, sc)
	if err != nil {
		return err
	}
	if direct {
		if ok, err := s.loadDirect(ctx, conn, tbl, schema, tasks, sc); ok || err != nil {
			return err
		}
	}
	rdr, done, err := s.openTasks(ctx, tbl, name, sc, schema, tasks)
	if err != nil {
		return err
	}
	defer done()
	if err := conn.LoadTable(ctx, sc.View, rdr); err != nil {
		// DuckDB reports a failed stream by its text only; the reader kept
		// the error itself.
		if rerr := rdr.Err(); rerr != nil {
			return rerr
		}
		return fmt.Errorf("%w: load %s as %s: %v", errInternal, name, sc.View, err)
	}
	// DuckDB stops pulling at the end of the stream; an error there ends
	// the stream too, so it is never taken for the end.
	return rdr.Err()
}

// scanBatchRows is the rows iceberg-go decodes per batch of a scan. Its
// reader decodes ahead: with more than one task at a time each of its
// workers holds every batch of a task until the tasks before it are read
// (a whole data file: 1 GiB for one query of 1 KiB strings over two
// workers, measured), and its default batch is 131,072 rows (128 MiB of
// such strings). One task at a time in batches of this many rows holds
// about one batch; the fragments of a query, one per group, still read
// in parallel.
const scanBatchRows = 8 << 10

// scanName is how errors name the table of a scan.
func scanName(sc wire.Scan) string {
	if sc.Table == "" {
		return sc.View
	}
	return sc.Table
}

// openScan starts reading the tasks of sc with iceberg-go. The caller
// calls done when it has finished with the reader.
func (s *Server) openScan(ctx context.Context, tbl *table.Table, name string, sc wire.Scan) (rdr array.RecordReader, done func(), err error) {
	schema, tasks, err := scanTasks(tbl, name, sc)
	if err != nil {
		return nil, nil, err
	}
	return s.openTasks(ctx, tbl, name, sc, schema, tasks)
}

// scanTasks decodes the tasks of sc with the schema they were planned
// with.
func scanTasks(tbl *table.Table, name string, sc wire.Scan) (*iceberg.Schema, []table.FileScanTask, error) {
	schema, err := snapshotSchema(tbl, sc.SnapshotID)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", errInternal, name, err)
	}
	tasks, err := decodeTasks(tbl, schema, sc.Tasks)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", errInternal, name, err)
	}
	return schema, tasks, nil
}

// openTasks is openScan of decoded tasks.
func (s *Server) openTasks(ctx context.Context, tbl *table.Table, name string, sc wire.Scan, schema *iceberg.Schema, tasks []table.FileScanTask) (rdr array.RecordReader, done func(), err error) {
	wide := catalog.WidenForFiles(schema, tasks, sc.Columns) // see projection.go
	opts := append(catalog.ScanOptions(sc.SnapshotID, readColumns(sc.Columns, wide)),
		table.WithMaxConcurrency(1), table.WithArrowBatchSize(scanBatchRows))
	if sc.RowFilter != "" {
		// A task whose Residual is nil is filtered by the scan's own row
		// filter only: without it such a task returns every row.
		filter, err := iceberg.ParseExpr([]byte(sc.RowFilter), schema)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: row filter: %v", errInternal, name, err)
		}
		opts = append(opts, table.WithRowFilter(filter))
	}
	// The planner bound the fragment against this schema; every batch must
	// have its types.
	want, err := catalog.ScanSchema(tbl, sc.SnapshotID, sc.Columns)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errInternal, err)
	}
	scan := s.cachedTable(tbl, tasks).Scan(opts...) // cached.go
	_, seq, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		scan.Close()
		return nil, nil, &readError{table: name, file: taskFiles(tasks), err: err}
	}
	if wide != nil {
		seq = dropWidened(seq, want)
	}
	r := newScanReader(name, want, tasks, seq)
	return r, func() { r.Release(); scan.Close() }, nil
}

// snapshotSchema is the schema tasks of snapshotID were planned and encoded
// with: the snapshot's own schema, or the current one for snapshot 0.
func snapshotSchema(tbl *table.Table, snapshotID int64) (*iceberg.Schema, error) {
	if snapshotID == 0 {
		return tbl.Schema(), nil
	}
	snap := tbl.SnapshotByID(snapshotID)
	if snap == nil {
		return nil, fmt.Errorf("snapshot %d not found", snapshotID)
	}
	if snap.SchemaID == nil {
		return tbl.Schema(), nil
	}
	if sc, ok := tbl.Schemas()[*snap.SchemaID]; ok {
		return sc, nil
	}
	return nil, fmt.Errorf("snapshot %d has unknown schema %d", snapshotID, *snap.SchemaID)
}

// decodeTasks decodes the encoded tasks of a scan.
func decodeTasks(tbl *table.Table, schema *iceberg.Schema, in []wire.Task) ([]table.FileScanTask, error) {
	meta := tbl.Metadata()
	out := make([]table.FileScanTask, 0, len(in))
	for i, t := range in {
		spec := meta.PartitionSpecByID(t.SpecID)
		if spec == nil {
			return nil, fmt.Errorf("task %d: unknown partition spec %d", i, t.SpecID)
		}
		task, err := codec.DecodeFileScanTask(t.Data, *spec, schema, meta.Version())
		if err != nil {
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
		out = append(out, task)
	}
	return out, nil
}

// scanReader is the array.RecordReader DuckDB pulls a scan through. It
// checks that each batch has the planned types, gives it the planned schema
// (names, nullability and metadata), skips empty batches, and keeps the
// first read error with the data file it came from.
//
// DuckDB calls Next from its own threads through cgo callbacks, where a
// coroutine (iter.Pull) may not run, so a goroutine ranges over the scan
// and hands batches over a channel.
type scanReader struct {
	refs     atomic.Int64
	table    string
	schema   *arrow.Schema
	tasks    []table.FileScanTask
	items    chan scanItem
	done     chan struct{}
	finished chan struct{}
	cur      arrow.RecordBatch
	err      error
}

type scanItem struct {
	rec arrow.RecordBatch
	err error
}

var _ array.RecordReader = (*scanReader)(nil)

func newScanReader(table string, schema *arrow.Schema, tasks []table.FileScanTask, seq iter.Seq2[arrow.RecordBatch, error]) *scanReader {
	r := &scanReader{
		table: table, schema: schema, tasks: tasks,
		items:    make(chan scanItem),
		done:     make(chan struct{}),
		finished: make(chan struct{}),
	}
	r.refs.Store(1)
	go r.produce(seq)
	return r
}

// produce sends every batch of seq, and its error if any, until seq ends or
// the reader is released.
func (r *scanReader) produce(seq iter.Seq2[arrow.RecordBatch, error]) {
	defer close(r.finished)
	defer close(r.items)
	defer func() {
		if p := recover(); p != nil {
			err := fmt.Errorf("%w: reading %s: panic: %v", errInternal, r.table, p)
			select {
			case r.items <- scanItem{err: err}:
			case <-r.done:
			}
		}
	}()
	for rec, err := range seq {
		if err != nil {
			select {
			case r.items <- scanItem{err: err}:
			case <-r.done:
			}
			return
		}
		select {
		case r.items <- scanItem{rec: rec}:
		case <-r.done:
			rec.Release()
			return
		}
	}
}

func (r *scanReader) Retain() { r.refs.Add(1) }

// Release stops the scan, waits for it to end and releases what it held
// when the last reference goes.
func (r *scanReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	close(r.done)
	for it := range r.items {
		if it.rec != nil {
			it.rec.Release()
		}
	}
	<-r.finished
}

func (r *scanReader) Schema() *arrow.Schema { return r.schema }

// Next moves to the next non-empty batch. DuckDB calls it one call at a
// time.
func (r *scanReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil {
		return false
	}
	for it := range r.items {
		if it.err != nil {
			r.err = r.readErr(it.err)
			return false
		}
		rec := it.rec
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		if err := checkTypes(r.schema, rec.Schema()); err != nil {
			rec.Release()
			r.err = fmt.Errorf("%w: scan of %s: %v", errInternal, r.table, err)
			return false
		}
		r.cur = array.NewRecordBatch(r.schema, rec.Columns(), rec.NumRows())
		rec.Release()
		return true
	}
	return false
}

func (r *scanReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated name of RecordBatch.
func (r *scanReader) Record() arrow.RecordBatch { return r.cur }

func (r *scanReader) Err() error { return r.err }

// readErr wraps a read error with the data file it names. iceberg-go does
// not say which task failed, but storage errors name the object they failed
// on (a local path, an object key), so look for a task's files in the text:
// by full location, then by path, then by base name when only one task has
// a file of that name.
func (r *scanReader) readErr(err error) error {
	if isContextErr(err) {
		return err
	}
	msg := err.Error()
	var byBase []table.FileScanTask
	for _, t := range r.tasks {
		for _, f := range taskFileNames(t) {
			if strings.Contains(msg, f) || strings.Contains(msg, locationPath(f)) {
				return &readError{table: r.table, file: t.File.FilePath(), err: err}
			}
			if strings.Contains(msg, path.Base(f)) {
				byBase = append(byBase, t)
				break
			}
		}
	}
	if len(byBase) == 1 {
		return &readError{table: r.table, file: byBase[0].File.FilePath(), err: err}
	}
	return &readError{table: r.table, file: taskFiles(r.tasks), err: err}
}

// locationPath is the path of a file location without its scheme and
// bucket, and without a leading slash: what object stores call the key and
// the tail of what a local file system reports.
func locationPath(loc string) string {
	if p, ok := catalog.LocalPath(loc); ok {
		loc = p
	} else if u, err := url.Parse(loc); err == nil && u.Scheme != "" {
		loc = u.Path
	}
	return strings.TrimPrefix(loc, "/")
}

// taskFileNames lists the data file of a task and its delete files.
func taskFileNames(t table.FileScanTask) []string {
	names := []string{t.File.FilePath()}
	for _, group := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
		for _, f := range group {
			names = append(names, f.FilePath())
		}
	}
	return names
}

// taskFiles describes the data files of tasks when the failing one is not
// known.
func taskFiles(tasks []table.FileScanTask) string {
	switch len(tasks) {
	case 0:
		return "(none)"
	case 1:
		return tasks[0].File.FilePath()
	}
	const show = 3
	var b strings.Builder
	fmt.Fprintf(&b, "(one of %d: ", len(tasks))
	for i, t := range tasks {
		if i == show {
			b.WriteString(", …")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.File.FilePath())
	}
	b.WriteString(")")
	return b.String()
}

// checkTypes reports the first column whose type differs between the
// planned schema and a batch's.
func checkTypes(want, got *arrow.Schema) error {
	if got.NumFields() != want.NumFields() {
		return fmt.Errorf("got %d columns, planned %d", got.NumFields(), want.NumFields())
	}
	for i, f := range want.Fields() {
		if g := got.Field(i).Type; !arrow.TypeEqual(f.Type, g) {
			return fmt.Errorf("column %d %q: planned type %s, got %s", i, f.Name, f.Type, g)
		}
	}
	return nil
}
