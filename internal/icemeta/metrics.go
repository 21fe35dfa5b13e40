package icemeta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"math"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Write writes records as data files of tbl with iceberg-go's
// table.WriteRecords (same schema and options) and yields each file with
// its column metrics corrected (Correct). It also checks that the files
// hold every row it was given: iceberg-go's partitioned writer loses the
// error of a file writer that fails after its last batch was queued
// (table/rolling_data_writer.go: RollingDataWriter.stream removes itself
// from the writer factory when it exits, so closeAll never reads its
// error), which would drop that partition's rows silently. A file that
// cannot be corrected, or missing rows, end the sequence with an error;
// the files carry the write's UUID, so the caller's cleanup of a failed
// write removes them.
func Write(ctx context.Context, tbl *table.Table, schema *arrow.Schema, records iter.Seq2[arrow.RecordBatch, error], opts ...table.WriteRecordOption) iter.Seq2[iceberg.DataFile, error] {
	return func(yield func(iceberg.DataFile, error) bool) {
		var fed atomic.Int64
		counted := func(yield func(arrow.RecordBatch, error) bool) {
			for rec, err := range records {
				if err == nil && rec != nil {
					fed.Add(rec.NumRows())
				}
				if !yield(rec, err) {
					return
				}
			}
		}
		var fsys iceio.IO
		var written int64
		files := &firstError{}
		for df, err := range table.WriteRecords(ctx, files.table(tbl), schema, counted, opts...) {
			if err != nil {
				err = files.cause(ctx, err)
			}
			if err == nil && fsys == nil {
				fsys, err = tbl.FS(ctx)
			}
			if err == nil {
				df, err = Correct(ctx, fsys, tbl.Metadata(), df)
			}
			if err == nil {
				written += df.Count()
			}
			if !yield(df, err) || err != nil {
				return
			}
		}
		if n := fed.Load(); written != n && ctx.Err() == nil {
			yield(nil, fmt.Errorf("%w: the data files hold %d of the %d rows written (a file writer failed without reporting it)", ErrLostRows, written, n))
		}
	}
}

// firstError keeps the first error a file write met, for the error
// iceberg-go's rolling writer answers in its place: once a file writer
// failed, the batches fed to it next get ErrWriterClosed (or the
// cancellation of its context), and when that ends the write the
// failure itself (ENOSPC, say) is lost with the writer
// (table/rolling_data_writer.go: RollingDataWriter.Add, then
// abortAndWait, which never reads the writer's error).
type firstError struct {
	mu  sync.Mutex
	err error
}

// table is tbl writing its files through an IO that notes their errors.
func (f *firstError) table(tbl *table.Table) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), func(ctx context.Context) (iceio.IO, error) {
		fsys, err := tbl.FS(ctx)
		if err != nil {
			return nil, err
		}
		w, ok := fsys.(iceio.WriteFileIO)
		if !ok {
			return fsys, nil
		}
		return &noteIO{WriteFileIO: w, f: f}, nil
	}, nil)
}

func (f *firstError) note(err error) error {
	if err != nil {
		f.mu.Lock()
		if f.err == nil {
			f.err = err
		}
		f.mu.Unlock()
	}
	return err
}

// cause is the error that ended a write: the first file error when
// iceberg-go answered one that only says a writer had stopped, err
// otherwise.
func (f *firstError) cause(ctx context.Context, err error) error {
	f.mu.Lock()
	first := f.err
	f.mu.Unlock()
	if first == nil || errors.Is(err, first) || ctx.Err() != nil {
		return err
	}
	if errors.Is(err, table.ErrWriterClosed) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("write a data file: %w", first)
	}
	return err
}

// noteIO is a table's IO whose written files note their errors in f.
type noteIO struct {
	iceio.WriteFileIO
	f *firstError
}

func (n *noteIO) Create(name string) (iceio.FileWriter, error) {
	w, err := n.WriteFileIO.Create(name)
	if err != nil {
		return nil, n.f.note(err)
	}
	return noteWriter{w, n.f}, nil
}

