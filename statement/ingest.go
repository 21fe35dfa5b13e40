package statement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/conform"
	"github.com/icefloe/icefloe/internal/icemeta"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

// IfMissing says what bulk ingest does when the table does not exist.
type IfMissing int

const (
	// MissingCreate creates the table from the stream's schema.
	MissingCreate IfMissing = iota
	// MissingFail fails with planner.ErrNotFound.
	MissingFail
)

// IfExists says what bulk ingest does when the table exists.
type IfExists int

const (
	// ExistsFail fails with planner.ErrExists.
	ExistsFail IfExists = iota
	// ExistsAppend appends the rows.
	ExistsAppend
	// ExistsReplace replaces the table's rows (and, when the stream's
	// schema differs, its schema) with the stream's; the old table stays
	// whole until the new rows are committed (see replace.go).
	ExistsReplace
)

// Ingest is one bulk ingest (Flight SQL CommandStatementIngest).
type Ingest struct {
	// Catalog, Schema and Table name the target; empty Catalog and Schema
	// take the session's.
	Catalog, Schema, Table string
	IfMissing              IfMissing
	IfExists               IfExists
	// Rows is the client's stream; Ingest reads it to its end and does not
	// release it.
	Rows array.RecordReader
}

// Ingest writes a stream of record batches into a table and commits them
// in one snapshot, returning the number of rows. The coordinator conforms
// each batch to the table's schema as it arrives and forwards it,
// round-robin, into one DoPut per live worker, whose iceberg-go writers
// write the files (with no live worker it writes them itself); nothing is
// held whole in memory. Columns match the table's by name
// (case-insensitive) and are cast to its types; a missing nullable column
// is NULL; a NULL in a NOT NULL column fails the ingest and commits
// nothing.
func (e *Executor) Ingest(ctx context.Context, sess planner.Session, in Ingest) (int64, error) {
	ctx = commit.WithStatement(ctx)
	ref := catalog.TableRef{Catalog: in.Catalog, Schema: in.Schema, Table: in.Table}
	if ref.Catalog == "" {
		ref.Catalog = sess.Catalog
	}
	if ref.Schema == "" {
		ref.Schema = sess.Schema
	}
	ref, err := planner.TableName(planner.Session{Catalog: ref.Catalog, Schema: ref.Schema}, []string{ref.Table})
	if err != nil {
		return 0, err
	}
	mt, err := e.Mount(ref.Catalog)
	if err != nil {
		return 0, err
	}
	cat := mt.Catalog
	exists, err := cat.CheckTableExists(ctx, ref.Ident())
	if err != nil && !errors.Is(err, icecat.ErrNoSuchNamespace) {
		return 0, fmt.Errorf("ingest into %s: %w", ref, err)
	}
	create := false
	switch {
	case !exists && in.IfMissing == MissingFail:
		return 0, fmt.Errorf("%w: table %s (ingest mode append needs an existing table)", planner.ErrNotFound, ref)
	case !exists:
		create = true
	case in.IfExists == ExistsFail:
		return 0, fmt.Errorf("%w: table %s (ingest mode create needs a new table)", planner.ErrExists, ref)
	case in.IfExists == ExistsReplace:
		// Never a drop first: see replace.go.
		return e.replace(ctx, mt, ref, in)
	}
	if create {
		if err := e.Authorize(ctx, authz.TableObject(ref), authz.Create); err != nil {
			return 0, err
		}
		n, err := e.ingestCreate(ctx, mt, ref, in)
		switch {
		case errors.Is(err, errIngestMadeMeanwhile) && in.IfExists == ExistsReplace:
			// Made meanwhile by someone else: replace it as any
			// existing table.
			return e.replace(ctx, mt, ref, in)
		case errors.Is(err, errIngestMadeMeanwhile) && in.IfExists == ExistsAppend:
			if err := e.Authorize(ctx, authz.TableObject(ref), authz.Insert); err != nil {
				return 0, err
			}
		default:
			return n, err
		}
	}
	tgt, err := e.LoadTargetRef(ctx, ref, authz.Insert)
	if err != nil {
		return 0, err
	}
	res, err := e.ingestWrite(ctx, tgt, in.Rows)
	if err != nil {
		return 0, err
	}
	return e.finishAppend(ctx, tgt, res)
}

