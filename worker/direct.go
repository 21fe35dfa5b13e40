package worker

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/directscan"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

// Direct Parquet scans.
//
// A scan whose data files sit in a local directory the engine may read
// (engine.Options.ReadDirs) becomes a DuckDB view over read_parquet of
// those files instead of a temp table filled from iceberg-go's reader:
// DuckDB's own Parquet reader, on all of its threads, with projections and
// filters pushed into it, and nothing materialised. Columns are matched by
// Iceberg field id (read_parquet's schema map, as DuckDB's iceberg
// extension does): a column a file lacks reads NULL, an older narrower type
// is cast to the current one.
//
// Only what provably reads the same as iceberg-go goes this way; anything
// else keeps the iceberg-go path (see directFiles):
//   - whole Parquet files without delete files of any kind;
//   - top-level columns of primitive types DuckDB holds as the Arrow load
//     would (not uuid, fixed, time, nanosecond timestamps or nested types),
//     no row-lineage columns, no metadata tables;
//   - files whose footer has field ids (files added without them are read
//     through the table's name mapping by iceberg-go); a projected column
//     missing from a file must not be an identity partition source, whose
//     value iceberg-go would take from the partition tuple.
//
// A float or double column that may hold NaN (directscan.MayHoldNaN) is
// read with can_have_nan = true, or DuckDB would prune row groups on
// footer min/max that leave NaN out.
//
// With a schema map DuckDB binds read_parquet without opening a file and
// estimates it at 0 rows, which wrecks its join order (an 8-table join
// planned with a 10^12-row intermediate); the view passes the files'
// record counts from the manifests as explicit_cardinality instead
// (directscan.Rows).

// directFiles returns the local paths of the scan's files and the columns
// to read, when the direct path reads exactly what iceberg-go would.
func (s *Server) directFiles(schema *iceberg.Schema, meta table.Metadata, tasks []table.FileScanTask, columns []string) (paths []string, fields []iceberg.NestedField, ok bool) {
	fields, ok = directscan.Fields(schema, columns)
	if !ok {
		return nil, nil, false
	}
	paths, ok = directscan.Files(tasks, s.opts.Engine.CanRead)
	if !ok {
		return nil, nil, false
	}
	footers := s.fileFieldIDs(paths)
	for i, t := range tasks {
		spec := meta.PartitionSpecByID(int(t.File.SpecID()))
		if spec == nil {
			return nil, nil, false
		}
		ids := footers[paths[i]]
		if len(ids) == 0 {
			return nil, nil, false
		}
		for _, fld := range fields {
			if ann, ok := ids[fld.ID]; ok {
				if _, str := fld.Type.(iceberg.StringType); str && ann != "UTF8" {
					// An unannotated byte array would be cast from BLOB,
					// escaping non-ASCII bytes; iceberg-go reads it as text.
					return nil, nil, false
				}
				continue
			}
			for _, pf := range spec.Fields() {
				if _, identity := pf.Transform.(iceberg.IdentityTransform); identity && pf.SourceID() == fld.ID {
					return nil, nil, false
				}
			}
		}
	}
	return paths, fields, true
}

// fileFieldIDs maps each local Parquet file to the field ids in its
// footer, each with its converted type ("UTF8" for strings); a file that
// cannot be read, or has none, maps to nothing. Data files never change,
// so the answers are memoised in the worker's metadata cache (bounded by
// the memory they hold with everything else it keeps); the files not in
// the cache are read in one query.
func (s *Server) fileFieldIDs(paths []string) map[string]map[int]string {
	out := make(map[string]map[int]string, len(paths))
	var missing []string
	for _, p := range paths {
		if ids, ok := s.opts.Cache.Recall(footerKey(p)); ok {
			out[p] = ids.(map[int]string)
		} else {
			missing = append(missing, engine.QuoteString(p))
		}
	}
	if len(missing) == 0 {
		return out
	}
	ctx := context.Background()
	conn, err := s.opts.Engine.Conn(ctx)
	if err != nil {
		return out
	}
	defer conn.Close()
	rows, err := conn.DB().QueryContext(ctx,
		"SELECT file_name, field_id, coalesce(converted_type, '') FROM parquet_schema(["+strings.Join(missing, ", ")+"]) WHERE field_id IS NOT NULL")
	if err != nil {
		return out
	}
	defer rows.Close()
	read := map[string]map[int]string{}
	for rows.Next() {
		var name, conv string
		var id int
		if rows.Scan(&name, &id, &conv) != nil {
			return out
		}
		if read[name] == nil {
			read[name] = map[int]string{}
		}
		read[name][id] = conv
	}
	if rows.Err() != nil {
		return out
	}
	for _, p := range paths {
		if _, cached := out[p]; !cached {
			// A file without field ids is remembered too (as none).
			s.opts.Cache.Remember(footerKey(p), read[p])
			out[p] = read[p]
		}
	}
	return out
}

// footerKey is the memo key of a local Parquet file's field ids.
func footerKey(path string) string { return "footer\x00" + path }

// directView is the statement that makes view a view over read_parquet of
// paths (the tasks' files), reading fields by field id.
func directView(view string, paths []string, fields []iceberg.NestedField, tasks []table.FileScanTask) string {
	files := make([]string, len(paths))
	for i, p := range paths {
		files[i] = engine.QuoteString(p)
	}
	entries := make([]string, len(fields))
	cols := make([]string, len(fields))
	for i, f := range fields {
		typ, _ := directscan.DuckType(f.Type)
		// The schema map's names are internal; the view renames them to
		// the columns' own (which may be any string).
		entries[i] = fmt.Sprintf("%d: {name: 'c%d', type: '%s', default_value: NULL}", f.ID, i, typ)
		cols[i] = fmt.Sprintf("c%d AS %s", i, engine.Quote(f.Name))
	}
	nan := ""
	if directscan.MayHoldNaN(tasks, fields) {
		nan = ", can_have_nan = true"
	}
	return fmt.Sprintf("CREATE TEMP VIEW %s AS SELECT %s FROM read_parquet([%s], schema = MAP {%s}, explicit_cardinality = %d%s)",
		engine.Quote(view), strings.Join(cols, ", "), strings.Join(files, ", "), strings.Join(entries, ", "), directscan.Rows(tasks), nan)
}

// loadDirect makes sc.View a view over read_parquet of the scan's files
// and reports whether it could; false leaves the iceberg-go path to the
// caller.
func (s *Server) loadDirect(ctx context.Context, conn *engine.Conn, tbl *table.Table, schema *iceberg.Schema, tasks []table.FileScanTask, sc wire.Scan) (bool, error) {
	if len(s.opts.Engine.ReadDirs()) == 0 {
		return false, nil
	}
	tasks, err := s.localize(ctx, conn, tbl, scanName(sc), schema, tasks, sc.Columns) // cached.go
	if err != nil {
		return false, err
	}
	paths, fields, ok := s.directFiles(schema, tbl.Metadata(), tasks, sc.Columns)
	if !ok {
		return false, nil
	}
	q := directView(sc.View, paths, fields, tasks)
	if err := conn.Exec(ctx, q); err != nil {
		// DuckDB checks the files when it binds the view: one may have
		// gone since its footer was cached. iceberg-go's read then says
		// precisely what is wrong (or reads what DuckDB could not).
		for _, p := range paths {
			s.opts.Cache.Forget(footerKey(p))
		}
		return false, nil
	}
	s.directScans.Add(1)
	return true, nil
}
