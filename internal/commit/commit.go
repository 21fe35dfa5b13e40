package commit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/orphans"
)

// DefaultRetries is the commit.retry.num-retries that CREATE TABLE sets
// and that a commit uses on tables that do not set it (iceberg-go's own
// default is 0: no retry on a conflicting commit).
const DefaultRetries = 4

// prepare returns tbl set up for one attempt of a commit: the statement's
// id is recorded, a lost race's metadata file is removed and so are the
// manifests it wrote (lostCatalog; with ownFiles also the files its
// change wrote), the attempt is counted in stats (tries counts the
// attempts of one commit) and the partition summaries of new manifests
// are repaired (summaryCatalog), and the partition statistics of the
// new snapshot join the commit when the table asks for them
// (statsCatalog).
//
// iceberg-go's own refresh-and-replay is off (commit.retry.num-retries
// is 0 on an in-memory copy of the table's properties; the catalog's
// copy is left as it is): Run retries a lost race itself, building the
// change again on the table as it then is, and checks the commit's
// Scope before each attempt.
//
// fresh says tbl was loaded in this commit's turn (see queue.go): the
// conflict check does not load it again before sending.
//
// It also commits through conflictCatalog: iceberg-go retries only
// errors wrapping table.ErrCommitFailed, but its SQL catalog reports a
// requirement that no longer holds (another writer committed first) as a
// plain error.
func prepare(r Request, tbl *table.Table, tries *atomic.Int32, fresh bool) (*table.Table, error) {
	meta := tbl.Metadata()
	b, err := table.MetadataBuilderFromBase(meta, tbl.MetadataLocation())
	if err != nil {
		return nil, err
	}
	if err := b.SetProperties(iceberg.Properties{table.CommitNumRetriesKey: "0"}); err != nil {
		return nil, err
	}
	if meta, err = b.Build(); err != nil {
		return nil, err
	}
	fsF := func(ctx context.Context) (iceio.IO, error) { return tbl.FS(ctx) }
	cc := conflictCatalog{CatalogIO: r.Catalog, stats: r.Stats, tries: tries}
	if fresh {
		cc.base = tbl
	}
	sc := statsCatalog{CatalogIO: cc, fs: fsF, meta: meta, loc: tbl.MetadataLocation(), branch: r.Branch, warn: r.Warn}
	commits := lostCatalog{CatalogIO: summaryCatalog{CatalogIO: sc, fs: fsF, meta: meta}, fs: fsF, own: r.OwnFiles}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), fsF, commits), nil
}

// conflictCatalog turns a commit that lost a race into
// table.ErrCommitFailed, which iceberg-go retries against the refreshed
// table. It checks the requirements against the catalog's current metadata
// before committing (nothing is sent if one fails) and again after a
// commit error that is not ErrCommitFailed: a requirement that no longer
// holds, with none of the commit's snapshots in the table, means the commit
// did not land and cannot land later (the catalog checks the same
// requirements when it applies a commit). Any other error keeps its
// unknown outcome and is not retried.
// It counts the attempts of one commit in stats.
type conflictCatalog struct {
	table.CatalogIO
	stats *Stats
	tries *atomic.Int32 // attempts of this commit
	// base, when set, is the table the commit was built on, loaded in
	// this commit's turn: the table before the commit, without loading it
	// again.
	base *table.Table
}