func (n *noteIO) WriteFile(name string, p []byte) error {
	return n.f.note(n.WriteFileIO.WriteFile(name, p))
}

type noteWriter struct {
	iceio.FileWriter
	f *firstError
}

func (w noteWriter) Write(p []byte) (int, error) {
	n, err := w.FileWriter.Write(p)
	return n, w.f.note(err)
}

func (w noteWriter) ReadFrom(r io.Reader) (int64, error) {
	n, err := w.FileWriter.ReadFrom(r)
	return n, w.f.note(err)
}

func (w noteWriter) Close() error { return w.f.note(w.FileWriter.Close()) }

// ErrLostRows: iceberg-go's writer returned fewer rows in its data files
// than it was given.
var ErrLostRows = errors.New("icemeta: rows lost in the write")

// Correct returns df, a Parquet data file just written for a table with
// metadata meta, with its column metrics made right from the file itself
// (read through fsys), for the top-level columns of the current schema
// whose metrics mode keeps them:
//
//   - string and binary bounds are computed here (see metricsFix.bounds):
//     iceberg-go drops an empty bound (table/internal/utils.go,
//     DataFileStatistics.ToDataFile), and takes the empty value arrow-go's
//     reader reports in place of a min or max over 4096 bytes that its
//     writer left out of the footer for the row group's bound
//     (table/internal/parquet_files.go, DataFileStatsFromMeta), which
//     gives an upper bound below the long value;
//   - any other column with values in a row group whose footer has no
//     min/max gets no bounds (iceberg-go keeps the other row groups');
//   - float and double columns get nan_value_counts, which iceberg-go
//     never writes. Float bounds themselves are right: arrow-go leaves NaN
//     out and writes a zero minimum as -0.0 and a zero maximum as +0.0.
//
// Files of other formats and delete files are returned as they are.
func Correct(ctx context.Context, fsys iceio.IO, meta table.Metadata, df iceberg.DataFile) (iceberg.DataFile, error) {
	if df.FileFormat() != iceberg.ParquetFile || df.ContentType() != iceberg.EntryContentData {
		return df, nil
	}
	cols := metricColumns(meta)
	if len(cols) == 0 {
		return df, nil
	}
	f, err := fsys.Open(df.FilePath())
	if err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", df.FilePath(), err)
	}
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("metrics of %s: %w", df.FilePath(), err)
	}
	defer rdr.Close()
	fix := metricsFix{
		lower: maps.Clone(df.LowerBoundValues()),
		upper: maps.Clone(df.UpperBoundValues()),
		nans:  maps.Clone(df.NaNValueCounts()),
	}
	index := topLevelColumns(rdr.MetaData())
	for _, c := range cols {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ci, ok := index[c.field.ID]
		if !ok {
			continue
		}
		if c.mode.kind == modeBounds {
			if err := fix.bounds(rdr, ci, c.field, c.mode); err != nil {
				return nil, fmt.Errorf("metrics of %s: bounds of %s: %w", df.FilePath(), c.field.Name, err)
			}
		}
		if isFloat(c.field.Type) {
			n, err := countNaN(rdr, ci)
			if err != nil {
				return nil, fmt.Errorf("metrics of %s: NaN count of %s: %w", df.FilePath(), c.field.Name, err)
			}
			fix.setNaN(c.field.ID, n)
		}
	}
	if !fix.changed {
		return df, nil
	}
	return Rebuild(meta, df, func(b *iceberg.DataFileBuilder) {
		b.LowerBoundValues(fix.lower).UpperBoundValues(fix.upper).NaNValueCounts(fix.nans)
	})
}

// metricColumn is a top-level column with its metrics mode.
type metricColumn struct {
	field iceberg.NestedField
	mode  metricsMode
}

