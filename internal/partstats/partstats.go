package partstats

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Row is the statistics of one partition.
type Row struct {
	SpecID    int32
	Partition map[int]any // by partition field id
	// Key identifies the partition (spec and values) the same way for a
	// Row read from a file and for a data file's partition (KeyOf).
	Key                              string
	DataRecords, DataBytes           int64
	DataFiles                        int32
	PosDeleteRecords, EqDeleteRecord int64
	PosDeleteFiles, EqDeleteFiles    int32
	DVs                              int32
	LastUpdatedAt, LastUpdatedSnap   int64
}

// Live is the estimate of the rows the partition holds: data records
// less position-deleted ones (equality deletes are not counted).
func (r Row) Live() int64 { return max(r.DataRecords-r.PosDeleteRecords, 0) }

// Compute aggregates the live files of snap per partition.
func Compute(ctx context.Context, tbl *table.Table, snap *table.Snapshot) ([]Row, error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	mans, err := snap.Manifests(fsys)
	if err != nil {
		return nil, fmt.Errorf("partstats: manifests of snapshot %d: %w", snap.SnapshotID, err)
	}
	ptype := UnifiedType(tbl.Metadata())
	rows := map[string]*Row{}
	var order []string
	for _, m := range mans {
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				return nil, err
			}
			df := e.DataFile()
			key, err := KeyOf(ptype, df.SpecID(), df.Partition())
			if err != nil {
				return nil, err
			}
			r, ok := rows[key]
			if !ok {
				r = &Row{SpecID: df.SpecID(), Partition: df.Partition(), Key: key}
				rows[key] = r
				order = append(order, key)
			}
			switch df.ContentType() {
			case iceberg.EntryContentData:
				r.DataRecords += df.Count()
				r.DataFiles++
				r.DataBytes += df.FileSizeBytes()
			case iceberg.EntryContentPosDeletes:
				r.PosDeleteRecords += df.Count()
				if table.IsDeletionVector(df) {
					r.DVs++
				} else {
					r.PosDeleteFiles++
				}
			case iceberg.EntryContentEqDeletes:
				r.EqDeleteRecord += df.Count()
				r.EqDeleteFiles++
			}
			if s := e.SnapshotID(); s > 0 {
				if ts := tbl.SnapshotByID(s); ts != nil && ts.TimestampMs >= r.LastUpdatedAt {
					r.LastUpdatedAt, r.LastUpdatedSnap = ts.TimestampMs, s
				}
			}
		}
	}
	out := make([]Row, len(order))
	for i, k := range order {
		out[i] = *rows[k]
	}
	return out, nil
}

// UnifiedType is the struct of every partition field of every spec of
// meta, by field id (the spec's unified partition type): the type KeyOf
// renders partitions with.
func UnifiedType(meta table.Metadata) *iceberg.StructType {
	schema := meta.CurrentSchema()
	byID := map[int]iceberg.NestedField{}
	for _, spec := range meta.PartitionSpecs() {
		for _, pf := range spec.Fields() {
			src, ok := schema.FindFieldByID(pf.SourceID())
			var typ iceberg.Type = iceberg.PrimitiveTypes.String
			if ok {
				typ = pf.Transform.ResultType(src.Type)
			}
			if _, seen := byID[pf.FieldID]; !seen {
				byID[pf.FieldID] = iceberg.NestedField{ID: pf.FieldID, Name: pf.Name, Type: typ}
			}
		}
	}
	st := &iceberg.StructType{}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		st.FieldList = append(st.FieldList, byID[id])
	}
	return st
}

// fileSchema is the partition statistics file's schema for ptype.
func fileSchema(ptype *iceberg.StructType) *iceberg.Schema {
	opt := func(id int, name string, t iceberg.Type) iceberg.NestedField {
		return iceberg.NestedField{ID: id, Name: name, Type: t}
	}
	req := func(id int, name string, t iceberg.Type) iceberg.NestedField {
		return iceberg.NestedField{ID: id, Name: name, Type: t, Required: true}
	}
	l, i := iceberg.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Int32
	return iceberg.NewSchema(0,
		req(1, "partition", ptype), req(2, "spec_id", i), req(3, "data_record_count", l), req(4, "data_file_count", i),
		req(5, "total_data_file_size_in_bytes", l), opt(6, "position_delete_record_count", l), opt(7, "position_delete_file_count", i),
		opt(8, "equality_delete_record_count", l), opt(9, "equality_delete_file_count", i), opt(10, "total_record_count", l),
		opt(11, "last_updated_at", l), opt(12, "last_updated_snapshot_id", l), opt(13, "dv_count", i))
}

