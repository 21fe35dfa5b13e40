package statement

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/icemeta"
	"github.com/icefloe/icefloe/internal/pqfile"
	"github.com/icefloe/icefloe/planner"
)

// rewrite_position_delete_files (Spark's procedure): per partition, the
// position delete files of the current snapshot are merged into one,
// without the deletes of data files no longer live, in one rewrite
// commit. iceberg-go v0.7.0 commits such a rewrite (RewriteFiles with
// AddDeleteFileWithDataSequenceNumber) but keeps its position delete
// writer to itself (table/writer.go: newPositionDeleteWriter), so the
// files are written here (internal/pqfile) in the spec's layout
// (file_path, pos with their field ids; sorted).

func init() {
	registerProcedure(&procedure{
		name:   "rewrite_position_delete_files",
		params: []procParam{{name: "table", kind: argString, required: true}, {name: "options", kind: argMap}},
		columns: []procColumn{{"rewritten_delete_files_count", "INTEGER"}, {"added_delete_files_count", "INTEGER"},
			{"rewritten_bytes_count", "BIGINT"}, {"added_bytes_count", "BIGINT"}},
		run: runRewritePositionDeletes,
	})
}

func runRewritePositionDeletes(ctx context.Context, e *Executor, c *procCall) ([][]any, error) {
	tgt, err := c.target(ctx, e)
	if err != nil {
		return nil, err
	}
	minFiles, all := 5, false
	for k, v := range c.options() {
		switch k {
		case "min-input-files":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%w: option min-input-files: want a positive integer, got %q", planner.ErrInvalid, v)
			}
			minFiles = n
		case "rewrite-all":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("%w: option rewrite-all: want true or false, got %q", planner.ErrInvalid, v)
			}
			all = b
		default:
			return nil, fmt.Errorf("%w: unknown option %q (known: min-input-files, rewrite-all)", planner.ErrInvalid, k)
		}
	}
	n, err := e.rewritePositionDeletes(ctx, tgt, minFiles, all)
	if err != nil {
		return nil, err
	}
	return [][]any{{n.rewritten, n.added, n.rewrittenBytes, n.addedBytes}}, nil
}

// posDeleteGroup is the position delete files of one partition.
type posDeleteGroup struct {
	files  []iceberg.DataFile
	maxSeq int64
	bytes  int64
}

// posDeleteCounts is the procedure's result row.
type posDeleteCounts struct {
	rewritten, added           int64
	rewrittenBytes, addedBytes int64
}

