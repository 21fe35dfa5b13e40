package statement

import (
	"context"
	"fmt"

	"github.com/icefloe/icefloe/planner"
)

// CALL system.compute_partition_stats writes a snapshot's partition
// statistics (planner.Planner.WritePartitionStats) and registers them in
// the table's metadata.

func init() {
	registerProcedure(&procedure{
		name:    "compute_partition_stats",
		params:  []procParam{{name: "table", kind: argString, required: true}, {name: "snapshot_id", kind: argInt}},
		columns: []procColumn{{"partition_statistics_file", "VARCHAR"}},
		run: func(ctx context.Context, e *Executor, c *procCall) ([][]any, error) {
			tgt, err := c.target(ctx, e)
			if err != nil {
				return nil, err
			}
			snap := tgt.Pinned.Table.CurrentSnapshot()
			if id, ok := c.int("snapshot_id"); ok {
				if snap = tgt.Pinned.Table.SnapshotByID(id); snap == nil {
					return nil, fmt.Errorf("%w: no snapshot %d in %s", planner.ErrNotFound, id, tgt.Ref)
				}
			}
			if !partitioned(tgt.Pinned.Table) {
				return nil, fmt.Errorf("%w: %s is not partitioned", planner.ErrInvalid, tgt.Ref)
			}
			if snap == nil {
				return nil, nil
			}
			f, err := e.writePartitionStats(ctx, tgt, snap)
			if err != nil {
				return nil, err
			}
			return [][]any{{f.StatisticsPath}}, nil
		},
	})
}
