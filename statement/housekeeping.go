package statement

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// Snapshot and file housekeeping: expire_snapshots, remove_orphan_files,
// rewrite_manifests (Spark's procedures) and their Trino spellings.

// MinOrphanAge is the youngest a file may be for remove_orphan_files to
// delete it unless the call says override_min_age => true: a younger file
// may belong to a write that has not committed yet.
const MinOrphanAge = 24 * time.Hour

func init() {
	registerProcedure(&procedure{
		name: "expire_snapshots",
		params: []procParam{{name: "table", kind: argString, required: true}, {name: "older_than", kind: argTimestamp},
			{name: "retain_last", kind: argInt}, {name: "max_concurrent_deletes", kind: argInt},
			{name: "stream_results", kind: argBool}, {name: "snapshot_ids", kind: argLongArray},
			{name: "clean_expired_metadata", kind: argBool}},
		columns: []procColumn{{"deleted_data_files_count", "BIGINT"}, {"deleted_position_delete_files_count", "BIGINT"},
			{"deleted_equality_delete_files_count", "BIGINT"}, {"deleted_manifest_files_count", "BIGINT"},
			{"deleted_manifest_lists_count", "BIGINT"}, {"deleted_statistics_files_count", "BIGINT"}},
		run: runExpireSnapshots,
	})
	registerProcedure(&procedure{
		name: "remove_orphan_files",
		params: []procParam{{name: "table", kind: argString, required: true}, {name: "older_than", kind: argTimestamp},
			{name: "location", kind: argString}, {name: "dry_run", kind: argBool},
			{name: "max_concurrent_deletes", kind: argInt}, {name: "override_min_age", kind: argBool}},
		columns: []procColumn{{"orphan_file_location", "VARCHAR"}},
		run:     runRemoveOrphanFiles,
	})
	registerProcedure(&procedure{
		name:    "rewrite_manifests",
		params:  []procParam{{name: "table", kind: argString, required: true}, {name: "use_caching", kind: argBool}, {name: "spec_id", kind: argInt}},
		columns: []procColumn{{"rewritten_manifests_count", "INTEGER"}, {"added_manifests_count", "INTEGER"}},
		run:     runRewriteManifests,
	})
}

// expireCounts is what expire_snapshots deleted, by kind.
type expireCounts struct {
	data, posDeletes, eqDeletes, manifests, manifestLists, statistics int64
}

func (e expireCounts) row() []any {
	return []any{e.data, e.posDeletes, e.eqDeletes, e.manifests, e.manifestLists, e.statistics}
}

func (e expireCounts) total() int64 {
	return e.data + e.posDeletes + e.eqDeletes + e.manifests + e.manifestLists + e.statistics
}

func runExpireSnapshots(ctx context.Context, e *Executor, c *procCall) ([][]any, error) {
	if c.bool("clean_expired_metadata", false) {
		return nil, fmt.Errorf("%w: clean_expired_metadata", planner.ErrUnsupported)
	}
	tgt, err := c.target(ctx, e)
	if err != nil {
		return nil, err
	}
	var opts []table.ExpireSnapshotsOpt
	if ts, ok := c.time("older_than"); ok {
		opts = append(opts, table.WithOlderThan(max(time.Since(ts), 0)))
	}
	if n, ok := c.int("retain_last"); ok {
		if n < 1 {
			return nil, fmt.Errorf("%w: retain_last must be at least 1", planner.ErrInvalid)
		}
		opts = append(opts, table.WithRetainLast(int(n)))
	}
	ids, _ := c.args["snapshot_ids"].([]int64)
	counts, err := e.expireSnapshots(ctx, tgt, opts, ids)
	if err != nil {
		return nil, err
	}
	return [][]any{counts.row()}, nil
}

