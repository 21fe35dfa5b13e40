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

// The write core, the steps of the write protocol (writeprotocol.go): a
// statement's write fragments run on the workers (runWrite: the
// endpoints of its planner.WritePlan, whose tickets carry the
// statement's wire.Write, all pulled at once), their files decoded, and
// the statement's commits through internal/commit (commitTx, the one
// way to commit.Run for a statement's transaction; commitMeta for
// hand-made metadata commits). A statement that fails deletes its files
// (removeFiles, removeOnly) unless its commit's outcome is unknown
// (keepOrRemove).

// errWorkerGone marks a write fragment whose worker could not be
// reached or went away (Unavailable).
var errWorkerGone = errors.New("worker unavailable")

// writeSelect runs the write fragments of INSERT INTO target [(cols)]
// query (BindInsert) and returns their files, not yet committed.
func (e *Executor) writeSelect(ctx context.Context, sess planner.Session, tgt *planner.WriteTarget, cols []string, query *parse.Statement, args ...any) (*writeResults, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("%w: parameters in INSERT … SELECT", planner.ErrUnsupported)
	}
	ib, err := e.BindInsert(ctx, sess, tgt, cols, query)
	if err != nil {
		return nil, err
	}
	var res *writeResults
	var gone error // the failure of the attempt before, a worker gone
	for attempt := 0; ; attempt++ {
		w := e.NewWrite(tgt)
		w.Project, w.InputColumns, w.OrderBy = ib.Project, ib.InputColumns, ib.OrderBy
		wp, err := e.PlanWrite(ctx, sess, tgt, query, w)
		if err != nil && gone != nil {
			// The first failure says what happened (which worker went
			// away, how); the re-run's only that it could not run.
			return nil, fmt.Errorf("%w; running it again failed: %v", gone, err)
		}
		if err != nil {
			return nil, err
		}
		if d := planner.DryRunOf(ctx); d != nil && attempt == 0 {
			d.NotePlan(wp.Explain)
		}
		res, err = e.runWrite(ctx, tgt, wp)
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

// runWrite runs the write fragments of wp (each endpoint's ticket, as
// the planner sealed it with the statement's write spec) all in parallel
// on their workers and decodes their files. If any fragment fails, it
// deletes every file of the statement and fails.
func (e *Executor) runWrite(ctx context.Context, tgt *planner.WriteTarget, wp *planner.WritePlan) (*writeResults, error) {
	if d := planner.DryRunOf(ctx); d != nil {
		return nil, d.Fragments(wp)
	}
	w := wp.Write
	raw, err := e.pullWrites(ctx, wp.Endpoints)
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
func (e *Executor) pullWrites(ctx context.Context, endpoints []planner.Endpoint) ([]wire.WriteResult, error) {
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
			res, err := e.pullWrite(ctx, loc, ep.Ticket)
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
	o := flightclient.PullOptions{OnUnavailable: e.Unreachable}
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
// attempt loads; once committed, the audit log records the snapshot (the
// partition statistics a table asks for are in the same commit:
// internal/commit). Under EXPLAIN it stops before anything is committed.
func (e *Executor) commitTx(ctx context.Context, tgt *planner.WriteTarget, r commit.Request) error {
	if err := planner.DryRunOf(ctx).Stop(); err != nil {
		return err
	}
	base := e.commitRequest(tgt)
	base.Tx, base.Scope, base.Append, base.Pinned, base.OwnFiles = r.Tx, r.Scope, r.Append, r.Pinned, r.OwnFiles
	base.After = func(ctx context.Context, _ table.Metadata, committed *table.Table) {
		var snap int64
		if s := committed.CurrentSnapshot(); s != nil {
			snap = s.SnapshotID
		}
		audit.From(ctx).Wrote(tgt.Ref.String(), snap)
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
		Table: tgt.Pinned.Table, Catalog: cat, Branch: tgt.Branch, Stats: e.Commits(),
		Warn: func(err error) {
			e.log.Warn("write partition statistics", zap.String("table", tgt.Ref.String()), zap.Error(err))
		},
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

// partitioned reports whether any spec of tbl partitions (partition
// statistics exist for partitioned tables only).
func partitioned(tbl *table.Table) bool { return partstats.Partitioned(tbl.Metadata()) }

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