// KeyOf is the key of a partition: its spec and its values as the
// partition struct of ptype renders them.
func KeyOf(ptype *iceberg.StructType, specID int32, part map[int]any) (string, error) {
	at, err := table.TypeToArrowType(ptype, false, false)
	if err != nil {
		return "", err
	}
	b := array.NewStructBuilder(memory.DefaultAllocator, at.(*arrow.StructType))
	defer b.Release()
	if err := appendPartition(b, ptype, part); err != nil {
		return "", err
	}
	arr := b.NewArray()
	defer arr.Release()
	return keyAt(specID, arr.(*array.Struct), 0), nil
}

// keyAt is the key of arr[i] in spec specID. Each field is spelled as
// "-" when NULL, else as the length of its text, ':' and the text, so no
// value (a string "null", one holding the separator) reads as another or
// as NULL.
func keyAt(specID int32, arr *array.Struct, i int) string {
	var sb strings.Builder
	sb.WriteString(strconv.Itoa(int(specID)))
	for f := 0; f < arr.NumField(); f++ {
		c := arr.Field(f)
		sb.WriteByte('|')
		if c.IsNull(i) {
			sb.WriteByte('-')
			continue
		}
		v := c.ValueStr(i)
		sb.WriteString(strconv.Itoa(len(v)))
		sb.WriteByte(':')
		sb.WriteString(v)
	}
	return sb.String()
}

// appendPartition appends one partition tuple to a struct builder of
// ptype.
func appendPartition(b *array.StructBuilder, ptype *iceberg.StructType, part map[int]any) error {
	b.Append(true)
	for i, f := range ptype.FieldList {
		if err := appendValue(b.FieldBuilder(i), part[f.ID]); err != nil {
			return fmt.Errorf("partstats: partition field %s: %w", f.Name, err)
		}
	}
	return nil
}

func appendValue(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		bb.Append(v.(bool))
	case *array.Int32Builder:
		switch x := v.(type) {
		case int32:
			bb.Append(x)
		case iceberg.Date:
			bb.Append(int32(x))
		default:
			return fmt.Errorf("value %T", v)
		}
	case *array.Int64Builder:
		bb.Append(v.(int64))
	case *array.Float32Builder:
		bb.Append(v.(float32))
	case *array.Float64Builder:
		bb.Append(v.(float64))
	case *array.StringBuilder:
		bb.Append(v.(string))
	case *array.BinaryBuilder:
		bb.Append(v.([]byte))
	case *array.Date32Builder:
		bb.Append(arrow.Date32(v.(iceberg.Date)))
	case *array.Time64Builder:
		bb.Append(arrow.Time64(v.(iceberg.Time)))
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(v.(iceberg.Timestamp)))
	case *array.Decimal128Builder:
		d := v.(iceberg.Decimal)
		bb.Append(decimal128.Num(d.Val))
	default:
		return fmt.Errorf("partition values of type %T are not supported", b)
	}
	return nil
}

// EnabledKey is the table property that makes every commit that adds a
// snapshot carry that snapshot's partition statistics (internal/commit
// writes them into the same commit).
const EnabledKey = "icefloe.partition-stats.enabled"

// Enabled says a table with meta asks for partition statistics on
// commit: EnabledKey is true and one of its specs partitions (partition
// statistics exist for partitioned tables only).
func Enabled(meta table.Metadata) bool {
	return meta.Properties().Get(EnabledKey, "false") == "true" && Partitioned(meta)
}

// Partitioned reports whether any spec of meta partitions.
func Partitioned(meta table.Metadata) bool {
	for _, spec := range meta.PartitionSpecs() {
		if spec.NumFields() > 0 {
			return true
		}
	}
	return false
}
