package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/orphans"
	"github.com/icefloe/icefloe/internal/tracing"
	"github.com/icefloe/icefloe/wire"
)

// Errors of the write path.
var (
	// ErrConflict: the statement's commit lost to concurrent commits even
	// after retrying against the refreshed table; its files were deleted and
	// nothing was committed (Aborted).
	ErrConflict = commit.ErrConflict
	// ErrCommitUnknown: the commit failed in a way that leaves its outcome
	// unknown (the catalog may have applied it); the statement's files were
	// kept (Unknown).
	ErrCommitUnknown = commit.ErrUnknown
	// ErrWriteFailed: a write fragment failed, e.g. its worker went away;
	// nothing was committed and the statement's files were deleted
	// (Aborted).
	ErrWriteFailed = errors.New("planner: write failed, nothing was committed")
	// errWorkerGone marks a write fragment whose worker could not be
	// reached or went away (Unavailable).
	errWorkerGone = errors.New("worker unavailable")
)

// WriteTarget is the pinned table a statement writes.
type WriteTarget struct {
	Ref    catalog.TableRef
	mount  *catalog.Mount
	Pinned *catalog.Pinned // the table as the statement loaded it
	// made says the statement made the table itself (CTAS, an ingest
	// that creates, a replace's staging table): it was authorized as a
	// whole, so commits go through the mount's internal catalog rather
	// than needing a write privilege on the new table.
	made bool
	// Branch is the branch the statement commits to; "" is main.
	Branch string
}

// LoadMadeTarget pins the table ref that the statement made itself
// (CREATE TABLE … AS, an ingest that creates, a replace's staging
// table): the statement was authorized as a whole, so its commits go
// through the mount's internal catalog without a privilege check on the
// new table.
func (p *Planner) LoadMadeTarget(ctx context.Context, ref catalog.TableRef) (*WriteTarget, error) {
	tgt, err := p.LoadTargetRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	tgt.made = true
	return tgt, nil
}

// Mount is the mounted catalog that holds the target table.
func (t *WriteTarget) Mount() *catalog.Mount { return t.mount }

// LoadTarget pins the table parts names (unqualified parts take sess's
// catalog and schema; a name is resolved as queries resolve it, a Spark
// branch name as its branch) once the caller holds each of privs on it.
// The branch is the session's write-audit-publish branch where the table
// takes one.
func (p *Planner) LoadTarget(ctx context.Context, sess Session, parts []string, privs ...authz.Privilege) (*WriteTarget, error) {
	ref, err := TableName(sess, parts)
	if err != nil {
		return nil, err
	}
	tgt, err := p.LoadTargetRef(ctx, ref, privs...)
	if err == nil {
		tgt.Branch = sessionBranch(sess, tgt.Pinned.Table)
		return tgt, nil
	}
	if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrDenied) {
		return nil, err
	}
	// Not as written: resolve the name as queries do (names.go).
	canon, rerr := p.resolveRef(ctx, ref, nil)
	if rerr == nil && canon != ref {
		tgt, err := p.LoadTargetRef(ctx, canon, privs...)
		if err != nil {
			return nil, err
		}
		tgt.Branch = sessionBranch(sess, tgt.Pinned.Table)
		return tgt, nil
	}
	if _, _, spark := sparkRefName(parts, true); spark {
		// A Spark branch name (db.t.branch_x) is no table of its own:
		// without a grant on that name the check denies it before the
		// lookup, so a denial too may be a branch of the table it names.
		return p.branchTarget(ctx, sess, parts, err, privs...)
	}
	if rerr != nil && errors.Is(err, ErrNotFound) {
		return nil, rerr
	}
	return nil, err
}