// rewritePositionDeletes merges the position delete files of each
// partition that has at least minFiles of them (every such partition
// when all) and commits the result once; a concurrent commit makes it
// fail (planner.ErrConflict) with nothing committed and its files deleted.
func (e *Executor) rewritePositionDeletes(ctx context.Context, tgt *planner.WriteTarget, minFiles int, all bool) (posDeleteCounts, error) {
	tbl := tgt.Pinned.Table
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return posDeleteCounts{}, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return posDeleteCounts{}, err
	}
	groups, err := positionDeleteGroups(fsys, snap)
	if err != nil {
		return posDeleteCounts{}, fmt.Errorf("delete files of %s: %w", tgt.Ref, err)
	}
	groups = slices.DeleteFunc(groups, func(g *posDeleteGroup) bool { return len(g.files) < minFiles && !all })
	if len(groups) == 0 {
		return posDeleteCounts{}, nil
	}
	if tbl.Metadata().Version() >= 3 {
		return posDeleteCounts{}, fmt.Errorf("%w: %s is a format-version 3 table, which takes deletion vectors, not position delete files: CALL system.rewrite_data_files folds its position delete files into the data", planner.ErrUnsupported, tgt.Ref)
	}
	live, err := liveDataPaths(ctx, tbl)
	if err != nil {
		return posDeleteCounts{}, err
	}
	var counts posDeleteCounts
	var written []iceberg.DataFile
	var adds []table.DeleteFileAddition
	for _, g := range groups {
		df, err := mergePositionDeletes(ctx, tbl, fsys, g, live)
		if err != nil {
			e.removeOnly(tgt, written)
			return posDeleteCounts{}, fmt.Errorf("delete files of %s: %w", tgt.Ref, err)
		}
		counts.rewritten += int64(len(g.files))
		counts.rewrittenBytes += g.bytes
		if df != nil {
			written = append(written, df)
			adds = append(adds, table.DeleteFileAddition{File: df, DataSequenceNumber: g.maxSeq})
			counts.added++
			counts.addedBytes += df.FileSizeBytes()
		}
	}
	if testHookBeforeRewriteCommit != nil {
		testHookBeforeRewriteCommit()
	}
	// The merged files were computed from this snapshot's delete files:
	// built on it alone, a concurrent commit fails the rewrite.
	err = e.commitTx(ctx, tgt, commit.Request{Pinned: true, Tx: func(tx *table.Transaction, _ table.Metadata) error {
		rw := tx.NewRewrite(nil)
		for _, g := range groups {
			for _, df := range g.files {
				rw.DeleteFile(df)
			}
		}
		for _, a := range adds {
			rw.AddDeleteFileWithDataSequenceNumber(a.File, a.DataSequenceNumber)
		}
		return rw.Commit(ctx)
	}})
	if err := e.keepOrRemove(tgt, err, written); err != nil {
		return posDeleteCounts{}, err
	}
	return counts, nil
}

// positionDeleteGroups are the live position delete files (not deletion
// vectors) of snap by partition, in a stable order.
func positionDeleteGroups(fsys iceio.IO, snap *table.Snapshot) ([]*posDeleteGroup, error) {
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return nil, err
	}
	byKey := map[string]*posDeleteGroup{}
	var keys []string
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		entries, err := m.FetchEntries(fsys, true)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			df := e.DataFile()
			if df.ContentType() != iceberg.EntryContentPosDeletes || table.IsDeletionVector(df) {
				continue
			}
			key := icemeta.PartitionKey(df)
			g := byKey[key]
			if g == nil {
				g = &posDeleteGroup{}
				byKey[key] = g
				keys = append(keys, key)
			}
			g.files = append(g.files, df)
			g.maxSeq = max(g.maxSeq, e.SequenceNum())
			g.bytes += df.FileSizeBytes()
		}
	}
	slices.Sort(keys)
	out := make([]*posDeleteGroup, len(keys))
	for i, k := range keys {
		out[i] = byKey[k]
	}
	return out, nil
}

// liveDataPaths are the paths of the current snapshot's data files.
func liveDataPaths(ctx context.Context, tbl *table.Table) (map[string]bool, error) {
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	live := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		live[t.File.FilePath()] = true
	}
	return live, nil
}

// posDelete is one row of a position delete file.
type posDelete struct {
	path string
	pos  int64
}

