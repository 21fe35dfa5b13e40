package catalog

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// WidenForFiles returns the columns a scan of tasks must read so that
// every data file has at least one of them, or nil when columns already
// do. iceberg-go v0.7.0 fails a file none of whose columns are projected
// ("no leaf column readers matched col indices") instead of yielding NULL
// rows: reading only a column added (or dropped and re-added) after older
// files were written hits it. For such a file the narrowest column it does
// have is added, in schema order. The caller drops the added columns from
// the batches. Files without column metrics are taken to have every
// column.
func WidenForFiles(schema *iceberg.Schema, tasks []table.FileScanTask, columns []string) []string {
	if len(columns) == 0 || len(tasks) == 0 {
		return nil
	}
	parents, err := iceberg.IndexParents(schema)
	if err != nil {
		return nil
	}
	topOf := func(id int) int {
		for {
			p, ok := parents[id]
			if !ok {
				return id
			}
			id = p
		}
	}
	projected := map[int]bool{}
	for _, name := range columns {
		if f, ok := schema.FindFieldByName(name); ok {
			projected[f.ID] = true
		}
	}
	added := map[int]bool{}
	for _, t := range tasks {
		tops := fileColumns(t.File, topOf)
		if len(tops) == 0 {
			continue
		}
		covered := false
		for id := range tops {
			if projected[id] || added[id] {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		best, bestW := -1, 1<<30
		for _, f := range schema.Fields() {
			if !tops[f.ID] {
				continue
			}
			if w := columnWidth(f.Type); w < bestW {
				best, bestW = f.ID, w
			}
		}
		if best >= 0 {
			added[best] = true
		}
	}
	if len(added) == 0 {
		return nil
	}
	var out []string
	for _, f := range schema.Fields() {
		if projected[f.ID] || added[f.ID] {
			out = append(out, f.Name)
		}
	}
	// Row-lineage columns (v3) are not schema fields; keep them.
	for _, name := range columns {
		if IsLineageColumn(name) {
			out = append(out, name)
		}
	}
	return out
}

// IsLineageColumn tells whether name is one of a v3 table's row-lineage
// metadata columns, _row_id and _last_updated_sequence_number, which a
// scan reads (or synthesizes) when they are selected by name.
func IsLineageColumn(name string) bool {
	return name == iceberg.RowIDColumnName || name == iceberg.LastUpdatedSequenceNumberColumnName
}

// fileColumns returns the top-level field ids a data file has values for,
// from its column metrics; nil when it has none.
func fileColumns(f iceberg.DataFile, topOf func(int) int) map[int]bool {
	var out map[int]bool
	for _, m := range []map[int]int64{f.ValueCounts(), f.ColumnSizes(), f.NullValueCounts()} {
		for id := range m {
			if out == nil {
				out = map[int]bool{}
			}
			out[topOf(id)] = true
		}
	}
	return out
}

// columnWidth ranks types by how cheap they are to read.
func columnWidth(t iceberg.Type) int {
	switch t.(type) {
	case iceberg.BooleanType:
		return 1
	case iceberg.Int32Type, iceberg.DateType, iceberg.Float32Type:
		return 4
	case iceberg.Int64Type, iceberg.Float64Type, iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType:
		return 8
	case iceberg.DecimalType, iceberg.UUIDType:
		return 16
	case *iceberg.StructType, *iceberg.ListType, *iceberg.MapType:
		return 1 << 20
	}
	return 64
}
