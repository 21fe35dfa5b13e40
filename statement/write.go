package statement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/orphans"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/partstats"
	"github.com/icefloe/icefloe/internal/tracing"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

// The write core: a statement's write fragments run on the workers
// (runWrite: each endpoint's sealed ticket opened, given the statement's
// wire.Write and sealed again, all pulled at once), their files decoded,
// and the statement's commits through internal/commit (commitTx, and for
// its common uses commitAppend, commitFiles, commitChange and
// commitReplace; commitMeta for hand-made metadata commits), with the
// partition statistics a table asks for written after each commit.
// A statement that fails deletes its files (removeFiles, removeOnly)
// unless its commit's outcome is unknown (keepOrRemove).

// errWorkerGone marks a write fragment whose worker could not be
// reached or went away (Unavailable).
var errWorkerGone = errors.New("worker unavailable")

// writeSelect runs the write fragments of INSERT INTO target [(cols)]
// query (BindInsert) and returns their files, not yet committed.
func (e *Executor) writeSelect(ctx context.Context, sess planner.Session, tgt *planner.WriteTarget, cols []string, query *parse.Statement, args ...any) (*writeResults, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("%w: parameters in INSERT … SELECT", planner.ErrUnsupported)
	}
	ib, err := e.planner.BindInsert(ctx, sess, tgt, cols, query)
	if err != nil {
		return nil, err
	}
	var res *writeResults
	var gone error // the failure of the attempt before, a worker gone
	for attempt := 0; ; attempt++ {
		plan, err := e.Plan(ctx, sess, query)
		if err != nil && gone != nil {
			// The first failure says what happened (which worker went
			// away, how); the re-run's only that it could not run.
			return nil, fmt.Errorf("%w; running it again failed: %v", gone, err)
		}
		if err != nil {
			return nil, err
		}
		if d := planner.DryRunOf(ctx); d != nil && attempt == 0 {
			d.NotePlan(plan.Explain)
		}
		w := e.planner.NewWrite(tgt)
		w.Project, w.InputColumns, w.OrderBy = ib.Project, ib.InputColumns, ib.OrderBy
		res, err = e.runWrite(ctx, tgt, w, plan.Endpoints)
		if err == nil {
			break
		}
		// Nothing was committed and the fragments' files are deleted: a
		// worker that went away (it left planning) costs one re-run on
		// the others.
		if attempt >= writeReruns || !errors.Is(err, errWorkerGone) || ctx.Err() != nil {
			return nil, err
		}
		tracing.Logger(ctx, e.log).Info("planner: a worker went away during a write; running it again on the others", zap.String("table", tgt.Ref.String()), zap.Error(err))
		gone = err
	}
	return res, nil
}

// writeReruns is how many times a write whose worker went away before
// anything was committed runs again.
const writeReruns = 1

// writePrefix is what every file name of the statement contains.
func writePrefix(stmt string) string { return stmt[:strings.LastIndexByte(stmt, '-')+1] }

// writeResults are the collected results of a statement's fragments:
// the files they added, the paths of the files they rewrote
// (copy-on-write), the rows in the added files and the rows they deleted
// or updated.
type writeResults struct {
	Added    []iceberg.DataFile
	Replaced map[string]bool
	Rows     int64 // rows in added files
	Affected int64 // rows deleted or updated (rewrites)
}

// runWrite turns each endpoint into a write fragment with w, runs them
// all in parallel on their workers and decodes their files. If any
// fragment fails, it deletes every file of the statement and fails.
func (e *Executor) runWrite(ctx context.Context, tgt *planner.WriteTarget, w *wire.Write, endpoints []planner.Endpoint) (*writeResults, error) {
	if d := planner.DryRunOf(ctx); d != nil {
		return nil, d.Fragments(tgt.Ref.String(), w, endpoints)
	}
	tickets := make([][]byte, len(endpoints))
	for i, ep := range endpoints {
		t, err := e.opts.Key.Open(ep.Ticket, time.Now())
		if err != nil {
			return nil, err
		}
		fw := *w
		fw.WriteUUID = planner.FragmentUUID(w.WriteUUID, i)
		t.Write = &fw
		if tickets[i], err = e.opts.Key.Seal(t); err != nil {
			return nil, err
		}
	}
	raw, err := e.pullWrites(ctx, endpoints, tickets)
	res, derr := decodeResults(tgt.Pinned.Table, raw)
	if err == nil {
		err = derr
	}
	if err != nil {
		e.removeFiles(ctx, tgt, w.WriteUUID, res.Added)
		// A fragment cancelled because another failed may still be closing
		// a file on its worker when this sweep runs (its results never
		// arrive): sweep the statement's files again once it has stopped.
		// The prefix is this attempt's alone.
		go func() {
			time.Sleep(lateSweep)
			e.removeFiles(context.WithoutCancel(ctx), tgt, w.WriteUUID, nil)
		}()
		return nil, err
	}
	return res, nil
}

