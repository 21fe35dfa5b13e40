package planner

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/avro/atype"
)

// Row lineage of worker-written files (format version 3).
//
// A v3 table numbers its rows: each data file's rows take the ids
// first_row_id, first_row_id+1, … and the table's next-row-id says where
// the next snapshot's ids start. Java and pyiceberg leave first_row_id
// null on added files and let the manifest list assign it; iceberg-go
// v0.7.0's AddDataFiles and ReplaceDataFilesWithDataFiles instead refuse a
// pre-written file without one. Workers cannot know it (it depends on
// every commit before ours), so the coordinator sets it when it commits:
// consecutive ranges from the next-row-id of the table the transaction
// starts from, which are exactly the ids the snapshot claims. The ranges
// are recomputed from the fresh table on every attempt, and iceberg-go's
// own refresh-and-replay (which would keep stale ids) is switched off for
// such commits (see commitFiles).

// withFirstRowIDs returns files with first_row_id assigned in order from
// meta's next-row-id, for a v3 table; for older versions files as they are.
func withFirstRowIDs(meta table.Metadata, files []iceberg.DataFile) ([]iceberg.DataFile, error) {
	if meta.Version() < 3 {
		return files, nil
	}
	out := make([]iceberg.DataFile, len(files))
	next := meta.NextRowID()
	for i, df := range files {
		nf, err := withFirstRowID(meta, df, next)
		if err != nil {
			return nil, err
		}
		out[i] = nf
		next += df.Count()
	}
	return out, nil
}

// withFirstRowID rebuilds df with first_row_id id. iceberg-go has no
// builder from an existing DataFile, so every field is copied through
// DataFileBuilder (the constructor its error message points to); the
// partition fields' Avro logical types are derived from the spec as
// iceberg-go's own writer derives them.
func withFirstRowID(meta table.Metadata, df iceberg.DataFile, id int64) (iceberg.DataFile, error) {
	if df.ContentType() != iceberg.EntryContentData {
		return nil, fmt.Errorf("first_row_id of %s: not a data file", df.FilePath())
	}
	spec := meta.PartitionSpecByID(int(df.SpecID()))
	if spec == nil {
		return nil, fmt.Errorf("first_row_id of %s: unknown partition spec %d", df.FilePath(), df.SpecID())
	}
	logical := map[int]string{}
	schema := meta.CurrentSchema()
	for _, pf := range spec.Fields() {
		src, ok := schema.FindFieldByID(pf.SourceID())
		if !ok {
			continue
		}
		switch pf.Transform.ResultType(src.Type).(type) {
		case iceberg.DateType:
			logical[pf.FieldID] = atype.Date
		case iceberg.TimeType:
			logical[pf.FieldID] = atype.TimeMicros
		case iceberg.TimestampType, iceberg.TimestampTzType:
			logical[pf.FieldID] = atype.TimestampMicros
		case iceberg.DecimalType:
			logical[pf.FieldID] = atype.Decimal
		case iceberg.UUIDType:
			logical[pf.FieldID] = atype.UUID
		}
	}
	b, err := iceberg.NewDataFileBuilder(*spec, df.ContentType(), df.FilePath(), df.FileFormat(),
		df.Partition(), logical, nil, df.Count(), df.FileSizeBytes())
	if err != nil {
		return nil, fmt.Errorf("first_row_id of %s: %w", df.FilePath(), err)
	}
	if m := df.ColumnSizes(); m != nil {
		b.ColumnSizes(m)
	}
	if m := df.ValueCounts(); m != nil {
		b.ValueCounts(m)
	}
	if m := df.NullValueCounts(); m != nil {
		b.NullValueCounts(m)
	}
	if m := df.NaNValueCounts(); m != nil {
		b.NaNValueCounts(m)
	}
	if m := df.LowerBoundValues(); m != nil {
		b.LowerBoundValues(m)
	}
	if m := df.UpperBoundValues(); m != nil {
		b.UpperBoundValues(m)
	}
	if k := df.KeyMetadata(); k != nil {
		b.KeyMetadata(k)
	}
	if s := df.SplitOffsets(); s != nil {
		b.SplitOffsets(s)
	}
	if ids := df.EqualityFieldIDs(); len(ids) > 0 {
		b.EqualityFieldIDs(ids)
	}
	if so := df.SortOrderID(); so != nil {
		b.SortOrderID(*so)
	}
	b.FirstRowID(id)
	return b.Build(), nil
}