// expireSnapshots expires tgt's snapshots with iceberg-go's rules (opts)
// or exactly ids, keeping every snapshot a branch or tag still needs,
// then deletes the files only the expired snapshots reached.
func (e *Executor) expireSnapshots(ctx context.Context, tgt *planner.WriteTarget, opts []table.ExpireSnapshotsOpt, ids []int64) (expireCounts, error) {
	before := tgt.Pinned.Table
	var err error
	if len(ids) > 0 {
		err = e.commitMeta(ctx, tgt, func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
			return removeSnapshots(tbl, ids)
		})
	} else {
		opts = append(opts, table.WithPostCommit(false))
		err = e.commitChange(ctx, tgt, nil, func(tx *table.Transaction) error { return tx.ExpireSnapshots(opts...) }, nil)
	}
	if err != nil {
		return expireCounts{}, expireError(err)
	}
	after, err := e.opts.Mounts.LoadTable(ctx, tgt.Ref)
	if err != nil {
		return expireCounts{}, err
	}
	return deleteExpiredFiles(ctx, before, after.Table)
}

func expireError(err error) error {
	if err == nil || errors.Is(err, planner.ErrConflict) || errors.Is(err, planner.ErrCommitUnknown) || errors.Is(err, planner.ErrInvalid) || errors.Is(err, planner.ErrNotFound) {
		return err
	}
	return fmt.Errorf("%w: %v", planner.ErrInvalid, err)
}

// removeSnapshots is the change that expires exactly ids, refusing a
// snapshot a branch or tag points at.
func removeSnapshots(tbl *table.Table, ids []int64) ([]table.Requirement, []table.Update, error) {
	md := tbl.Metadata()
	var reqs []table.Requirement
	for name, ref := range md.Refs() {
		if slices.Contains(ids, ref.SnapshotID) {
			return nil, nil, fmt.Errorf("%w: snapshot %d is the head of %s %q", planner.ErrInvalid, ref.SnapshotID, ref.SnapshotRefType, name)
		}
		id := ref.SnapshotID
		reqs = append(reqs, table.AssertRefSnapshotID(name, &id))
	}
	for _, id := range ids {
		if md.SnapshotByID(id) == nil {
			return nil, nil, fmt.Errorf("%w: no snapshot %d", planner.ErrNotFound, id)
		}
	}
	return reqs, []table.Update{table.NewRemoveSnapshotsUpdate(ids, false)}, nil
}

// deleteExpiredFiles deletes what only before's snapshots that after no
// longer has referenced: their manifest lists and statistics files, and
// the manifests and data and delete files no kept snapshot reaches.
func deleteExpiredFiles(ctx context.Context, before, after *table.Table) (expireCounts, error) {
	var counts expireCounts
	fsys, err := before.FS(ctx)
	if err != nil {
		return counts, err
	}
	var expired []table.Snapshot
	for _, s := range before.Metadata().Snapshots() {
		if after.Metadata().SnapshotByID(s.SnapshotID) == nil {
			expired = append(expired, s)
		}
	}
	if len(expired) == 0 {
		return counts, nil
	}
	keptManifests, keptFiles, err := reachableFiles(fsys, after.Metadata().Snapshots())
	if err != nil {
		return counts, err
	}
	type doomed struct {
		path  string
		count *int64
	}
	var files []doomed
	seen := map[string]bool{}
	add := func(path string, count *int64) {
		if !seen[path] {
			seen[path] = true
			files = append(files, doomed{path, count})
		}
	}
	for _, s := range expired {
		add(s.ManifestList, &counts.manifestLists)
		mans, err := s.Manifests(fsys)
		if err != nil {
			return counts, fmt.Errorf("manifests of snapshot %d: %w", s.SnapshotID, err)
		}
		for _, m := range mans {
			if keptManifests[m.FilePath()] || seen[m.FilePath()] {
				continue
			}
			add(m.FilePath(), &counts.manifests)
			for e, err := range m.Entries(fsys, false) {
				if err != nil {
					return counts, err
				}
				df := e.DataFile()
				if keptFiles[df.FilePath()] {
					continue
				}
				switch df.ContentType() {
				case iceberg.EntryContentPosDeletes:
					add(df.FilePath(), &counts.posDeletes)
				case iceberg.EntryContentEqDeletes:
					add(df.FilePath(), &counts.eqDeletes)
				default:
					add(df.FilePath(), &counts.data)
				}
			}
		}
	}
	keptStats := map[string]bool{}
	for sf := range after.Metadata().Statistics() {
		keptStats[sf.StatisticsPath] = true
	}
	for psf := range after.Metadata().PartitionStatistics() {
		keptStats[psf.StatisticsPath] = true
	}
	for sf := range before.Metadata().Statistics() {
		if after.Metadata().SnapshotByID(sf.SnapshotID) == nil && !keptStats[sf.StatisticsPath] {
			add(sf.StatisticsPath, &counts.statistics)
		}
	}
	for psf := range before.Metadata().PartitionStatistics() {
		if after.Metadata().SnapshotByID(psf.SnapshotID) == nil && !keptStats[psf.StatisticsPath] {
			add(psf.StatisticsPath, &counts.statistics)
		}
	}
	var errs []error
	for _, f := range files {
		if err := fsys.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		*f.count++
	}
	if err := errors.Join(errs...); err != nil {
		return counts, fmt.Errorf("the snapshots expired, but deleting some of their files failed: %w", err)
	}
	return counts, nil
}