// LoadTargetRef pins the target of a write once the caller holds each of
// privs on it (checked before the table is loaded, so a denied caller
// learns nothing about it).
func (p *Planner) LoadTargetRef(ctx context.Context, ref catalog.TableRef, privs ...authz.Privilege) (*WriteTarget, error) {
	if err := p.Authorize(ctx, authz.TableObject(ref), privs...); err != nil {
		return nil, err
	}
	mt, err := p.Mount(ref.Catalog)
	if err != nil {
		return nil, err
	}
	pinned, err := p.opts.Mounts.LoadTable(ctx, ref)
	if err != nil {
		if errors.Is(err, catalog.ErrTableNotFound) {
			return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		return nil, err
	}
	return &WriteTarget{Ref: ref, mount: mt, Pinned: pinned}, nil
}

// InsertBinding is how the rows of an INSERT's query become rows of its
// target table in each write fragment (the fields of wire.Write of the
// same names).
type InsertBinding struct {
	// Project is the select list over the query's columns (__q.__c0, …)
	// that casts them to the table's columns, in table order; a column
	// the INSERT does not name is a typed NULL.
	Project string
	// InputColumns is the number of columns the query returns.
	InputColumns int
	// OrderBy is the order the fragments write in (PartitionOrder).
	OrderBy string
}

// BindInsert binds the query of INSERT INTO tgt [(cols)] query as a query
// of sess and checks its columns against the table's: their count, the
// named columns, a value for every NOT NULL column, and an implicit cast
// from each query column to its table column. Errors wrap ErrInvalid
// (or the binding's sentinels).
func (p *Planner) BindInsert(ctx context.Context, sess Session, tgt *WriteTarget, cols []string, query string) (*InsertBinding, error) {
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	b, err := p.bind(ctx, conn, sess, query, true)
	if err != nil {
		return nil, err
	}
	schema := tgt.Pinned.Table.Schema()
	fields := schema.Fields()
	nsrc := b.schema.NumFields()
	srcOf := make([]int, len(fields))
	if len(cols) == 0 {
		if nsrc != len(fields) {
			return nil, fmt.Errorf("%w: table %s has %d columns but the query returns %d", ErrInvalid, tgt.Ref, len(fields), nsrc)
		}
		for i := range srcOf {
			srcOf[i] = i
		}
	} else {
		if nsrc != len(cols) {
			return nil, fmt.Errorf("%w: INSERT names %d columns but the query returns %d", ErrInvalid, len(cols), nsrc)
		}
		for i := range srcOf {
			srcOf[i] = -1
		}
		for j, c := range cols {
			idx := -1
			for i, f := range fields {
				if strings.EqualFold(f.Name, c) {
					idx = i
					break
				}
			}
			if idx < 0 {
				return nil, fmt.Errorf("%w: table %s has no column %q", ErrInvalid, tgt.Ref, c)
			}
			if srcOf[idx] >= 0 {
				return nil, fmt.Errorf("%w: column %q is named twice", ErrInvalid, c)
			}
			srcOf[idx] = j
		}
		for i, f := range fields {
			if srcOf[i] < 0 && f.Required {
				return nil, fmt.Errorf("%w: column %q is NOT NULL and the INSERT gives it no value", ErrInvalid, f.Name)
			}
		}
	}
	duckTypes := make([]string, len(fields))
	for i, f := range fields {
		if duckTypes[i], err = DuckTypeOf(f.Type); err != nil {
			return nil, fmt.Errorf("insert into %s: column %q: %w", tgt.Ref, f.Name, err)
		}
	}
	if err := checkImplicitCasts(ctx, conn, b, fields, srcOf, duckTypes); err != nil {
		return nil, err
	}
	project := make([]string, len(fields))
	for i, f := range fields {
		if srcOf[i] < 0 {
			project[i] = fmt.Sprintf("CAST(NULL AS %s) AS %s", duckTypes[i], engine.Quote(f.Name))
		} else {
			project[i] = fmt.Sprintf("CAST(__q.__c%d AS %s) AS %s", srcOf[i], duckTypes[i], engine.Quote(f.Name))
		}
	}
	return &InsertBinding{Project: strings.Join(project, ", "), InputColumns: nsrc, OrderBy: PartitionOrder(tgt.Pinned.Table)}, nil
}

// WriteSelect runs the write fragments of INSERT INTO target [(cols)]
// query (BindInsert) and returns their files, not yet committed.
func (p *Planner) WriteSelect(ctx context.Context, sess Session, tgt *WriteTarget, cols []string, query string, args ...any) (*WriteResults, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("%w: parameters in INSERT … SELECT", ErrUnsupported)
	}
	ib, err := p.BindInsert(ctx, sess, tgt, cols, query)
	if err != nil {
		return nil, err
	}
	var res *WriteResults
	for attempt := 0; ; attempt++ {
		plan, err := p.Plan(ctx, sess, query)
		if err != nil {
			return nil, err
		}
		if d := DryRunOf(ctx); d != nil && attempt == 0 {
			d.NotePlan(plan.Explain)
		}
		w := p.NewWrite(tgt)
		w.Project, w.InputColumns, w.OrderBy = ib.Project, ib.InputColumns, ib.OrderBy
		res, err = p.RunWrite(ctx, tgt, w, plan.Endpoints)
		if err == nil {
			break
		}
		// Nothing was committed and the fragments' files are deleted: a
		// worker that went away (it left planning) costs one re-run on
		// the others.
		if attempt >= writeReruns || !errors.Is(err, errWorkerGone) || ctx.Err() != nil {
			return nil, err
		}
		tracing.Logger(ctx, p.log).Info("planner: a worker went away during a write; running it again on the others", zap.String("table", tgt.Ref.String()), zap.Error(err))
	}
	return res, nil
}