// mergePositionDeletes writes the rows of g's files that delete from live
// data files into one new position delete file of g's partition; nil when
// none is left.
func mergePositionDeletes(ctx context.Context, tbl *table.Table, fsys iceio.IO, g *posDeleteGroup, live map[string]bool) (iceberg.DataFile, error) {
	var rows []posDelete
	for _, df := range g.files {
		got, err := readPositionDeletes(ctx, fsys, df.FilePath())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", df.FilePath(), err)
		}
		for _, r := range got {
			if live[r.path] {
				rows = append(rows, r)
			}
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	slices.SortFunc(rows, func(a, b posDelete) int { return cmp.Or(strings.Compare(a.path, b.path), cmp.Compare(a.pos, b.pos)) })
	rows = slices.Compact(rows)
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("%w: the table's storage cannot be written", planner.ErrUnsupported)
	}
	locs, err := tbl.LocationProvider()
	if err != nil {
		return nil, err
	}
	path := locs.NewDataLocation(uuid.NewString() + "-deletes.parquet")
	size, err := writePositionDeletes(wfs, path, rows)
	if err != nil {
		return nil, err
	}
	src := g.files[0]
	spec := tbl.Metadata().PartitionSpecByID(int(src.SpecID()))
	if spec == nil {
		return nil, fmt.Errorf("partition spec %d of %s not found", src.SpecID(), src.FilePath())
	}
	b, err := iceberg.NewDataFileBuilder(*spec, iceberg.EntryContentPosDeletes, path, iceberg.ParquetFile, src.Partition(), nil, nil, int64(len(rows)), size)
	if err != nil {
		return nil, err
	}
	pathID, posID := posDeleteFieldIDs()
	first, last := rows[0], rows[len(rows)-1]
	minPos, maxPos := first.pos, first.pos
	for _, r := range rows {
		minPos, maxPos = min(minPos, r.pos), max(maxPos, r.pos)
	}
	b.LowerBoundValues(map[int][]byte{pathID: []byte(first.path), posID: binary.LittleEndian.AppendUint64(nil, uint64(minPos))}).
		UpperBoundValues(map[int][]byte{pathID: []byte(last.path), posID: binary.LittleEndian.AppendUint64(nil, uint64(maxPos))}).
		ValueCounts(map[int]int64{pathID: int64(len(rows)), posID: int64(len(rows))}).
		NullValueCounts(map[int]int64{pathID: 0, posID: 0})
	if first.path == last.path {
		b.ReferencedDataFile(first.path)
	}
	return b.Build(), nil
}

// posDeleteFieldIDs are the field ids of file_path and pos.
func posDeleteFieldIDs() (pathID, posID int) {
	f, _ := iceberg.PositionalDeleteSchema.FindFieldByName("file_path")
	g, _ := iceberg.PositionalDeleteSchema.FindFieldByName("pos")
	return f.ID, g.ID
}

// readPositionDeletes reads a position delete file's (file_path, pos) rows.
func readPositionDeletes(ctx context.Context, fsys iceio.IO, path string) ([]posDelete, error) {
	tb, err := pqfile.ReadTable(ctx, fsys, path)
	if err != nil {
		return nil, err
	}
	sc := tb.Schema()
	pathCol, posCol := sc.FieldIndices("file_path"), sc.FieldIndices("pos")
	if len(pathCol) != 1 || len(posCol) != 1 {
		tb.Release()
		return nil, fmt.Errorf("not a position delete file (columns %s)", sc)
	}
	defer tb.Release()
	paths, poss := tb.Column(pathCol[0]).Data().Chunks(), tb.Column(posCol[0]).Data().Chunks()
	var out []posDelete
	for i := range paths {
		pos, ok := poss[i].(*array.Int64)
		if !ok {
			return nil, fmt.Errorf("pos is %s, want int64", poss[i].DataType())
		}
		str, ok := paths[i].(interface{ Value(int) string })
		if !ok || paths[i].Len() != pos.Len() {
			return nil, fmt.Errorf("file_path is %s, want a string", paths[i].DataType())
		}
		for j := 0; j < pos.Len(); j++ {
			out = append(out, posDelete{str.Value(j), pos.Value(j)})
		}
	}
	return out, nil
}

// writePositionDeletes writes rows as a position delete file (the spec's
// schema with its field ids, zstd) and returns its size.
func writePositionDeletes(wfs iceio.WriteFileIO, path string, rows []posDelete) (int64, error) {
	pathID, posID := posDeleteFieldIDs()
	fieldID := func(id int) arrow.Metadata {
		return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
	}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "file_path", Type: arrow.BinaryTypes.String, Metadata: fieldID(pathID)},
		{Name: "pos", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldID(posID)},
	}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for _, r := range rows {
		rb.Field(0).(*array.StringBuilder).Append(r.path)
		rb.Field(1).(*array.Int64Builder).Append(r.pos)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	return pqfile.Write(wfs, path, rec, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)))
}
