package planner

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/icefloe/icefloe/internal/partstats"
	"github.com/icefloe/icefloe/internal/tracing"
)

// Partition statistics: written on commit when a table asks for them
// (PartitionStatsKey) or by CALL system.compute_partition_stats (package
// statement, through WritePartitionStats), and read
// back for the row estimates EXPLAIN prints.

// PartitionStatsKey is the table property that makes every commit that
// adds a snapshot write that snapshot's partition statistics.
const PartitionStatsKey = "icefloe.partition-stats.enabled"

// WritePartitionStats computes and writes snap's partition statistics and
// registers them in the table's metadata.
func (p *Planner) WritePartitionStats(ctx context.Context, tgt *WriteTarget, snap *table.Snapshot) (table.PartitionStatisticsFile, error) {
	tbl := tgt.Pinned.Table
	rows, err := partstats.Compute(ctx, tbl, snap)
	if err != nil {
		return table.PartitionStatisticsFile{}, err
	}
	f, err := partstats.Write(ctx, tbl, snap, rows)
	if err != nil {
		return f, err
	}
	err = p.CommitMeta(ctx, tgt, func(*table.Table) ([]table.Requirement, []table.Update, error) {
		return nil, []table.Update{table.NewSetPartitionStatisticsUpdate(f)}, nil
	})
	if err != nil {
		if fsys, ferr := tbl.FS(ctx); ferr == nil {
			_ = fsys.Remove(f.StatisticsPath)
		}
	}
	return f, err
}

// afterCommit writes the partition statistics of the snapshot a commit
// made, when the table asks for them. A failure is logged, not returned:
// the statement's commit has landed.
func (p *Planner) afterCommit(ctx context.Context, tgt *WriteTarget, before table.Metadata, committed *table.Table) {
	if committed == nil || committed.Properties().Get(PartitionStatsKey, "false") != "true" || !Partitioned(committed) {
		return
	}
	branch := tgt.Branch
	if branch == "" {
		branch = table.MainBranch
	}
	snap := committed.SnapshotByName(branch)
	if snap == nil || before.SnapshotByID(snap.SnapshotID) != nil {
		return // no new snapshot
	}
	fresh, err := p.opts.Mounts.LoadTable(ctx, tgt.Ref)
	if err == nil {
		_, err = p.WritePartitionStats(ctx, &WriteTarget{Ref: tgt.Ref, mount: tgt.mount, Pinned: fresh}, snap)
	}
	if err != nil {
		tracing.Logger(ctx, p.log).Warn("planner: write partition statistics", zap.String("table", tgt.Ref.String()), zap.Int64("snapshot", snap.SnapshotID), zap.Error(err))
	}
}

// Partitioned reports whether any spec of tbl partitions (partition
// statistics exist for partitioned tables only).
func Partitioned(tbl *table.Table) bool {
	for _, spec := range tbl.Metadata().PartitionSpecs() {
		if spec.NumFields() > 0 {
			return true
		}
	}
	return false
}

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