// errIngestMadeMeanwhile: the table an ingest was to create was made by
// someone else before the ingest read its stream; nothing was written.
// (Made after that, the ingest fails with planner.ErrExists: the stream is read.)
var errIngestMadeMeanwhile = fmt.Errorf("%w: made meanwhile", planner.ErrExists)

// ingestCreate runs bulk ingest into a table it makes, staged (see
// staged): the table appears with the stream's rows or not at all.
func (e *Executor) ingestCreate(ctx context.Context, mt *catalog.Mount, ref catalog.TableRef, in Ingest) (int64, error) {
	schema, err := ingestSchema(in.Rows.Schema())
	if err != nil {
		return 0, err
	}
	cat := mt.Internal()
	loc := mt.TableLocation(ctx, ref)
	create := func(staging catalog.TableRef, at []icecat.CreateTableOpt) error {
		return createIngestTable(ctx, cat, staging, schema, loc, at)
	}
	fill := func(tgt *planner.WriteTarget) (int64, error) {
		if exists, err := cat.CheckTableExists(ctx, ref.Ident()); err == nil && exists {
			return 0, fmt.Errorf("%w: table %s", errIngestMadeMeanwhile, ref)
		}
		res, err := e.ingestWrite(ctx, tgt, in.Rows)
		if err != nil {
			return 0, err
		}
		return e.finishAppend(ctx, tgt, res)
	}
	return e.staged(ctx, cat, ref, false, create, fill)
}

// ingestWrite conforms the stream to tgt's schema and writes its files,
// through the live workers or, with none, here; nothing is committed. On
// failure every file the statement wrote is deleted again.
func (e *Executor) ingestWrite(ctx context.Context, tgt *planner.WriteTarget, rowsIn array.RecordReader) (*writeResults, error) {
	ref := tgt.Ref
	target, err := table.SchemaToArrowSchema(tgt.Pinned.Table.Schema(), nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema of %s: %w", ref, err)
	}
	if err := conform.UnknownExtensions(rowsIn.Schema()); err != nil {
		return nil, fmt.Errorf("%w: %w", planner.ErrInvalid, err)
	}
	mapping, err := ingestMapping(rowsIn.Schema(), target)
	if err != nil {
		return nil, err
	}
	w := e.NewWrite(tgt)
	id := uuid.MustParse(planner.FragmentUUID(w.WriteUUID, 1<<20))
	var rows int64
	var convErr error
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for rowsIn.Next() {
			rec := rowsIn.RecordBatch()
			if rec.NumRows() == 0 {
				continue
			}
			out, err := ingestConform(ctx, rec, target, mapping, rows)
			if err != nil {
				convErr = err
				yield(nil, err)
				return
			}
			rows += out.NumRows()
			if !yield(out, nil) {
				return
			}
		}
		if err := rowsIn.Err(); err != nil && !errors.Is(err, io.EOF) {
			convErr = err
			yield(nil, err)
		}
	}
	var res *writeResults
	if workers := e.opts.Workers.Live(); len(workers) > 0 {
		res, err = e.ingestOnWorkers(ctx, tgt, w, target, seq, workers)
	} else {
		res, err = ingestLocal(ctx, tgt, id, target, seq)
	}
	if err != nil {
		if convErr != nil {
			err = convErr
		}
		var added []iceberg.DataFile
		if res != nil {
			added = res.Added
		}
		e.removeFiles(ctx, tgt, w.WriteUUID, added)
		return nil, fmt.Errorf("ingest into %s: %w", ref, err)
	}
	res.Rows = rows
	return res, nil
}