func (c conflictCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (meta table.Metadata, loc string, err error) {
	defer func() { c.stats.attempt(c.tries, err) }()
	before := c.base
	if before == nil {
		if before, err = c.lost(ctx, ident, reqs, nil); err != nil {
			return nil, "", err
		}
	}
	st := statementOf(ctx)
	if st != nil {
		if prior := st.committedBefore(before.Metadata()); prior != nil {
			return nil, "", fmt.Errorf("%w: statement id %q made snapshot %d of %s; nothing was committed again", ErrAlreadyCommitted, st.id, prior.SnapshotID, strings.Join(ident, "."))
		}
		if updates, err = st.stamp(updates); err != nil {
			return nil, "", err
		}
	}
	meta, loc, err = c.CatalogIO.CommitTable(ctx, ident, reqs, updates)
	if err == nil {
		st.committedIn(updates)
		if snaps, ok := AddedSnapshots(updates); ok {
			c.stats.committed(snaps)
		}
		return meta, loc, nil
	}
	if errors.Is(err, table.ErrCommitFailed) {
		c.removeLostMetadata(ctx, ident, before, updates)
		return meta, loc, err
	}
	current, lost := c.lost(ctx, ident, reqs, updates)
	if errors.Is(lost, table.ErrCommitFailed) {
		return nil, "", fmt.Errorf("%w: %w", lost, err)
	}
	if current != nil && landed(current.Metadata(), updates) {
		// The answer was lost, not the commit.
		st.committedIn(updates)
		if snaps, ok := AddedSnapshots(updates); ok {
			c.stats.committed(snaps)
		}
		return current.Metadata(), current.MetadataLocation(), nil
	}
	return nil, "", err
}

// landed says whether meta holds a snapshot updates add.
func landed(meta table.Metadata, updates []table.Update) bool {
	added, ok := AddedSnapshots(updates)
	if !ok {
		return false
	}
	for _, snap := range added {
		if meta.SnapshotByID(snap.SnapshotID) != nil {
			return true
		}
	}
	return false
}

// lost returns an error wrapping table.ErrCommitFailed if a requirement
// fails against the current metadata and none of the snapshots updates
// add is in it; it also returns the table it loaded.
func (c conflictCatalog) lost(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (*table.Table, error) {
	current, err := c.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	meta := current.Metadata()
	if _, ok := AddedSnapshots(updates); !ok || landed(meta, updates) {
		return current, nil
	}
	for _, r := range reqs {
		if err := r.Validate(meta); err != nil {
			return current, fmt.Errorf("%w: %w", table.ErrCommitFailed, err)
		}
	}
	return current, nil
}

// removeLostMetadata deletes the metadata file a commit that lost its
// race wrote before the catalog refused it (a catalog that writes table
// metadata itself, as iceberg-go's SQL catalog does, leaves it behind).
// That file holds the commit's new snapshots, which no other metadata
// file can, and its version follows one between before's and the
// current table's. Best effort: the statement already failed.
func (c conflictCatalog) removeLostMetadata(ctx context.Context, ident table.Identifier, before *table.Table, updates []table.Update) {
	snaps, ok := AddedSnapshots(updates)
	if !ok || len(snaps) == 0 || before == nil {
		return
	}
	current, err := c.LoadTable(ctx, ident)
	if err != nil {
		return
	}
	fsys, err := current.FS(ctx)
	if err != nil {
		return
	}
	known := map[string]bool{current.MetadataLocation(): true}
	for e := range current.Metadata().PreviousFiles() {
		known[e.MetadataFile] = true
	}
	lo := orphans.MetadataVersion(before.MetadataLocation()) + 1
	hi := orphans.MetadataVersion(current.MetadataLocation())
	ours := func(m table.Metadata) bool {
		for _, s := range snaps {
			if m.SnapshotByID(s.SnapshotID) != nil {
				return true
			}
		}
		return false
	}
	_, _ = orphans.RemoveLostMetadata(ctx, fsys, current.MetadataLocation(), lo, hi, known, ours)
}

// AddedSnapshots returns the snapshots updates add, read from their
// REST form (the update type is not exported); ok is false if one cannot
// be read.
func AddedSnapshots(updates []table.Update) (snaps []table.Snapshot, ok bool) {
	for _, u := range updates {
		if u.Action() != "add-snapshot" {
			continue
		}
		var v struct {
			Snapshot table.Snapshot `json:"snapshot"`
		}
		b, err := json.Marshal(u)
		if err != nil || json.Unmarshal(b, &v) != nil || v.Snapshot.SnapshotID == 0 {
			return nil, false
		}
		snaps = append(snaps, v.Snapshot)
	}
	return snaps, true
}