// metricColumns are the top-level primitive columns of meta's current
// schema whose metrics Correct may change: those with bounds, and float
// and double columns with counts.
func metricColumns(meta table.Metadata) []metricColumn {
	var out []metricColumn
	for _, f := range meta.CurrentSchema().Fields() {
		if _, ok := f.Type.(iceberg.PrimitiveType); !ok {
			continue
		}
		m, ok := columnMode(meta.Properties(), f)
		if !ok || m.kind == modeNone || (m.kind == modeCounts && !isFloat(f.Type)) {
			continue
		}
		out = append(out, metricColumn{field: f, mode: m})
	}
	return out
}

func isFloat(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.Float32Type, iceberg.Float64Type:
		return true
	}
	return false
}

// topLevelColumns maps the field ids of a footer's top-level leaf columns
// to their column index.
func topLevelColumns(md *metadata.FileMetaData) map[int]int {
	out := map[int]int{}
	for i := range md.Schema.NumColumns() {
		col := md.Schema.Column(i)
		if len(col.ColumnPath()) != 1 {
			continue
		}
		if id := col.SchemaNode().FieldID(); id >= 0 {
			out[int(id)] = i
		}
	}
	return out
}

// metricsFix collects the corrected metric maps of one file.
type metricsFix struct {
	lower, upper map[int][]byte
	nans         map[int]int64
	changed      bool
}

// bounds checks the bounds of column ci (field f) against the file's
// row groups. A string or binary column gets bounds computed here from
// the footer's min/max (full values: arrow-go does not truncate them),
// or from the values of a row group whose footer min or max is missing
// or empty, then truncated as the mode says: arrow-go leaves out a min or
// max over 4096 bytes, and its reader then reports the other one with an
// empty value in its place (parquet/metadata,
// NewByteArrayStatisticsFromEncoded), which iceberg-go takes for the
// row group's bound.
// Any other column keeps iceberg-go's bounds unless a row group with
// values has no min/max, which leaves it without bounds.
func (m *metricsFix) bounds(rdr *file.Reader, ci int, f iceberg.NestedField, mode metricsMode) error {
	md := rdr.MetaData()
	byteArray := isByteArray(f.Type)
	var mm byteRange
	for rg := range md.NumRowGroups() {
		chunk, err := md.RowGroup(rg).ColumnChunk(ci)
		if err != nil {
			return err
		}
		stats, err := chunk.Statistics()
		if err != nil {
			return err
		}
		switch {
		case stats != nil && chunk.NumValues()-stats.NullCount() <= 0:
			continue // only nulls
		case stats != nil && stats.HasMinMax():
			ba, ok := stats.(*metadata.ByteArrayStatistics)
			if !ok || !byteArray {
				continue
			}
			if len(ba.Min()) > 0 && len(ba.Max()) > 0 {
				mm.add(ba.Min())
				mm.add(ba.Max())
				continue
			}
			// arrow-go reports min/max when only one of them is in the
			// footer, the other empty: read the values.
			if err := readByteArrayRange(rdr, rg, ci, &mm); err != nil {
				return err
			}
		case stats == nil && chunk.NumValues() == 0:
			continue
		case byteArray:
			if err := readByteArrayRange(rdr, rg, ci, &mm); err != nil {
				return err
			}
		case stats != nil && isFloat(f.Type):
			continue // only NaN (and nulls): bounds leave NaN out
		default:
			m.dropBounds(f.ID)
			return nil
		}
	}
	if !byteArray || !mm.set {
		return nil
	}
	lo, hi, hiOK := truncateBounds(f.Type, mm.min, mm.max, mode.truncate)
	if lo == nil {
		m.dropBounds(f.ID)
		return nil
	}
	m.setBound(m.lowerMap(), f.ID, lo)
	if hiOK {
		m.setBound(m.upperMap(), f.ID, hi)
	} else if _, ok := m.upper[f.ID]; ok {
		delete(m.upper, f.ID)
		m.changed = true
	}
	return nil
}

