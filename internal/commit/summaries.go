package commit

import (
	"context"
	"fmt"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/icemeta"
)

// summaryCatalog repairs the partition summaries of the manifests each
// commit's new snapshots wrote before passing the commit on: iceberg-go
// v0.7.0 writes a null bound for an empty string or binary partition
// value, which every reader takes for a manifest of nulls only
// (icemeta.RepairManifestList). The manifest list is fixed in place
// while no table metadata references it yet. A repair that fails commits
// nothing and is reported as a lost commit, so the statement's files are
// deleted.
type summaryCatalog struct {
	table.CatalogIO
	fs   func(context.Context) (iceio.IO, error)
	meta table.Metadata
}

func (c summaryCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	snaps, ok := AddedSnapshots(updates)
	if ok && len(snaps) > 0 {
		fsys, err := c.fs(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("%w: partition summaries: %w", table.ErrCommitFailed, err)
		}
		for _, snap := range snaps {
			if _, err := icemeta.RepairManifestList(ctx, fsys, c.meta, snap); err != nil {
				return nil, "", fmt.Errorf("%w: partition summaries: %w", table.ErrCommitFailed, err)
			}
		}
	}
	return c.CatalogIO.CommitTable(ctx, ident, reqs, updates)
}
