package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"github.com/icefloe/icefloe/internal/icemeta"
	"github.com/icefloe/icefloe/internal/membudget"
	"github.com/icefloe/icefloe/internal/tracing"
	"github.com/icefloe/icefloe/wire"
)

// DoPut receives one share of a bulk ingest: the stream's descriptor
// command is a sealed write ticket (Write set, no SQL), its batches have
// exactly the target's Arrow schema (the coordinator conformed them). The
// worker writes them as they arrive with iceberg-go and answers one
// PutResult whose app metadata is the JSON array of wire.WriteResult of
// the files it wrote. Nothing is committed here; on failure the files are
// deleted.
func (s *Server) DoPut(stream flight.FlightService_DoPutServer) (err error) {
	start := time.Now()
	ctx, entry := s.auditEntry(stream.Context())
	if s.opts.Audit != nil {
		defer func() { s.finish(entry, start, err) }()
	}
	ctx, end, err := s.begin(ctx)
	if err != nil {
		return toStatus(stream.Context(), err)
	}
	defer end()
	defer func() {
		if p := recover(); p != nil {
			tracing.Logger(ctx, s.log).Error("worker: panic in DoPut", zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			err = fmt.Errorf("%w: panic: %v", errInternal, p)
		}
		err = toStatus(ctx, err)
	}()
	// The stream's batches count toward the process's budget: one is held
	// at a time, and a batch arriving past the budget ends the ingest.
	mem := s.opts.Allocator
	if s.opts.Budget != nil {
		mem = s.opts.Budget.Process("ingest stream")
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(mem))
	if err != nil {
		return fmt.Errorf("%w: ingest stream: %v", wire.ErrMalformed, err)
	}
	defer rdr.Release()
	desc := rdr.LatestFlightDescriptor()
	if desc == nil || len(desc.GetCmd()) == 0 {
		return fmt.Errorf("%w: ingest stream has no ticket", wire.ErrMalformed)
	}
	t, err := s.opts.Key.Open(desc.GetCmd(), time.Now())
	if err != nil {
		return err
	}
	ctx, span := tracing.Continue(ctx, "fragment", t.Trace, attribute.String("icefloe.query_id", t.QueryID), attribute.Bool("icefloe.write", true))
	defer func() { tracing.End(span, err) }()
	noteTicket(ctx, t)
	if err := s.admit(ctx, t); err != nil {
		return err
	}
	w := t.Write
	if w == nil || w.Rewrite || t.SQL != "" {
		return fmt.Errorf("%w: not an ingest ticket", wire.ErrMalformed)
	}
	tbl, err := s.opts.Cache.Open(ctx, w.Table, w.MetadataLocation, w.Props)
	if err != nil {
		return fmt.Errorf("open %s: %w", w.Display, err)
	}
	id, err := uuid.Parse(w.WriteUUID)
	if err != nil {
		return fmt.Errorf("%w: write uuid: %v", wire.ErrMalformed, err)
	}
	target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return fmt.Errorf("%w: arrow schema of %s: %v", errInternal, w.Display, err)
	}
	if err := sameTypes(target, rdr.Schema()); err != nil {
		return fmt.Errorf("%w: ingest stream: %v", wire.ErrMalformed, err)
	}
	in := &ingestRows{rdr: rdr, mem: mem, target: target, queryID: t.QueryID}
	var written []iceberg.DataFile
	for df, werr := range icemeta.Write(ctx, tbl, target, in.records, id, table.WithMaxWriteWorkers(1)) {
		if werr != nil {
			if in.err != nil {
				werr = in.err
			}
			if ctx.Err() != nil {
				werr = context.Cause(ctx)
			}
			s.removeWritten(ctx, tbl, written, w.WriteUUID)
			return werr
		}
		written = append(written, df)
	}
	results := make([]wire.WriteResult, 0, len(written))
	for _, df := range written {
		r, err := encodeResult(tbl, df)
		if err != nil {
			s.removeWritten(ctx, tbl, written, w.WriteUUID)
			return err
		}
		results = append(results, r)
	}
	noteWritten(ctx, results)
	meta, err := json.Marshal(results)
	if err != nil {
		s.removeWritten(ctx, tbl, written, w.WriteUUID)
		return err
	}
	if err := stream.Send(&flight.PutResult{AppMetadata: meta}); err != nil {
		s.removeWritten(ctx, tbl, written, w.WriteUUID)
		return err
	}
	return nil
}

// ingestRows are the batches of an ingest stream as the table's rows: in
// the table's Arrow schema, each held against the budget while it is
// written, NOT NULL checked. err is the first error reading them met.
type ingestRows struct {
	rdr     *flight.Reader
	mem     memory.Allocator
	target  *arrow.Schema
	queryID string
	err     error
}

// records yields the stream's non-empty batches, then its error if any.
func (r *ingestRows) records(yield func(arrow.RecordBatch, error) bool) {
	for r.rdr.Next() {
		rec := r.rdr.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		// Decoded in place from the gRPC message: no allocator sees
		// the batch, so it is held by size while it is written.
		release := func() {}
		if a, ok := r.mem.(*membudget.Account); ok {
			release = a.Hold(util.TotalRecordSize(rec))
		}
		if err := membudget.Check(r.mem); err != nil {
			release()
			r.err = fmt.Errorf("query %s: %w", r.queryID, err)
			yield(nil, r.err)
			return
		}
		for i, f := range r.target.Fields() {
			if !f.Nullable && rec.Column(i).NullN() > 0 {
				release()
				r.err = &queryError{err: fmt.Errorf("NULL in NOT NULL column %s", f.Name)}
				yield(nil, r.err)
				return
			}
		}
		more := yield(array.NewRecordBatch(r.target, rec.Columns(), rec.NumRows()), nil)
		release()
		if !more {
			return
		}
	}
	if err := r.rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		r.err = err
		yield(nil, err)
	}
}

// sameTypes checks that got has want's columns, by position and type.
func sameTypes(want, got *arrow.Schema) error {
	if want.NumFields() != got.NumFields() {
		return fmt.Errorf("%d columns, the table has %d", got.NumFields(), want.NumFields())
	}
	for i, f := range want.Fields() {
		if !arrow.TypeEqual(f.Type, got.Field(i).Type) {
			return fmt.Errorf("column %d is %s, the table's %s is %s", i, got.Field(i).Type, f.Name, f.Type)
		}
	}
	return nil
}