// lateSweep is how long after a failed write its files are swept again.
const lateSweep = 2 * time.Second

// decodeResults decodes the results of a statement's write fragments
// against tbl's metadata; it returns what it could decode also on error.
func decodeResults(tbl *table.Table, raw []wire.WriteResult) (*writeResults, error) {
	md := tbl.Metadata()
	res := &writeResults{Replaced: map[string]bool{}}
	var errs []error
	for _, r := range raw {
		if r.Replaced != "" {
			res.Replaced[r.Replaced] = true
			res.Affected += r.Affected
		}
		if len(r.DataFile) == 0 {
			continue
		}
		spec := md.PartitionSpecByID(r.SpecID)
		if spec == nil {
			errs = append(errs, fmt.Errorf("written file has unknown partition spec %d", r.SpecID))
			continue
		}
		df, err := codec.DecodeDataFile(r.DataFile, *spec, md.CurrentSchema(), md.Version())
		if err != nil {
			errs = append(errs, fmt.Errorf("decode written file: %w", err))
			continue
		}
		res.Added = append(res.Added, df)
		res.Rows += r.Rows
	}
	return res, errors.Join(errs...)
}

// removeFiles deletes the files of a statement that will not be committed.
func (e *Executor) removeFiles(ctx context.Context, tgt *planner.WriteTarget, stmtUUID string, files []iceberg.DataFile) {
	tbl := tgt.Pinned.Table
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		tracing.Logger(ctx, e.log).Warn("planner: delete files of a failed write", zap.String("table", tgt.Ref.String()), zap.Error(err))
		return
	}
	for _, df := range files {
		_ = fsys.Remove(df.FilePath())
	}
	if _, err := orphans.Remove(context.Background(), fsys, tbl.Location(), writePrefix(stmtUUID)); err != nil {
		// The statement already failed; its error is what the client needs.
		tracing.Logger(ctx, e.log).Warn("planner: delete files of a failed write", zap.String("table", tgt.Ref.String()), zap.Error(err))
	}
}