// writeReruns is how many times a write whose worker went away before
// anything was committed runs again.
const writeReruns = 1

// checkImplicitCasts refuses a source column whose DuckDB type does not
// cast implicitly to the target column's type, naming the column. conn
// holds b's stand-ins.
func checkImplicitCasts(ctx context.Context, conn *engine.Conn, b *bound, fields []iceberg.NestedField, srcOf []int, duckTypes []string) error {
	aliases := make([]string, b.schema.NumFields())
	for i := range aliases {
		aliases[i] = fmt.Sprintf("__c%d", i)
	}
	var sel []string
	var which []int
	for i := range fields {
		if srcOf[i] < 0 {
			continue
		}
		sel = append(sel, fmt.Sprintf("can_cast_implicitly(any_value(__q.__c%d), CAST(NULL AS %s)), typeof(any_value(__q.__c%d))", srcOf[i], duckTypes[i], srcOf[i]))
		which = append(which, i)
	}
	if len(sel) == 0 {
		return nil
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM (" + b.sql + ") AS __q(" + strings.Join(aliases, ", ") + ")"
	vals := make([]any, 2*len(which))
	oks := make([]bool, len(which))
	typs := make([]string, len(which))
	for k := range which {
		vals[2*k], vals[2*k+1] = &oks[k], &typs[k]
	}
	if err := conn.DB().QueryRowContext(ctx, q).Scan(vals...); err != nil {
		return bindError(err, b)
	}
	for k, i := range which {
		if !oks[k] {
			return fmt.Errorf("%w: column %q has type %s but the query gives it %s, which does not cast implicitly; add an explicit CAST", ErrInvalid, fields[i].Name, duckTypes[i], typs[k])
		}
	}
	return nil
}

// NewWrite is the write spec of a statement on tgt with a fresh UUID.
func (p *Planner) NewWrite(tgt *WriteTarget) *wire.Write {
	id := uuid.New()
	for i := 10; i < 16; i++ {
		id[i] = 0
	}
	return &wire.Write{
		Table:            tgt.Ref.Ident(),
		Display:          tgt.Ref.String(),
		MetadataLocation: tgt.Pinned.MetadataLocation,
		Props:            tgt.Pinned.StorageProps,
		WriteUUID:        id.String(),
	}
}

// FragmentUUID is the write UUID of fragment i of a statement: the
// statement's UUID with i in bytes 10–12; the worker varies bytes 13–15.
func FragmentUUID(stmt string, i int) string {
	id := uuid.MustParse(stmt)
	id[10], id[11], id[12] = byte(i>>16), byte(i>>8), byte(i)
	return id.String()
}

// WriteTickets seals the tickets of n write fragments of w that a
// statement streams to the workers itself (bulk ingest's DoPut):
// fragment i writes with FragmentUUID(w.WriteUUID, i). All carry the
// statement's query id and the caller's principal, deadline and trace,
// and expire after the ticket TTL.
func (p *Planner) WriteTickets(ctx context.Context, w *wire.Write, n int) ([][]byte, error) {
	expires := time.Now().Add(p.opts.TicketTTL)
	queryID := newQueryID(ctx)
	st := stampOf(ctx)
	out := make([][]byte, n)
	for i := range out {
		fw := *w
		fw.WriteUUID = FragmentUUID(w.WriteUUID, i)
		sealed, err := p.seal(st, &wire.Ticket{QueryID: queryID, ExpiresAt: expires, Write: &fw})
		if err != nil {
			return nil, err
		}
		out[i] = sealed
	}
	return out, nil
}

// writePrefix is what every file name of the statement contains.
func writePrefix(stmt string) string { return stmt[:strings.LastIndexByte(stmt, '-')+1] }

// WriteResults are the collected results of a statement's fragments:
// the files they added, the paths of the files they rewrote
// (copy-on-write), the rows in the added files and the rows they deleted
// or updated.
type WriteResults struct {
	Added    []iceberg.DataFile
	Replaced map[string]bool
	Rows     int64 // rows in added files
	Affected int64 // rows deleted or updated (rewrites)
}

// RunWrite turns each endpoint into a write fragment with w, runs them
// all in parallel on their workers and decodes their files. If any
// fragment fails, it deletes every file of the statement and fails.
func (p *Planner) RunWrite(ctx context.Context, tgt *WriteTarget, w *wire.Write, endpoints []Endpoint) (*WriteResults, error) {
	if d := DryRunOf(ctx); d != nil {
		return nil, d.fragments(tgt.Ref.String(), w, endpoints)
	}
	tickets := make([][]byte, len(endpoints))
	for i, e := range endpoints {
		t, err := p.opts.Key.Open(e.Ticket, time.Now())
		if err != nil {
			return nil, err
		}
		fw := *w
		fw.WriteUUID = FragmentUUID(w.WriteUUID, i)
		t.Write = &fw
		if tickets[i], err = p.opts.Key.Seal(t); err != nil {
			return nil, err
		}
	}
	raw, err := p.pullWrites(ctx, endpoints, tickets)
	res, derr := DecodeResults(tgt.Pinned.Table, raw)
	if err == nil {
		err = derr
	}
	if err != nil {
		p.RemoveFiles(ctx, tgt, w.WriteUUID, res.Added)
		// A fragment cancelled because another failed may still be closing
		// a file on its worker when this sweep runs (its results never
		// arrive): sweep the statement's files again once it has stopped.
		// The prefix is this attempt's alone.
		go func() {
			time.Sleep(lateSweep)
			p.RemoveFiles(context.WithoutCancel(ctx), tgt, w.WriteUUID, nil)
		}()
		return nil, err
	}
	return res, nil
}

// lateSweep is how long after a failed write its files are swept again.
const lateSweep = 2 * time.Second

// DecodeResults decodes the results of a statement's write fragments
// against tbl's metadata; it returns what it could decode also on error.
func DecodeResults(tbl *table.Table, raw []wire.WriteResult) (*WriteResults, error) {
	md := tbl.Metadata()
	res := &WriteResults{Replaced: map[string]bool{}}
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

// RemoveFiles deletes the files of a statement that will not be committed.
func (p *Planner) RemoveFiles(ctx context.Context, tgt *WriteTarget, stmtUUID string, files []iceberg.DataFile) {
	tbl := tgt.Pinned.Table
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		tracing.Logger(ctx, p.log).Warn("planner: delete files of a failed write", zap.String("table", tgt.Ref.String()), zap.Error(err))
		return
	}
	for _, df := range files {
		_ = fsys.Remove(df.FilePath())
	}
	if _, err := orphans.Remove(context.Background(), fsys, tbl.Location(), writePrefix(stmtUUID)); err != nil {
		// The statement already failed; its error is what the client needs.
		tracing.Logger(ctx, p.log).Warn("planner: delete files of a failed write", zap.String("table", tgt.Ref.String()), zap.Error(err))
	}
}

// pullWrites DoGets every write ticket at its endpoint's first location,
// all at once, and returns every result that came back, also when one
// failed (so their files can be deleted).
func (p *Planner) pullWrites(ctx context.Context, endpoints []Endpoint, tickets [][]byte) ([]wire.WriteResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		out  []wire.WriteResult
		errs []error
		wg   sync.WaitGroup
	)
	for i, e := range endpoints {
		if len(e.Locations) == 0 {
			return nil, fmt.Errorf("%w: write fragment %d has no location", ErrNoWorkers, i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			loc := e.Locations[0]
			res, err := p.pullWrite(ctx, loc, tickets[i])
			mu.Lock()
			defer mu.Unlock()
			out = append(out, res...)
			if err != nil {
				if len(errs) == 0 || !errors.Is(err, context.Canceled) {
					errs = append(errs, FragmentError(loc, err))
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

// unreachable tells the worker pool, if it listens, that loc failed as
// unreachable.
func (p *Planner) unreachable(loc string) {
	if r, ok := p.opts.Workers.(UnreachableReporter); ok {
		r.Unreachable(loc)
	}
}

// FragmentError maps a write fragment's failure: the client's fault stays
// InvalidArgument, a resource limit ResourceExhausted (ErrExhausted, not
// run again elsewhere), anything else fails the statement as a whole.
func FragmentError(loc string, err error) error {
	f := flightclient.FailureOf(err)
	if !f.Remote {
		return fmt.Errorf("%w: worker %s: %v", ErrWriteFailed, loc, err)
	}
	switch f.Kind {
	case flightclient.Invalid:
		return fmt.Errorf("%w: %s", ErrInvalid, f.Message)
	case flightclient.NotFound:
		return fmt.Errorf("%w: %s", ErrNotFound, f.Message)
	case flightclient.Unavailable:
		return fmt.Errorf("%w: worker %s: %w: %s", ErrWriteFailed, loc, errWorkerGone, f.Message)
	case flightclient.Exhausted:
		return fmt.Errorf("%w: worker %s: %w: %s", ErrWriteFailed, loc, ErrExhausted, f.Message)
	}
	return fmt.Errorf("%w: worker %s: %s: %s", ErrWriteFailed, loc, f.Code, f.Message)
}

// pullWrite runs one write fragment at loc and decodes the results it
// streams back.
func (p *Planner) pullWrite(ctx context.Context, loc string, ticket []byte) ([]wire.WriteResult, error) {
	var out []wire.WriteResult
	// A worker that answers Unavailable leaves planning (main's pool).
	o := flightclient.PullOptions{OnUnavailable: p.unreachable}
	err := p.opts.Flight.Pull(ctx, []string{loc}, ticket, o, func(rec arrow.RecordBatch) error {
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

// AppendAttempts is how many times an append statement starts its commit
// over from a freshly loaded table after iceberg-go's own retries (the
// table's commit.retry.num-retries) all lost: adding files cannot
// conflict with other appends, so a busy table only needs patience. A v3
// append has no iceberg-go retries (see CommitFiles), so it gets as many
// attempts as a v2 append has in all.
const AppendAttempts = 8

// CommitAppend adds the statement's files in one snapshot.
func (p *Planner) CommitAppend(ctx context.Context, tgt *WriteTarget, res *WriteResults) (int64, error) {
	if len(res.Added) == 0 {
		return 0, nil
	}
	attempts := AppendAttempts
	if tgt.Pinned.Table.Metadata().Version() >= 3 {
		attempts *= DefaultCommitRetries + 1
	}
	var err error
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			p.commits.Retries.Add(1)
			if serr := commit.Backoff(ctx, attempt); serr != nil {
				break
			}
			fresh, lerr := p.opts.Mounts.LoadTable(ctx, tgt.Ref)
			if lerr != nil {
				break
			}
			tgt.Pinned = fresh
		}
		err = p.CommitFiles(ctx, tgt, nil, res.Added)
		if !errors.Is(err, ErrConflict) {
			break
		}
	}
	if err != nil {
		return 0, p.KeepOrRemove(tgt, err, res.Added)
	}
	return res.Rows, nil
}

// CommitFiles commits worker-written files once: added alone as an append,
// or replacing deleted (copy-on-write). On a v3 table each added file gets
// its first_row_id from the table the transaction starts from (see
// rowids.go), and iceberg-go's refresh-and-replay is off because it would
// reuse those ids against a newer table: a lost race fails with
// ErrConflict, and only appends (which cannot conflict) start over, from a
// fresh table. A v3 copy-on-write statement that loses a race is
// therefore aborted rather than replayed.
func (p *Planner) CommitFiles(ctx context.Context, tgt *WriteTarget, deleted, added []iceberg.DataFile) error {
	v3 := tgt.Pinned.Table.Metadata().Version() >= 3
	err := p.CommitWith(ctx, tgt, !v3, func(tx *table.Transaction, base table.Metadata) error {
		files, err := WithFirstRowIDs(base, added)
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
	})
	if err == nil {
		audit.From(ctx).AddBytes(fileBytes(added))
	}
	return err
}

// Commit applies change to a transaction on the target and commits it
// once, with iceberg-go's retries against the refreshed table on conflict.
// When the commit fails for good the statement's files are deleted; when
// its outcome is unknown they are kept.
func (p *Planner) Commit(ctx context.Context, tgt *WriteTarget, change func(tx *table.Transaction) error, files []iceberg.DataFile) error {
	err := p.CommitOnce(ctx, tgt, change)
	if err == nil {
		audit.From(ctx).AddBytes(fileBytes(files))
	}
	return p.KeepOrRemove(tgt, err, files)
}

// KeepOrRemove deletes files unless err is nil or leaves the commit's
// outcome unknown, and returns err.
func (p *Planner) KeepOrRemove(tgt *WriteTarget, err error, files []iceberg.DataFile) error {
	if err != nil && !errors.Is(err, ErrCommitUnknown) {
		p.RemoveOnly(tgt, files)
	}
	return err
}

func (p *Planner) CommitOnce(ctx context.Context, tgt *WriteTarget, change func(tx *table.Transaction) error) error {
	return p.CommitWith(ctx, tgt, true, func(tx *table.Transaction, _ table.Metadata) error { return change(tx) })
}

// CommitWith applies change to a transaction on the target (base is the
// metadata it starts from) and commits it through commit.Run; replay says
// whether iceberg-go may retry a lost race against the refreshed table.
// Under EXPLAIN it stops before anything is committed.
func (p *Planner) CommitWith(ctx context.Context, tgt *WriteTarget, replay bool, change func(tx *table.Transaction, base table.Metadata) error) error {
	if err := DryRunOf(ctx).stop(); err != nil {
		return err
	}
	r := p.commitRequest(tgt)
	r.Tx, r.Replay = change, replay
	r.After = func(ctx context.Context, before table.Metadata, committed *table.Table) {
		var snap int64
		if s := committed.CurrentSnapshot(); s != nil {
			snap = s.SnapshotID
		}
		audit.From(ctx).Wrote(tgt.Ref.String(), snap)
		p.afterCommit(ctx, tgt, before, committed)
	}
	return commit.Run(ctx, r)
}

// commitRequest is a commit to tgt's table: to the internal catalog for
// a table the statement made (staged), otherwise to its mount's.
func (p *Planner) commitRequest(tgt *WriteTarget) commit.Request {
	cat := tgt.mount.Catalog
	if tgt.made {
		cat = tgt.mount.Internal()
	}
	return commit.Request{
		Name: tgt.Ref.String(), Ident: tgt.Ref.Ident(),
		Table: tgt.Pinned.Table, Catalog: cat, Branch: tgt.Branch, Stats: &p.commits,
	}
}

// fileBytes is the size of data files, for the audit log.
func fileBytes(files []iceberg.DataFile) int64 {
	var n int64
	for _, f := range files {
		n += f.FileSizeBytes()
	}
	return n
}

// RemoveOnly deletes data files of a statement that will not be
// committed (no sweep of the statement's other files).
func (p *Planner) RemoveOnly(tgt *WriteTarget, files []iceberg.DataFile) {
	if fsys, err := tgt.Pinned.Table.FS(context.Background()); err == nil {
		for _, df := range files {
			_ = fsys.Remove(df.FilePath())
		}
	}
}

// resultSchemaBytes is a non-empty schema for tickets built here (the
// worker requires one; write fragments answer their own schema).
func resultSchemaBytes(s *arrow.Schema) []byte {
	return flight.SerializeSchema(s, ddlAlloc)
}

// replaceAttempts is how many times a replace lists the table's files
// and commits, each time from a freshly loaded table, when a concurrent
// commit got in between (as patient as an append).
const replaceAttempts = AppendAttempts

// CommitReplace commits res in place of every live file of the target's
// current snapshot, in one snapshot.
//
// Concurrency: the files to remove are listed from the metadata the
// transaction starts from, and the transaction asserts (AssertRefSnapshotID)
// that main still points at that snapshot. iceberg-go's refresh-and-replay
// would otherwise rebuild the snapshot on top of a concurrent commit and
// keep that commit's files: its overwrite validator refuses concurrent
// appends only under write.update.isolation-level=serializable (the
// default); under snapshot a concurrent append would survive the replace
// (TestIngestReplaceConcurrentAppends shows it), and a concurrent delete
// file could dangle. With the assertion (a pinned ref, which iceberg-go
// never rewrites on replay) a concurrent commit fails the attempt
// (ErrCommitFailed → ErrConflict) instead, and the next attempt lists the
// files again from a freshly loaded table. If every
// attempt loses, or the table was dropped or replaced meanwhile, nothing is
// committed and the new files are deleted; the old table is untouched.
//
// props (may be nil) are set in the same commit.
func (p *Planner) CommitReplace(ctx context.Context, tgt *WriteTarget, res *WriteResults, props iceberg.Properties) (int64, error) {
	tableUUID := tgt.Pinned.Table.Metadata().TableUUID()
	v3 := tgt.Pinned.Table.Metadata().Version() >= 3
	var err error
	for attempt := range replaceAttempts {
		if attempt > 0 {
			if serr := commit.Backoff(ctx, attempt); serr != nil {
				break
			}
			fresh, lerr := p.opts.Mounts.LoadTable(ctx, tgt.Ref)
			if lerr != nil {
				err = fmt.Errorf("%w on %s: reload after a lost commit: %v", ErrConflict, tgt.Ref, lerr)
				break
			}
			if fresh.Table.Metadata().TableUUID() != tableUUID {
				err = fmt.Errorf("%w on %s: the table was dropped or replaced during the ingest", ErrConflict, tgt.Ref)
				break
			}
			tgt.Pinned = fresh
		}
		fsys, ferr := tgt.Pinned.Table.FS(ctx)
		if ferr != nil {
			err = fmt.Errorf("commit to %s: %w", tgt.Ref, ferr)
			break
		}
		err = p.CommitWith(ctx, tgt, !v3, func(tx *table.Transaction, base table.Metadata) error {
			if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
				return err
			}
			if len(props) > 0 {
				if err := tx.SetProperties(props); err != nil {
					return err
				}
			}
			data, deletes, err := LiveFiles(base, fsys)
			if err != nil {
				return err
			}
			files, err := WithFirstRowIDs(base, res.Added)
			if err != nil {
				return err
			}
			if len(data) == 0 && len(deletes) == 0 && len(files) == 0 {
				return nil
			}
			return tx.ReplaceFiles(ctx, data, files, deletes, nil)
		})
		if !errors.Is(err, ErrConflict) {
			break
		}
	}
	if err != nil {
		return 0, p.KeepOrRemove(tgt, err, res.Added)
	}
	return res.Rows, nil
}

// LiveFiles lists the live data files and delete files (positional,
// equality, deletion vectors) of meta's current snapshot, each once.
func LiveFiles(meta table.Metadata, fsys iceio.IO) (data, deletes []iceberg.DataFile, err error) {
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

// PartitionOrder is the ORDER BY list of a write into tbl: its partition
// source columns in spec order, so that a fragment's batches each hold few
// partitions, then its sort order; empty when it has neither.
func PartitionOrder(tbl *table.Table) string {
	cols := partitionKeys(tbl)
	return strings.Join(append(cols, sortKeys(tbl, cols)...), ", ")
}

// partitionKeys are the quoted partition source columns of tbl's spec.
func partitionKeys(tbl *table.Table) []string {
	spec := tbl.Spec()
	schema := tbl.Schema()
	var cols []string
	for _, pf := range spec.Fields() {
		if _, ok := pf.Transform.(iceberg.VoidTransform); ok {
			continue
		}
		name, ok := schema.FindColumnName(pf.SourceID())
		if !ok || strings.Contains(name, ".") {
			continue
		}
		q := engine.Quote(name)
		if !slices.Contains(cols, q) {
			cols = append(cols, q)
		}
	}
	return cols
}

// sortKeys are the ORDER BY keys of tbl's sort order (identity fields, up
// to the first other one), leaving out the columns in seen, so files come
// out sorted within each partition.
func sortKeys(tbl *table.Table, seen []string) []string {
	schema := tbl.Schema()
	seen = slices.Clone(seen)
	var keys []string
	for _, sf := range tbl.SortOrder().Fields() {
		if _, ok := sf.Transform.(iceberg.IdentityTransform); !ok {
			break
		}
		name, ok := schema.FindColumnName(sf.SourceID())
		if !ok || strings.Contains(name, ".") {
			break
		}
		q := engine.Quote(name)
		if slices.Contains(seen, q) {
			continue
		}
		seen = append(seen, q)
		dir := " ASC"
		if sf.Direction == table.SortDESC {
			dir = " DESC"
		}
		nulls := " NULLS LAST"
		if sf.NullOrder == table.NullsFirst {
			nulls = " NULLS FIRST"
		}
		keys = append(keys, q+dir+nulls)
	}
	return keys
}
