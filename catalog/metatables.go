package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
)

// ErrNoMetaTable: a "t$kind" name whose kind is not a metadata table.
var ErrNoMetaTable = errors.New("catalog: no such metadata table")

// MetaTables are the metadata tables a query can read as "t$kind".
var MetaTables = []string{"snapshots", "history", "files", "data_files", "delete_files", "manifests", "partitions", "refs", "entries", "metadata_log_entries"}

// SplitMetaTable splits "t$kind" into the table name and the metadata
// table kind; kind is "" for a name that is not a metadata table's.
func SplitMetaTable(name string) (base, kind string) {
	i := strings.LastIndexByte(name, '$')
	if i <= 0 {
		return name, ""
	}
	k := strings.ToLower(name[i+1:])
	for _, m := range MetaTables {
		if k == m {
			return name[:i], k
		}
	}
	return name, ""
}

// InspectMetaTable returns the rows of tbl's metadata table kind, read from
// tbl's pinned metadata (and, for files, manifests, partitions and entries,
// its manifests). The caller releases the reader. The planner (for the
// schema) and the worker (for the rows) both call it on the same metadata
// location, so they agree.
func InspectMetaTable(ctx context.Context, tbl *table.Table, kind string) (array.RecordReader, error) {
	in := tbl.Inspect()
	var (
		r   array.RecordReader
		err error
	)
	switch kind {
	case "snapshots":
		r, err = in.Snapshots(ctx)
	case "history":
		r, err = in.History(ctx)
	case "files":
		r, err = in.Files(ctx)
	case "data_files":
		r, err = in.DataFiles(ctx)
	case "delete_files":
		r, err = in.DeleteFiles(ctx)
	case "manifests":
		r, err = in.Manifests(ctx)
	case "partitions":
		r, err = in.Partitions(ctx)
	case "refs":
		r, err = in.Refs(ctx)
	case "entries":
		r, err = in.Entries(ctx)
	case "metadata_log_entries":
		r, err = in.MetadataLogEntries(ctx)
	default:
		return nil, fmt.Errorf("%w: %q", ErrNoMetaTable, kind)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: %s$%s: %w", tableName(tbl), kind, err)
	}
	defer r.Release()
	// iceberg-go's readers are coroutines (iter.Pull), which may not run
	// on the cgo threads DuckDB pulls from: read them here, in Go.
	// Metadata tables are small.
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("catalog: %s$%s: %w", tableName(tbl), kind, err)
	}
	out, err := array.NewRecordReader(r.Schema(), recs)
	if err != nil {
		return nil, fmt.Errorf("catalog: %s$%s: %w", tableName(tbl), kind, err)
	}
	return out, nil
}
