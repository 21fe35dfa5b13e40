package catalog

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"
)

// ScanOptions returns the iceberg-go scan options that read snapshotID of
// a table projected to columns: every column when columns is empty, the
// current schema and snapshot when snapshotID is 0. The planner and the
// workers build their scans with it so both see one schema.
func ScanOptions(snapshotID int64, columns []string) []table.ScanOption {
	var opts []table.ScanOption
	if len(columns) > 0 {
		opts = append(opts, table.WithSelectedFields(columns...))
	}
	if snapshotID != 0 {
		opts = append(opts, table.WithSnapshotID(snapshotID))
	}
	return opts
}

// ScanSchema returns the Arrow schema of the batches that iceberg-go's
// ReadTasks yields for a scan built with ScanOptions(snapshotID, columns),
// without reading any file, so also for a table with no snapshot. Columns
// come in the table schema's order, not in the order of columns.
//
// It mirrors what ReadTasks does to find its result schema: the scan's
// projection converted with the scan's large-type option and the table's
// properties. Its tests compare it with a real ReadTasks.
func ScanSchema(tbl *table.Table, snapshotID int64, columns []string) (*arrow.Schema, error) {
	scan := tbl.Scan(ScanOptions(snapshotID, columns)...)
	proj, err := scan.Projection()
	if err != nil {
		return nil, fmt.Errorf("catalog: projection of %s: %w", tableName(tbl), err)
	}
	// ScanOptions never sets table.ScanOptionArrowUseLargeTypes, so the
	// scan reads with regular (not large) string and binary types.
	sc, err := table.SchemaToArrowSchemaWithOptions(proj, table.ArrowSchemaOptions{
		TableProperties: tbl.Properties(),
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: arrow schema of %s: %w", tableName(tbl), err)
	}
	return sc, nil
}

func tableName(tbl *table.Table) string { return strings.Join(tbl.Identifier(), ".") }