// createIngestTable creates the table a stream makes: the stream's schema
// (from ingestSchema), unpartitioned, with commit retries, at loc (made by
// catalog.Mount.TableLocation for the name it will have; "" lets the
// catalog choose) unless at (staged's) says otherwise.
func createIngestTable(ctx context.Context, cat icecat.Catalog, ref catalog.TableRef, schema *iceberg.Schema, loc string, at []icecat.CreateTableOpt) error {
	props := iceberg.Properties{table.CommitNumRetriesKey: strconv.Itoa(planner.DefaultCommitRetries)}
	opts := []icecat.CreateTableOpt{icecat.WithProperties(props)}
	if loc != "" {
		opts = append(opts, icecat.WithLocation(loc))
	}
	opts = append(opts, at...)
	if _, err := cat.CreateTable(ctx, ref.Ident(), schema, opts...); err != nil {
		switch {
		case errors.Is(err, icecat.ErrTableAlreadyExists):
			return fmt.Errorf("%w: table %s", planner.ErrExists, ref)
		case errors.Is(err, icecat.ErrNoSuchNamespace):
			return fmt.Errorf("%w: schema %s.%s", planner.ErrNotFound, ref.Catalog, ref.Schema)
		default:
			return fmt.Errorf("%w: create table %s: %v", planner.ErrInvalid, ref, err)
		}
	}
	return nil
}

// ingestSchema is the Iceberg schema of a new table made from a stream:
// each column's Arrow type in the layout icefloe stores it as
// (conform.StorableType: a string_view column is a string one, a
// fixed_size_list one a list, …).
func ingestSchema(sc *arrow.Schema) (*iceberg.Schema, error) {
	storable, err := conform.StorableSchema(sc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", planner.ErrInvalid, err)
	}
	s, err := table.ArrowSchemaToIcebergWithFreshIDs(storable, true)
	if err != nil {
		return nil, fmt.Errorf("%w: the stream's schema has no Iceberg form: %v", planner.ErrInvalid, err)
	}
	return s, nil
}

// ingestMapping finds, for each target column, the index of the stream
// column of the same name (case-insensitive), or -1.
func ingestMapping(src, target *arrow.Schema) ([]int, error) {
	out := make([]int, target.NumFields())
	used := make([]bool, src.NumFields())
	for i, f := range target.Fields() {
		out[i] = -1
		for j, g := range src.Fields() {
			if !used[j] && strings.EqualFold(f.Name, g.Name) {
				out[i], used[j] = j, true
				break
			}
		}
		if out[i] < 0 && !f.Nullable {
			return nil, fmt.Errorf("%w: the stream has no column %q, which is NOT NULL", planner.ErrInvalid, f.Name)
		}
	}
	for j, u := range used {
		if !u {
			return nil, fmt.Errorf("%w: the table has no column %q", planner.ErrInvalid, src.Field(j).Name)
		}
	}
	return out, nil
}

// ingestConform turns a client batch into a batch of target, refusing
// values Iceberg cannot store (conform.Validate; the batch's rows count
// from firstRow + 1). The caller owns rec; the result is new.
func ingestConform(ctx context.Context, rec arrow.RecordBatch, target *arrow.Schema, mapping []int, firstRow int64) (_ arrow.RecordBatch, err error) {
	// The batch is the client's: arrow-go panics on some arrays it cannot
	// read as they claim to be, which must fail the ingest, not the server.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: the stream's batch cannot be read as its schema says: %v", planner.ErrInvalid, r)
		}
	}()
	mem := memory.DefaultAllocator
	cols := make([]arrow.Array, target.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, f := range target.Fields() {
		if mapping[i] < 0 {
			cols[i] = array.MakeArrayOfNull(mem, f.Type, int(rec.NumRows()))
			continue
		}
		// First the layout icefloe stores (views, large and fixed-size
		// lists, dictionaries, run-end encoding, …: conform.Storable),
		// then the table's type.
		src, err := conform.Storable(ctx, mem, rec.Column(mapping[i]), f.Name)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", planner.ErrInvalid, err)
		}
		defer src.Release()
		var arr arrow.Array
		if arrow.TypeEqual(src.DataType(), f.Type, arrow.CheckMetadata()) || arrow.TypeEqual(src.DataType(), f.Type) {
			arr = array.MakeFromData(array.NewData(f.Type, src.Len(), src.Data().Buffers(), src.Data().Children(), src.NullN(), src.Data().Offset()))
		} else {
			data, err := planner.ConformArray(mem, src.Data(), f.Type, f.Name)
			if err == nil {
				arr = array.MakeFromData(data)
				data.Release()
			} else {
				c, cerr := compute.CastArray(ctx, src, compute.SafeCastOptions(f.Type))
				if cerr != nil {
					return nil, fmt.Errorf("%w: column %q: the stream's %s does not convert to %s: %v", planner.ErrInvalid, f.Name, src.DataType(), f.Type, cerr)
				}
				arr = c
			}
		}
		cols[i] = arr
		if !f.Nullable && arr.NullN() > 0 {
			return nil, fmt.Errorf("%w: NULL in NOT NULL column %s", planner.ErrInvalid, f.Name)
		}
		if err := conform.Validate(arr, f.Name, firstRow); err != nil {
			return nil, fmt.Errorf("%w: %w", planner.ErrInvalid, err)
		}
	}
	return array.NewRecordBatch(target, cols, rec.NumRows()), nil
}