// pullWrites DoGets every write ticket at its endpoint's first location,
// all at once, and returns every result that came back, also when one
// failed (so their files can be deleted).
func (e *Executor) pullWrites(ctx context.Context, endpoints []planner.Endpoint, tickets [][]byte) ([]wire.WriteResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		out  []wire.WriteResult
		errs []error
		wg   sync.WaitGroup
	)
	for i, ep := range endpoints {
		if len(ep.Locations) == 0 {
			return nil, fmt.Errorf("%w: write fragment %d has no location", planner.ErrNoWorkers, i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			loc := ep.Locations[0]
			res, err := e.pullWrite(ctx, loc, tickets[i])
			mu.Lock()
			defer mu.Unlock()
			out = append(out, res...)
			if err != nil {
				if len(errs) == 0 || !errors.Is(err, context.Canceled) {
					errs = append(errs, fragmentError(loc, err))
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return out, errs[0]
	}
	return out, nil
}

// fragmentError maps a write fragment's failure: the client's fault stays
// InvalidArgument, a resource limit ResourceExhausted (planner.ErrExhausted, not
// run again elsewhere), anything else fails the statement as a whole.
func fragmentError(loc string, err error) error {
	f := flightclient.FailureOf(err)
	if !f.Remote {
		return fmt.Errorf("%w: worker %s: %v", planner.ErrWriteFailed, loc, err)
	}
	switch f.Kind {
	case flightclient.Invalid:
		return fmt.Errorf("%w: %s", planner.ErrInvalid, f.Message)
	case flightclient.NotFound:
		return fmt.Errorf("%w: %s", planner.ErrNotFound, f.Message)
	case flightclient.Unavailable:
		return fmt.Errorf("%w: worker %s: %w: %s", planner.ErrWriteFailed, loc, errWorkerGone, f.Message)
	case flightclient.Exhausted:
		return fmt.Errorf("%w: worker %s: %w: %s", planner.ErrWriteFailed, loc, planner.ErrExhausted, f.Message)
	}
	return fmt.Errorf("%w: worker %s: %s: %s", planner.ErrWriteFailed, loc, f.Code, f.Message)
}

// pullWrite runs one write fragment at loc and decodes the results it
// streams back.
func (e *Executor) pullWrite(ctx context.Context, loc string, ticket []byte) ([]wire.WriteResult, error) {
	var out []wire.WriteResult
	// A worker that answers Unavailable leaves planning (main's pool).
	o := flightclient.PullOptions{OnUnavailable: e.planner.Unreachable}
	err := e.opts.Flight.Pull(ctx, []string{loc}, ticket, o, func(rec arrow.RecordBatch) error {
		defer rec.Release()
		col, ok := rec.Column(0).(*array.Binary)
		if !ok || rec.NumCols() != 1 {
			return fmt.Errorf("write fragment answered %s, not one binary column", rec.Schema())
		}
		for i := 0; i < col.Len(); i++ {
			var r wire.WriteResult
			if err := json.Unmarshal(col.Value(i), &r); err != nil {
				return fmt.Errorf("decode write result: %w", err)
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// commitAppend adds the statement's files in one snapshot.
func (e *Executor) commitAppend(ctx context.Context, tgt *planner.WriteTarget, res *writeResults) (int64, error) {
	if len(res.Added) == 0 {
		return 0, nil
	}
	if err := e.keepOrRemove(tgt, e.commitFiles(ctx, tgt, nil, nil, res.Added), res.Added); err != nil {
		return 0, err
	}
	return res.Rows, nil
}

// commitFiles commits worker-written files: added alone as an append, or
// replacing deleted (copy-on-write) under scope, what the statement read
// to choose them. Each attempt builds the snapshot on the table as it
// then is (commit.Run), so on a v3 table each added file gets its
// first_row_id from the table the attempt starts from (see rowids.go).
func (e *Executor) commitFiles(ctx context.Context, tgt *planner.WriteTarget, scope *commit.Scope, deleted, added []iceberg.DataFile) error {
	err := e.commitTx(ctx, tgt, commit.Request{Scope: scope, Append: len(deleted) == 0,
		Tx: func(tx *table.Transaction, base table.Metadata) error {
			files, err := withFirstRowIDs(base, added)
			if err != nil {
				return err
			}
			if len(deleted) == 0 {
				// Workers name every file they write anew (the statement's
				// write UUID), so none can be in the table yet: skip
				// iceberg-go's duplicate check, which reads every manifest
				// of the table and made each append cost O(snapshots).
				return tx.AddDataFiles(ctx, files, nil, table.WithoutDuplicateCheck())
			}
			return tx.ReplaceDataFilesWithDataFiles(ctx, deleted, files, nil)
		}})
	if err == nil {
		audit.From(ctx).AddBytes(fileBytes(added))
	}
	return err
}

// commitChange applies change to a transaction on the target and commits
// it, scope (nil for none) being what the change depends on. When the
// commit fails for good the statement's files are deleted; when its
// outcome is unknown they are kept.
func (e *Executor) commitChange(ctx context.Context, tgt *planner.WriteTarget, scope *commit.Scope, change func(tx *table.Transaction) error, files []iceberg.DataFile) error {
	err := e.commitTx(ctx, tgt, commit.Request{Scope: scope,
		Tx: func(tx *table.Transaction, _ table.Metadata) error { return change(tx) }})
	if err == nil {
		audit.From(ctx).AddBytes(fileBytes(files))
	}
	return e.keepOrRemove(tgt, err, files)
}

// keepOrRemove deletes files unless err is nil or leaves the commit's
// outcome unknown, and returns err.
func (e *Executor) keepOrRemove(tgt *planner.WriteTarget, err error, files []iceberg.DataFile) error {
	if err != nil && !errors.Is(err, planner.ErrCommitUnknown) {
		e.removeOnly(tgt, files)
	}
	return err
}

// commitTx commits r's Tx (with its Scope, Append, Pinned and OwnFiles) to the
// target's table through commit.Run, the target following the table each
// attempt loads; once committed, the audit log records the snapshot and
// the table's partition statistics are written. Under EXPLAIN it stops
// before anything is committed.
func (e *Executor) commitTx(ctx context.Context, tgt *planner.WriteTarget, r commit.Request) error {
	if err := planner.DryRunOf(ctx).Stop(); err != nil {
		return err
	}
	base := e.commitRequest(tgt)
	base.Tx, base.Scope, base.Append, base.Pinned, base.OwnFiles = r.Tx, r.Scope, r.Append, r.Pinned, r.OwnFiles
	base.After = func(ctx context.Context, before table.Metadata, committed *table.Table) {
		var snap int64
		if s := committed.CurrentSnapshot(); s != nil {
			snap = s.SnapshotID
		}
		audit.From(ctx).Wrote(tgt.Ref.String(), snap)
		e.afterCommit(ctx, tgt, before, committed)
	}
	return commit.Run(ctx, base)
}

// commitRequest is a commit to tgt's table: to the internal catalog for
// a table the statement made (staged), otherwise to its mount's. Each
// reload of the table pins tgt to it.
func (e *Executor) commitRequest(tgt *planner.WriteTarget) commit.Request {
	cat := tgt.Mount().Catalog
	if tgt.Made() {
		cat = tgt.Mount().Internal()
	}
	return commit.Request{
		Name: tgt.Ref.String(), Ident: tgt.Ref.Ident(),
		Table: tgt.Pinned.Table, Catalog: cat, Branch: tgt.Branch, Stats: e.planner.Commits(),
		Reload: func(ctx context.Context) (*table.Table, error) {
			fresh, err := e.opts.Mounts.LoadTable(ctx, tgt.Ref)
			if err != nil {
				return nil, err
			}
			tgt.Pinned = fresh
			return fresh.Table, nil
		},
	}
}

// readScope is the scope of a change that read the target as pinned, on
// its branch: op, the rows filter selects (nil for all) and the data
// files rewritten.
func readScope(tgt *planner.WriteTarget, op commit.Op, filter iceberg.BooleanExpression, rewritten []iceberg.DataFile) *commit.Scope {
	s := &commit.Scope{Op: op, Filter: filter, Rewritten: rewritten}
	branch := tgt.Branch
	if branch == "" {
		branch = table.MainBranch
	}
	if snap := tgt.Pinned.Table.SnapshotByName(branch); snap != nil {
		s.Base = snap.SnapshotID
	}
	return s
}

// fileBytes is the size of data files, for the audit log.
func fileBytes(files []iceberg.DataFile) int64 {
	var n int64
	for _, f := range files {
		n += f.FileSizeBytes()
	}
	return n
}

// removeOnly deletes data files of a statement that will not be
// committed (no sweep of the statement's other files).
func (e *Executor) removeOnly(tgt *planner.WriteTarget, files []iceberg.DataFile) {
	if fsys, err := tgt.Pinned.Table.FS(context.Background()); err == nil {
		for _, df := range files {
			_ = fsys.Remove(df.FilePath())
		}
	}
}

// commitReplace commits res in place of every live file of the target's
// current snapshot, in one snapshot.
//
// Concurrency: each attempt lists the files to remove from the table it
// is built on and asserts (AssertRefSnapshotID) that main still points at
// that snapshot, so a concurrent commit (an append included: its rows
// must not survive the replace) makes the attempt lose its race and the
// next one list the files again. If every attempt loses, or the table was
// dropped or replaced meanwhile, nothing is committed and the new files
// are deleted; the old table is untouched.
//
// props (may be nil) are set in the same commit.
func (e *Executor) commitReplace(ctx context.Context, tgt *planner.WriteTarget, res *writeResults, props iceberg.Properties) (int64, error) {
	err := e.commitTx(ctx, tgt, commit.Request{Tx: func(tx *table.Transaction, base table.Metadata) error {
		if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
			return err
		}
		if len(props) > 0 {
			if err := tx.SetProperties(props); err != nil {
				return err
			}
		}
		fsys, err := tgt.Pinned.Table.FS(ctx) // the table the attempt loaded
		if err != nil {
			return err
		}
		data, deletes, err := liveFiles(base, fsys)
		if err != nil {
			return err
		}
		files, err := withFirstRowIDs(base, res.Added)
		if err != nil {
			return err
		}
		if len(data) == 0 && len(deletes) == 0 && len(files) == 0 {
			return nil
		}
		return tx.ReplaceFiles(ctx, data, files, deletes, nil)
	}})
	if err != nil {
		return 0, e.keepOrRemove(tgt, err, res.Added)
	}
	return res.Rows, nil
}

// liveFiles lists the live data files and delete files (positional,
// equality, deletion vectors) of meta's current snapshot, each once.
func liveFiles(meta table.Metadata, fsys iceio.IO) (data, deletes []iceberg.DataFile, err error) {
	snap := meta.CurrentSnapshot()
	if snap == nil {
		return nil, nil, nil
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return nil, nil, fmt.Errorf("list manifests: %w", err)
	}
	seen := map[string]bool{}
	for _, mf := range manifests {
		entries, err := mf.FetchEntries(fsys, true)
		if err != nil {
			return nil, nil, fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
		}
		for _, e := range entries {
			if e.Status() == iceberg.EntryStatusDELETED {
				continue
			}
			df := e.DataFile()
			key := fmt.Sprintf("%d\x00%s", df.ContentType(), df.FilePath())
			if df.ContentOffset() != nil {
				// Deletion vectors share one Puffin file; each blob is its
				// own delete file.
				key += fmt.Sprintf("\x00%d", *df.ContentOffset())
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			if df.ContentType() == iceberg.EntryContentData {
				data = append(data, df)
			} else {
				deletes = append(deletes, df)
			}
		}
	}
	return data, deletes, nil
}

// writePartitionStats computes and writes snap's partition statistics and
// registers them in the table's metadata.
func (e *Executor) writePartitionStats(ctx context.Context, tgt *planner.WriteTarget, snap *table.Snapshot) (table.PartitionStatisticsFile, error) {
	tbl := tgt.Pinned.Table
	rows, err := partstats.Compute(ctx, tbl, snap)
	if err != nil {
		return table.PartitionStatisticsFile{}, err
	}
	f, err := partstats.Write(ctx, tbl, snap, rows)
	if err != nil {
		return f, err
	}
	err = e.commitMeta(ctx, tgt, func(*table.Table) ([]table.Requirement, []table.Update, error) {
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
func (e *Executor) afterCommit(ctx context.Context, tgt *planner.WriteTarget, before table.Metadata, committed *table.Table) {
	if committed == nil || committed.Properties().Get(planner.PartitionStatsKey, "false") != "true" || !partitioned(committed) {
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
	fresh, err := e.opts.Mounts.LoadTable(ctx, tgt.Ref)
	if err == nil {
		_, err = e.writePartitionStats(ctx, tgt.Fresh(fresh), snap)
	}
	if err != nil {
		tracing.Logger(ctx, e.log).Warn("planner: write partition statistics", zap.String("table", tgt.Ref.String()), zap.Int64("snapshot", snap.SnapshotID), zap.Error(err))
	}
}

// partitioned reports whether any spec of tbl partitions (partition
// statistics exist for partitioned tables only).
func partitioned(tbl *table.Table) bool {
	for _, spec := range tbl.Metadata().PartitionSpecs() {
		if spec.NumFields() > 0 {
			return true
		}
	}
	return false
}

// commitMeta commits change, a metadata commit computed from the current
// table, to tgt's table through commit.Run, recomputing it from the
// refreshed table when a concurrent commit broke a requirement;
// tgt.Pinned is the table committed against last.
func (e *Executor) commitMeta(ctx context.Context, tgt *planner.WriteTarget, change commit.Meta) error {
	r := e.commitRequest(tgt)
	r.Catalog = tgt.Mount().Catalog
	r.Meta = change
	return commit.Run(ctx, r)
}
