package icemeta

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/avro/atype"
)

// Rebuild returns a copy of df with the changes edit makes to a builder
// that already holds every field of df. iceberg-go has no builder from an
// existing DataFile, so each field is copied through DataFileBuilder (the
// constructor its errors point to); the partition fields' Avro logical
// types are derived from the spec as iceberg-go's own writer derives them.
func Rebuild(meta table.Metadata, df iceberg.DataFile, edit func(*iceberg.DataFileBuilder)) (iceberg.DataFile, error) {
	spec := meta.PartitionSpecByID(int(df.SpecID()))
	if spec == nil {
		return nil, fmt.Errorf("rebuild %s: unknown partition spec %d", df.FilePath(), df.SpecID())
	}
	b, err := iceberg.NewDataFileBuilder(*spec, df.ContentType(), df.FilePath(), df.FileFormat(),
		df.Partition(), partitionLogicalTypes(*spec, meta.CurrentSchema()), nil, df.Count(), df.FileSizeBytes())
	if err != nil {
		return nil, fmt.Errorf("rebuild %s: %w", df.FilePath(), err)
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
	if m := df.DistinctValueCounts(); m != nil {
		b.DistinctValueCounts(m)
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
	if id := df.FirstRowID(); id != nil {
		b.FirstRowID(*id)
	}
	if ref := df.ReferencedDataFile(); ref != nil {
		b.ReferencedDataFile(*ref)
	}
	if off := df.ContentOffset(); off != nil {
		b.ContentOffset(*off)
	}
	if size := df.ContentSizeInBytes(); size != nil {
		b.ContentSizeInBytes(*size)
	}
	if edit != nil {
		edit(b)
	}
	return b.Build(), nil
}

// partitionLogicalTypes maps the partition fields of spec whose values
// carry an Avro logical type to it.
func partitionLogicalTypes(spec iceberg.PartitionSpec, schema *iceberg.Schema) map[int]string {
	logical := map[int]string{}
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
	return logical
}
