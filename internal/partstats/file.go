package partstats

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icefloe/icefloe/internal/pqfile"
)

// Write writes rows, the statistics of snap, as a partition statistics
// file in tbl's metadata folder (through tbl's IO, so an encrypted table's
// file is encrypted) and returns its metadata entry.
func Write(ctx context.Context, tbl *table.Table, snap *table.Snapshot, rows []Row) (table.PartitionStatisticsFile, error) {
	var out table.PartitionStatisticsFile
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return out, err
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return out, errors.New("partstats: the table's IO cannot write")
	}
	locs, err := tbl.LocationProvider()
	if err != nil {
		return out, err
	}
	path := locs.NewMetadataLocation(fmt.Sprintf("partition-stats-%d-%s.parquet", snap.SnapshotID, uuid.NewString()))
	ptype := UnifiedType(tbl.Metadata())
	sc, err := table.SchemaToArrowSchema(fileSchema(ptype), nil, true, false)
	if err != nil {
		return out, err
	}
	rec, err := record(sc, ptype, rows)
	if err != nil {
		return out, err
	}
	defer rec.Release()
	size, err := pqfile.Write(wfs, path, rec, nil)
	if err != nil {
		return out, err
	}
	return table.PartitionStatisticsFile{SnapshotID: snap.SnapshotID, StatisticsPath: path, FileSizeInBytes: size}, nil
}

// record builds the file's one batch.
func record(sc *arrow.Schema, ptype *iceberg.StructType, rows []Row) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		if err := appendPartition(b.Field(0).(*array.StructBuilder), ptype, r.Partition); err != nil {
			return nil, err
		}
		b.Field(1).(*array.Int32Builder).Append(r.SpecID)
		b.Field(2).(*array.Int64Builder).Append(r.DataRecords)
		b.Field(3).(*array.Int32Builder).Append(r.DataFiles)
		b.Field(4).(*array.Int64Builder).Append(r.DataBytes)
		b.Field(5).(*array.Int64Builder).Append(r.PosDeleteRecords)
		b.Field(6).(*array.Int32Builder).Append(r.PosDeleteFiles)
		b.Field(7).(*array.Int64Builder).Append(r.EqDeleteRecord)
		b.Field(8).(*array.Int32Builder).Append(r.EqDeleteFiles)
		b.Field(9).(*array.Int64Builder).AppendNull() // unknown with equality deletes
		b.Field(10).(*array.Int64Builder).Append(r.LastUpdatedAt)
		b.Field(11).(*array.Int64Builder).Append(r.LastUpdatedSnap)
		b.Field(12).(*array.Int32Builder).Append(r.DVs)
	}
	return b.NewRecordBatch(), nil
}

// Read reads a partition statistics file of tbl.
func Read(ctx context.Context, tbl *table.Table, f table.PartitionStatisticsFile) ([]Row, error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	at, err := pqfile.ReadTable(ctx, fsys, f.StatisticsPath)
	if err != nil {
		return nil, fmt.Errorf("partstats: %w", err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	var out []Row
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(name string) arrow.Array {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) == 0 {
				return nil
			}
			return rec.Column(idx[0])
		}
		part, _ := col("partition").(*array.Struct)
		spec, _ := col("spec_id").(*array.Int32)
		if part == nil || spec == nil {
			return nil, fmt.Errorf("partstats: %s is not a partition statistics file", f.StatisticsPath)
		}
		i64 := func(name string, i int) int64 {
			if a, ok := col(name).(*array.Int64); ok && !a.IsNull(i) {
				return a.Value(i)
			}
			return 0
		}
		i32 := func(name string, i int) int32 {
			if a, ok := col(name).(*array.Int32); ok && !a.IsNull(i) {
				return a.Value(i)
			}
			return 0
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, Row{SpecID: spec.Value(i), Key: keyAt(spec.Value(i), part, i),
				DataRecords: i64("data_record_count", i), DataFiles: i32("data_file_count", i),
				DataBytes: i64("total_data_file_size_in_bytes", i), PosDeleteRecords: i64("position_delete_record_count", i),
				PosDeleteFiles: i32("position_delete_file_count", i), EqDeleteRecord: i64("equality_delete_record_count", i),
				EqDeleteFiles: i32("equality_delete_file_count", i), LastUpdatedAt: i64("last_updated_at", i),
				LastUpdatedSnap: i64("last_updated_snapshot_id", i), DVs: i32("dv_count", i)})
		}
	}
	return out, tr.Err()
}
