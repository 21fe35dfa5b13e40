package worker

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

// loadMetaTable computes the metadata table sc names from the pinned
// metadata tbl was opened at and loads it as sc.View. The planner bound
// the fragment against the same computation on the same metadata location.
func loadMetaTable(ctx context.Context, conn *engine.Conn, sc wire.Scan, tbl *table.Table) error {
	rdr, err := catalog.InspectMetaTable(ctx, tbl, sc.MetadataTable)
	if err != nil {
		return fmt.Errorf("%w: %s$%s: %v", errInternal, sc.Table, sc.MetadataTable, err)
	}
	defer rdr.Release()
	if err := conn.LoadTable(ctx, sc.View, rdr); err != nil {
		return fmt.Errorf("%w: load %s$%s as %s: %v", errInternal, sc.Table, sc.MetadataTable, sc.View, err)
	}
	return rdr.Err()
}