// reachableFiles are the manifests the snapshots reference and the files their
// entries hold live (added or existing).
func reachableFiles(fsys iceio.IO, snaps []table.Snapshot) (manifests, files map[string]bool, err error) {
	manifests, files = map[string]bool{}, map[string]bool{}
	for _, s := range snaps {
		mans, err := s.Manifests(fsys)
		if err != nil {
			return nil, nil, fmt.Errorf("manifests of snapshot %d: %w", s.SnapshotID, err)
		}
		for _, m := range mans {
			if manifests[m.FilePath()] {
				continue
			}
			manifests[m.FilePath()] = true
			for e, err := range m.Entries(fsys, true) {
				if err != nil {
					return nil, nil, err
				}
				files[e.DataFile().FilePath()] = true
			}
		}
	}
	return manifests, files, nil
}

func runRemoveOrphanFiles(ctx context.Context, e *Executor, c *procCall) ([][]any, error) {
	tgt, err := c.target(ctx, e)
	if err != nil {
		return nil, err
	}
	age := 72 * time.Hour // Spark's default: older than 3 days
	if ts, ok := c.time("older_than"); ok {
		age = time.Since(ts)
	}
	paths, err := e.removeOrphans(ctx, tgt, age, c.str("location", ""), c.bool("dry_run", false), c.bool("override_min_age", false))
	if err != nil {
		return nil, err
	}
	rows := make([][]any, len(paths))
	for i, path := range paths {
		rows[i] = []any{path}
	}
	return rows, nil
}

