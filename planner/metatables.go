package planner

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
)

// splitMetaTable splits "t$kind" into the table and the metadata table
// kind ("" for data); see catalog.MetaTables.
func splitMetaTable(name string) (base, kind string) { return catalog.SplitMetaTable(name) }

// metaTableSchema is the schema of a metadata table, as the worker will
// produce it from the same pinned metadata. A metadata table is one input
// with no file tasks: its one group is read by one worker.
func metaTableSchema(ctx context.Context, tbl *table.Table, kind string) (*arrow.Schema, error) {
	r, err := catalog.InspectMetaTable(ctx, tbl, kind)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	return r.Schema(), nil
}