// ingestLocal writes the stream with this process's iceberg-go writer;
// used when no worker is live.
func ingestLocal(ctx context.Context, tgt *planner.WriteTarget, id uuid.UUID, target *arrow.Schema, seq iter.Seq2[arrow.RecordBatch, error]) (*writeResults, error) {
	res := &writeResults{}
	for df, err := range icemeta.Write(ctx, tgt.Pinned.Table, target, seq, id, table.WithMaxWriteWorkers(1)) {
		if err != nil {
			return res, err
		}
		res.Added = append(res.Added, df)
	}
	return res, nil
}

// ingestShare is one worker's DoPut of an ingest.
type ingestShare struct {
	loc    string
	stream flight.FlightService_DoPutClient
	wr     *flight.Writer
}

// ingestOnWorkers streams the conformed batches round-robin into one DoPut
// per live worker, each writing its share with iceberg-go, and collects
// the files they wrote. gRPC flow control holds the client's stream back
// when the workers write slower than it sends: nothing is buffered whole.
func (e *Executor) ingestOnWorkers(ctx context.Context, tgt *planner.WriteTarget, w *wire.Write, target *arrow.Schema, seq iter.Seq2[arrow.RecordBatch, error], workers []planner.Worker) (*writeResults, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var shares []*ingestShare
	wp, err := e.PlanIngest(ctx, tgt, w, workers)
	if err != nil {
		return nil, err
	}
	for i, wk := range workers {
		c, release, err := e.opts.Flight.Hold(wk.Location)
		if err != nil {
			return nil, err
		}
		defer release() // after every share's stream has ended, below
		sh := &ingestShare{loc: wk.Location}
		shares = append(shares, sh)
		if sh.stream, err = c.DoPut(ctx); err != nil {
			return nil, fragmentError(wk.Location, err)
		}
		sh.wr = flight.NewRecordWriter(sh.stream, ipc.WithSchema(target))
		sh.wr.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: wp.Endpoints[i].Ticket})
	}
	var sendErr error
	k := 0
	for rec, err := range seq {
		if err != nil {
			sendErr = err
			break
		}
		sh := shares[k%len(shares)]
		k++
		werr := sh.wr.Write(rec)
		rec.Release()
		if werr != nil {
			// The worker ended the stream; its status comes with Recv.
			sendErr = fmt.Errorf("%w: worker %s stopped reading: %v", planner.ErrWriteFailed, sh.loc, werr)
			break
		}
	}
	if sendErr != nil {
		cancel()
	}
	var raw []wire.WriteResult
	var errs []error
	for _, sh := range shares {
		_ = sh.wr.Close()
		_ = sh.stream.CloseSend()
		for {
			pr, err := sh.stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				if sendErr == nil {
					errs = append(errs, fragmentError(sh.loc, err))
				}
				break
			}
			var rs []wire.WriteResult
			if err := json.Unmarshal(pr.GetAppMetadata(), &rs); err != nil {
				errs = append(errs, fmt.Errorf("%w: worker %s: decode results: %v", planner.ErrWriteFailed, sh.loc, err))
				break
			}
			raw = append(raw, rs...)
		}
	}
	res, derr := decodeResults(tgt.Pinned.Table, raw)
	switch {
	case len(errs) > 0:
		return res, errs[0]
	case sendErr != nil:
		return res, sendErr
	}
	return res, derr
}