// removeOrphans deletes (or with dryRun only lists) the files under the
// table's location, or location below it, that are older than age and
// that no table references: iceberg-go's orphan cleanup lists the files
// the table itself does not reference, and those any other table of any
// mounted catalog references are left out of them (catalog.Mounts.
// Unreferenced). A folder that is, holds or lies in another table's place
// (or is or holds a schema's folder or the warehouse) is refused: what
// is in it is not the table's to judge. age below MinOrphanAge is
// refused unless override.
func (e *Executor) removeOrphans(ctx context.Context, tgt *planner.WriteTarget, age time.Duration, location string, dryRun, override bool) ([]string, error) {
	if age < MinOrphanAge && !override {
		return nil, fmt.Errorf("%w: files younger than %s may belong to a write that has not committed yet; "+
			"pass an older older_than (retention_threshold), or CALL it with override_min_age => true if no write is running", planner.ErrInvalid, MinOrphanAge)
	}
	tbl := tgt.Pinned.Table
	root := tbl.Location()
	if location != "" {
		if !underLocation(location, tbl.Location()) {
			return nil, fmt.Errorf("%w: location %q is not under the table's location", planner.ErrRefused, location)
		}
		root = location
	}
	owners, err := e.opts.Mounts.Owners(ctx)
	if err != nil {
		return nil, fmt.Errorf("orphan files of %s: whether its folder holds another table's files cannot be told: %w", tgt.Ref, err)
	}
	self := func(o catalog.Owner) bool { return o.Is(tgt.Ref.Catalog, tgt.Ref.Ident()) }
	if err := owners.Free([]string{root}, self); err != nil {
		return nil, fmt.Errorf("%w: orphan files of %s: its folder is not its own: %w", planner.ErrRefused, tgt.Ref, err)
	}
	plan, err := tbl.PlanOrphanFiles(ctx, table.WithFilesOlderThan(max(age, 0)), table.WithLocation(root))
	if err != nil {
		return nil, fmt.Errorf("orphan files of %s: %w", tgt.Ref, err)
	}
	orphans, err := e.opts.Mounts.Unreferenced(ctx, plan.Files(), nil)
	if err != nil {
		return nil, fmt.Errorf("orphan files of %s: whether another table references them cannot be told: %w", tgt.Ref, err)
	}
	slices.Sort(orphans)
	if dryRun || len(orphans) == 0 {
		return orphans, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, f := range orphans {
		if err := fsys.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("orphan files of %s: %w", tgt.Ref, err)
	}
	return orphans, nil
}

// underLocation reports whether loc names root or a directory below it
// (local paths are compared cleaned, so ".." cannot climb out).
func underLocation(loc, root string) bool {
	if lp, ok := catalog.LocalPath(loc); ok {
		rp, ok := catalog.LocalPath(root)
		return ok && (lp == rp || strings.HasPrefix(lp, rp+"/"))
	}
	if strings.Contains(loc, "/../") || strings.HasSuffix(loc, "/..") {
		return false
	}
	root = strings.TrimSuffix(root, "/")
	return loc == root || strings.HasPrefix(loc, root+"/")
}

func runRewriteManifests(ctx context.Context, e *Executor, c *procCall) ([][]any, error) {
	tgt, err := c.target(ctx, e)
	if err != nil {
		return nil, err
	}
	var opts []table.RewriteManifestsOpt
	if id, ok := c.int("spec_id"); ok {
		opts = append(opts, table.WithRewriteSpecID(int(id)))
	}
	res, err := e.rewriteManifests(ctx, tgt, opts)
	if err != nil {
		return nil, err
	}
	return [][]any{{int64(res.rewritten), int64(res.added)}}, nil
}

type manifestCounts struct{ rewritten, added int }

// rewriteManifests merges the current snapshot's small data manifests
// with iceberg-go's RewriteManifests, in one commit.
func (e *Executor) rewriteManifests(ctx context.Context, tgt *planner.WriteTarget, opts []table.RewriteManifestsOpt) (manifestCounts, error) {
	if tgt.Pinned.Table.CurrentSnapshot() == nil {
		return manifestCounts{}, nil
	}
	var counts manifestCounts
	err := e.commitChange(ctx, tgt, nil, func(tx *table.Transaction) error {
		res, err := tx.RewriteManifests(ctx, opts...)
		if err != nil {
			return err
		}
		counts = manifestCounts{rewritten: len(res.RewrittenManifests), added: len(res.AddedManifests)}
		return nil
	}, nil)
	return counts, expireError(err)
}

// trinoHousekeeping runs Trino's EXECUTE optimize_manifests,
// expire_snapshots(retention_threshold => '7d') and
// remove_orphan_files(retention_threshold => '7d'); the update count is
// how many files they removed (manifests rewritten for
// optimize_manifests).
func (e *Executor) trinoHousekeeping(ctx context.Context, _ planner.Session, tgt *planner.WriteTarget, name string, args []parse.Arg) (int64, error) {
	if name == "optimize_manifests" {
		if _, err := trinoArgs(name, args); err != nil {
			return 0, err
		}
		res, err := e.rewriteManifests(ctx, tgt, nil)
		return int64(res.rewritten), err
	}
	a, err := trinoArgs(name, args, "retention_threshold")
	if err != nil {
		return 0, err
	}
	retention := 7 * 24 * time.Hour
	if v, ok := a["retention_threshold"]; ok {
		if retention, err = parseDuration(v); err != nil {
			return 0, fmt.Errorf("%w: %s: retention_threshold: %v", planner.ErrInvalid, name, err)
		}
	}
	if name == "expire_snapshots" {
		counts, err := e.expireSnapshots(ctx, tgt, []table.ExpireSnapshotsOpt{table.WithOlderThan(retention), table.WithRetainLast(1)}, nil)
		return counts.total(), err
	}
	paths, err := e.removeOrphans(ctx, tgt, retention, "", false, false)
	return int64(len(paths)), err
}