func isByteArray(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.StringType, iceberg.BinaryType:
		return true
	}
	return false
}

// byteRange is the smallest and largest of some byte strings, compared
// as unsigned bytes (Iceberg's order of strings and binaries).
type byteRange struct {
	min, max []byte
	set      bool
}

func (r *byteRange) add(v []byte) {
	switch {
	case !r.set:
		r.min, r.max, r.set = bytes.Clone(v), bytes.Clone(v), true
	case bytes.Compare(v, r.min) < 0:
		r.min = bytes.Clone(v)
	case bytes.Compare(v, r.max) > 0:
		r.max = bytes.Clone(v)
	}
}

// readByteArrayRange adds the values of byte-array column ci in row group
// rg to r.
func readByteArrayRange(rdr *file.Reader, rg, ci int, r *byteRange) error {
	cr, err := rdr.RowGroup(rg).Column(ci)
	if err != nil {
		return err
	}
	c, ok := cr.(*file.ByteArrayColumnChunkReader)
	if !ok {
		return fmt.Errorf("column %d is %T, not a byte array column", ci, cr)
	}
	buf := make([]parquet.ByteArray, 1024)
	for c.HasNext() {
		levels, read, err := c.ReadBatch(int64(len(buf)), buf, nil, nil)
		if err != nil {
			return err
		}
		if levels == 0 {
			break
		}
		for _, v := range buf[:read] {
			r.add(v)
		}
	}
	return c.Err()
}

func (m *metricsFix) lowerMap() map[int][]byte {
	if m.lower == nil {
		m.lower = map[int][]byte{}
	}
	return m.lower
}

func (m *metricsFix) upperMap() map[int][]byte {
	if m.upper == nil {
		m.upper = map[int][]byte{}
	}
	return m.upper
}

// setBound sets the bound of id in bounds to v (never a nil slice).
func (m *metricsFix) setBound(bounds map[int][]byte, id int, v []byte) {
	if b, ok := bounds[id]; ok && bytes.Equal(b, v) && (b == nil) == (v == nil) {
		return
	}
	bounds[id] = v
	m.changed = true
}

func (m *metricsFix) dropBounds(id int) {
	_, lo := m.lower[id]
	_, up := m.upper[id]
	if lo || up {
		delete(m.lower, id)
		delete(m.upper, id)
		m.changed = true
	}
}

func (m *metricsFix) setNaN(id int, n int64) {
	if old, ok := m.nans[id]; ok && old == n {
		return
	}
	if m.nans == nil {
		m.nans = map[int]int64{}
	}
	m.nans[id] = n
	m.changed = true
}

// countNaN counts the NaN values of float or double column ci.
func countNaN(rdr *file.Reader, ci int) (int64, error) {
	var n int64
	for rg := range rdr.NumRowGroups() {
		cr, err := rdr.RowGroup(rg).Column(ci)
		if err != nil {
			return 0, err
		}
		var k int64
		switch c := cr.(type) {
		case *file.Float64ColumnChunkReader:
			k, err = countChunkNaN[float64](c)
		case *file.Float32ColumnChunkReader:
			k, err = countChunkNaN[float32](c)
		default:
			err = fmt.Errorf("column %d is %T, not a float column", ci, cr)
		}
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// floatChunk is a float or double column chunk reader of arrow-go.
type floatChunk[T float32 | float64] interface {
	HasNext() bool
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (int64, int, error)
	Err() error
}

func countChunkNaN[T float32 | float64](c floatChunk[T]) (int64, error) {
	var n int64
	buf := make([]T, 4096)
	for c.HasNext() {
		levels, read, err := c.ReadBatch(int64(len(buf)), buf, nil, nil)
		if err != nil {
			return 0, err
		}
		if levels == 0 {
			break
		}
		for _, v := range buf[:read] {
			if math.IsNaN(float64(v)) {
				n++
			}
		}
	}
	return n, c.Err()
}
