package commit

import (
	"context"
	"fmt"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/icemeta"
)

// summaryCatalog repairs what iceberg-go v0.7.0 writes wrong in the
// manifests of each commit's new snapshots before passing the commit on:
// the Avro schema of a DECIMAL(p,0) partition field lacks its scale, which
// pyiceberg cannot read (icemeta.RepairManifestSchemas), and an empty
// string or binary partition value gets a null bound, which every reader
// takes for a manifest of nulls only (icemeta.RepairManifestList). The
// files are fixed in place while no table metadata references them yet. A repair that fails commits
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
			if _, err := icemeta.RepairManifestSchemas(ctx, fsys, c.meta, snap); err != nil {
				return nil, "", fmt.Errorf("%w: manifest schemas: %w", table.ErrCommitFailed, err)
			}
			if _, err := icemeta.RepairManifestList(ctx, fsys, c.meta, snap); err != nil {
				return nil, "", fmt.Errorf("%w: partition summaries: %w", table.ErrCommitFailed, err)
			}
		}
	}
	return c.CatalogIO.CommitTable(ctx, ident, reqs, updates)
}
