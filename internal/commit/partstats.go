package commit

import (
	"context"
	"errors"
	"fmt"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/partstats"
)

// statsCatalog puts the partition statistics of the snapshot a commit
// makes into that same commit, for a table that asks for them
// (partstats.EnabledKey): it computes them from the new snapshot's
// manifests (written, and repaired by summaryCatalog, before the commit
// is sent), writes the statistics file and adds its
// set-partition-statistics update after the commit's own updates. So a
// statement makes one snapshot in one metadata commit, statistics
// included, and a reader never sees the snapshot without them.
//
// A commit that did not land deletes the file it wrote. A failure to
// compute or write the statistics does not fail the commit: the rows are
// what the statement is for; it is reported to warn and the snapshot
// goes without statistics (CALL system.compute_partition_stats writes
// them later).
type statsCatalog struct {
	table.CatalogIO
	fs     func(context.Context) (iceio.IO, error)
	meta   table.Metadata // the metadata the commit is built on
	loc    string
	branch string
	warn   func(error)
}

func (c statsCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	file, err := c.stats(ctx, ident, updates)
	if err != nil && c.warn != nil {
		c.warn(err)
	}
	if file == nil {
		return c.CatalogIO.CommitTable(ctx, ident, reqs, updates)
	}
	withStats := append(updates[:len(updates):len(updates)], table.NewSetPartitionStatisticsUpdate(*file))
	meta, loc, err := c.CatalogIO.CommitTable(ctx, ident, reqs, withStats)
	if err != nil && (Lost(err) || errors.Is(err, ErrAlreadyCommitted)) {
		if fsys, ferr := c.fs(ctx); ferr == nil {
			_ = fsys.Remove(file.StatisticsPath)
		}
	}
	return meta, loc, err
}

// stats writes the partition statistics of the branch head updates add,
// when the table as committed asks for them and is partitioned; nil when
// there are none to write.
func (c statsCatalog) stats(ctx context.Context, ident table.Identifier, updates []table.Update) (*table.PartitionStatisticsFile, error) {
	if !mayWantStats(c.meta, updates) {
		return nil, nil
	}
	added, ok := AddedSnapshots(updates)
	if !ok || len(added) == 0 {
		return nil, nil
	}
	b, err := table.MetadataBuilderFromBase(c.meta, c.loc)
	if err != nil {
		return nil, err
	}
	for _, u := range updates {
		if err := u.Apply(b); err != nil {
			return nil, fmt.Errorf("partition statistics: %w", err)
		}
	}
	after, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("partition statistics: %w", err)
	}
	if !partstats.Enabled(after) {
		return nil, nil
	}
	branch := c.branch
	if branch == "" {
		branch = table.MainBranch
	}
	head := after.SnapshotByName(branch)
	if head == nil {
		return nil, nil
	}
	isNew := false
	for _, s := range added {
		isNew = isNew || s.SnapshotID == head.SnapshotID
	}
	if !isNew {
		return nil, nil
	}
	tbl := table.New(ident, after, c.loc, c.fs, nil)
	rows, err := partstats.Compute(ctx, tbl, head)
	if err != nil {
		return nil, fmt.Errorf("partition statistics of snapshot %d: %w", head.SnapshotID, err)
	}
	f, err := partstats.Write(ctx, tbl, head, rows)
	if err != nil {
		return nil, fmt.Errorf("partition statistics of snapshot %d: %w", head.SnapshotID, err)
	}
	return &f, nil
}

// mayWantStats says, without building the committed metadata, whether
// the table may ask for partition statistics once updates apply: it asks
// already, or updates set properties.
func mayWantStats(meta table.Metadata, updates []table.Update) bool {
	if meta.Properties().Get(partstats.EnabledKey, "false") == "true" {
		return true
	}
	for _, u := range updates {
		if u.Action() == table.UpdateSetProperties {
			return true
		}
	}
	return false
}
