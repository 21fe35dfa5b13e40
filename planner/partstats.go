package planner

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/partstats"
)

// Partition statistics: written into the commit of each snapshot of a
// table that asks for them (PartitionStatsKey; internal/commit) or by
// CALL system.compute_partition_stats, and read back here for the row
// estimates EXPLAIN prints.

// PartitionStatsKey is the table property that makes every commit that
// adds a snapshot carry that snapshot's partition statistics.
const PartitionStatsKey = partstats.EnabledKey

// statsCache holds partition statistics files read, by path (they never
// change), up to statsCacheEntries.
type statsCache struct {
	mu    sync.Mutex
	files map[string]map[string]partstats.Row
}

const statsCacheEntries = 256

// estimateRows estimates the rows an input's planned files hold: from the
// partition statistics of its snapshot when there are some (the
// partitions of the planned files, less position deletes), else from the
// files' record counts in the manifests.
func (p *Planner) estimateRows(ctx context.Context, in *input) (int64, string) {
	tbl := in.pinned.Table
	snap := tbl.CurrentSnapshot()
	if snap == nil || in.meta != "" {
		return 0, "0 rows"
	}
	var manifest int64
	seen := map[string]bool{}
	for _, t := range in.tasks {
		if !seen[t.File.FilePath()] {
			seen[t.File.FilePath()] = true
			manifest += t.File.Count()
		}
	}
	for f := range tbl.Metadata().PartitionStatistics() {
		if f.SnapshotID != snap.SnapshotID {
			continue
		}
		rows, err := p.readStats(ctx, tbl, f)
		if err != nil {
			break
		}
		n, parts, ok := int64(0), map[string]bool{}, true
		for _, t := range in.tasks {
			key, err := partstats.KeyOf(partstats.UnifiedType(tbl.Metadata()), t.File.SpecID(), t.File.Partition())
			if err != nil {
				ok = false
				break
			}
			if !parts[key] {
				parts[key] = true
				n += rows[key].Live()
			}
		}
		if ok {
			return n, fmt.Sprintf("~%d rows in %d partitions (partition statistics)", n, len(parts))
		}
	}
	return manifest, fmt.Sprintf("~%d rows (manifest statistics)", manifest)
}

func (p *Planner) readStats(ctx context.Context, tbl *table.Table, f table.PartitionStatisticsFile) (map[string]partstats.Row, error) {
	c := &p.stats
	c.mu.Lock()
	rows, ok := c.files[f.StatisticsPath]
	c.mu.Unlock()
	if ok {
		return rows, nil
	}
	list, err := partstats.Read(ctx, tbl, f)
	if err != nil {
		return nil, err
	}
	rows = map[string]partstats.Row{}
	for _, r := range list {
		rows[r.Key] = r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files == nil || len(c.files) >= statsCacheEntries {
		c.files = map[string]map[string]partstats.Row{}
	}
	c.files[f.StatisticsPath] = rows
	return rows, nil
}

// rowsNote is estimateRows' text.
func (p *Planner) rowsNote(ctx context.Context, in *input) string {
	_, s := p.estimateRows(ctx, in)
	return s
}
