// Package directscan decides which Iceberg scans DuckDB's own Parquet
// reader can read exactly as iceberg-go would: whole local Parquet files
// without delete files, top-level columns of types DuckDB holds as the
// Arrow load would. Workers read such scans as views over read_parquet
// (see worker/direct.go); the planner gathers a query whose inputs all
// qualify onto one worker that reads them itself.
//
// The checks here need only the table metadata; the worker adds the one
// that needs the files (their footers must carry field ids).
package directscan

import (
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/engine"
)

// DuckType is the DuckDB type a column of type t has when loaded from
// iceberg-go's Arrow batches (engine.TypeOf), for the types a direct scan
// handles: not uuid, fixed, time, nanosecond timestamps or nested types.
func DuckType(t iceberg.Type) (string, bool) {
	switch t.(type) {
	case iceberg.BooleanType, iceberg.Int32Type, iceberg.Int64Type, iceberg.Float32Type, iceberg.Float64Type,
		iceberg.DecimalType, iceberg.DateType, iceberg.TimestampType, iceberg.TimestampTzType,
		iceberg.StringType, iceberg.BinaryType:
		s, err := engine.TypeOf(t)
		return s, err == nil
	}
	return "", false
}

// Fields are the top-level fields of schema a scan of columns reads (all
// for nil), when every one has a DuckType and no initial default, and none
// is a row-lineage or nested column.
func Fields(schema *iceberg.Schema, columns []string) ([]iceberg.NestedField, bool) {
	var fields []iceberg.NestedField
	if columns == nil {
		fields = schema.Fields()
	} else {
		for _, c := range columns {
			f, found := schema.FindFieldByName(c)
			if !found || strings.Contains(c, ".") {
				return nil, false
			}
			fields = append(fields, f)
		}
	}
	for _, f := range fields {
		if _, ok := DuckType(f.Type); !ok || f.InitialDefault != nil {
			// A column with an initial default reads it from files that
			// lack the column; read_parquet would read NULL.
			return nil, false
		}
	}
	return fields, true
}

// Whole tells whether a task reads a whole Parquet file without delete
// files of any kind: the shape of task a direct scan reads, wherever the
// file is.
func Whole(t table.FileScanTask) bool {
	f := t.File
	return f.FileFormat() == iceberg.ParquetFile && len(t.DeleteFiles) == 0 && len(t.EqualityDeleteFiles) == 0 &&
		len(t.DeletionVectorFiles) == 0 && t.Start == 0 && t.Length == f.FileSizeBytes()
}

// Coalesce undoes iceberg-go's split of large Parquet files (over the
// table's read.split.target-size, 128 MiB by default) into byte ranges
// for the files readable says a worker reads in place: their ranges,
// consecutive and covering the file, become one whole-file task again, the
// shape a direct scan reads (Whole). DuckDB reads a file's row groups on
// all of its threads, faster than iceberg-go decodes the ranges; left
// split, such a file is never read in place. Other tasks are kept as
// they are, in order.
func Coalesce(tasks []table.FileScanTask, readable func(path string) bool) []table.FileScanTask {
	var out []table.FileScanTask
	for i := 0; i < len(tasks); {
		t := tasks[i]
		size := t.File.FileSizeBytes()
		j, end := i+1, t.Start+t.Length
		for j < len(tasks) && tasks[j].File.FilePath() == t.File.FilePath() && tasks[j].Start == end {
			end += tasks[j].Length
			j++
		}
		whole := t
		whole.Start, whole.Length = 0, size
		if j-i > 1 && t.Start == 0 && end == size && Whole(whole) && readable(t.File.FilePath()) {
			if out == nil {
				out = append(make([]table.FileScanTask, 0, len(tasks)), tasks[:i]...)
			}
			out = append(out, whole)
		} else if out != nil {
			out = append(out, tasks[i:j]...)
		}
		i = j
	}
	if out == nil {
		return tasks
	}
	return out
}

// Files returns the local paths of the tasks' files when each task is a
// whole Parquet file without delete files, readable (canRead) and listed
// once; ok is false otherwise.
func Files(tasks []table.FileScanTask, canRead func(path string) bool) (paths []string, ok bool) {
	if len(tasks) == 0 {
		return nil, false
	}
	seen := map[string]bool{}
	for _, t := range tasks {
		if !Whole(t) {
			return nil, false
		}
		p, ok := catalog.LocalPath(t.File.FilePath())
		if !ok || seen[p] || strings.ContainsAny(p, "*?[{'") || !canRead(p) {
			return nil, false
		}
		seen[p] = true
		paths = append(paths, p)
	}
	return paths, true
}

// Rows is the number of rows the tasks read, from their files' record
// counts (exact for whole files without delete files): the estimate a
// direct scan gives DuckDB's planner.
func Rows(tasks []table.FileScanTask) int64 {
	var n int64
	for _, t := range tasks {
		n += t.File.Count()
	}
	return n
}

// MayHoldNaN tells whether a float or double column among fields may hold
// NaN in one of the tasks' files: its nan_value_counts entry is not 0, or
// the file has none (writers other than icefloe may leave it out).
//
// DuckDB's Parquet reader prunes row groups, and drops filters it proves
// always true, on footer min/max, which leave NaN out while DuckDB orders
// NaN above every number: `f > 8` over a row group of 1.0, NaN and 7.0
// skips the group (and `f <= 7` keeps the NaN row). read_parquet's
// can_have_nan = true makes it count NaN into the bounds; a direct scan of
// a column that may hold NaN sets it.
func MayHoldNaN(tasks []table.FileScanTask, fields []iceberg.NestedField) bool {
	for _, f := range fields {
		switch f.Type.(type) {
		case iceberg.Float32Type, iceberg.Float64Type:
		default:
			continue
		}
		for _, t := range tasks {
			n, ok := t.File.NaNValueCounts()[f.ID]
			if !ok || n != 0 {
				return true
			}
		}
	}
	return false
}
