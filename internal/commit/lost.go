package commit

import (
	"context"
	"errors"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// lostCatalog deletes what an attempt that did not commit wrote for its
// new snapshots, once the catalog (or the checks before it) said the
// attempt committed nothing: their manifest lists and the manifests they
// added, which no other attempt reuses (each attempt builds its snapshot
// anew, see Run), and with own the data and delete files those manifests
// add, for a change that writes files of its own on each attempt
// (Request.OwnFiles). Without own those files are the statement's,
// added again by the next attempt, and are left alone. Best effort: the
// attempt has failed already.
type lostCatalog struct {
	table.CatalogIO
	fs  func(context.Context) (iceio.IO, error)
	own bool
}

func (c lostCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	meta, loc, err := c.CatalogIO.CommitTable(ctx, ident, reqs, updates)
	if err != nil && (errors.Is(err, table.ErrCommitFailed) || errors.Is(err, ErrAlreadyCommitted)) {
		c.remove(ctx, updates)
	}
	return meta, loc, err
}

func (c lostCatalog) remove(ctx context.Context, updates []table.Update) {
	snaps, ok := AddedSnapshots(updates)
	if !ok || len(snaps) == 0 {
		return
	}
	fsys, err := c.fs(ctx)
	if err != nil {
		return
	}
	for _, snap := range snaps {
		if snap.ManifestList == "" {
			continue
		}
		manifests, err := snap.Manifests(fsys)
		if err != nil {
			continue
		}
		for _, mf := range manifests {
			if mf.SnapshotID() != snap.SnapshotID {
				continue // an earlier snapshot's, shared with the table
			}
			if c.own {
				for e, err := range mf.Entries(fsys, true) {
					if err == nil && e.Status() == iceberg.EntryStatusADDED && e.SnapshotID() == snap.SnapshotID {
						_ = fsys.Remove(e.DataFile().FilePath())
					}
				}
			}
			_ = fsys.Remove(mf.FilePath())
		}
		_ = fsys.Remove(snap.ManifestList)
	}
}
