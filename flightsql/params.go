package flightsql

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/icefloe/icefloe/internal/flightio"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/statement"
)

// Parameter binding.
//
// A client binds values to a prepared statement's placeholders with one
// DoPut(CommandPreparedStatementQuery) whose batches hold one row per
// execution. The coordinator keeps no state, so the bound rows travel in a
// new sealed handle that DoPut returns (DoPutPreparedStatementResult);
// GetFlightInfo on that handle plans the query with the values (one row) or
// runs the update for every row. DoPut(CommandPreparedStatementUpdate)
// (ADBC's executemany, JDBC's executeUpdate and executeBatch) carries its
// rows in the same call; an INSERT … VALUES writes them all in one commit
// (statement.Executor.ExecBatch).

// maxParamBytes bounds the bound rows carried in a handle.
const maxParamBytes = 4 << 20

// ParameterSchemer is the capability of describing a statement's
// placeholders (Capabilities.Parameters); *statement.Executor has it.
// Without it prepared statements report an empty parameter schema.
type ParameterSchemer interface {
	Parameters(ctx context.Context, s planner.Session, st *parse.Statement) (*arrow.Schema, error)
}

var _ ParameterSchemer = (*statement.Executor)(nil)

// parameterSchema is the parameter schema of a prepared statement.
func (s *Server) parameterSchema(ctx context.Context, sess planner.Session, st *parse.Statement) (*arrow.Schema, error) {
	ps := s.opts.Capabilities.Parameters
	if ps == nil {
		return emptySchema, nil
	}
	return ps.Parameters(ctx, sess, st)
}

// readParams reads a parameter stream to its end and returns its batches
// (retained: the caller releases them) and whether it had any column.
func readParams(stream flight.MessageReader) ([]arrow.RecordBatch, error) {
	rdr := flightio.Checked(stream)
	var recs []arrow.RecordBatch
	for rdr.Next() {
		rec := rdr.RecordBatch()
		if rec.NumCols() == 0 {
			continue
		}
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		releaseAll(recs)
		return nil, fmt.Errorf("flightsql: read parameters: %w", err)
	}
	return recs, nil
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// encodeParams writes batches as one Arrow IPC stream.
func encodeParams(recs []arrow.RecordBatch) ([]byte, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(recs[0].Schema()))
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			return nil, fmt.Errorf("flightsql: encode parameters: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("flightsql: encode parameters: %w", err)
	}
	if buf.Len() > maxParamBytes {
		return nil, fmt.Errorf("%w: bound parameters exceed %d bytes; use executemany (DoPut of the update) for large batches",
			planner.ErrInvalid, maxParamBytes)
	}
	return buf.Bytes(), nil
}

// decodeParams reads the batches encodeParams wrote; the caller releases
// them.
func decodeParams(b []byte, alloc memory.Allocator) ([]arrow.RecordBatch, error) {
	if len(b) == 0 {
		return nil, nil
	}
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(alloc))
	if err != nil {
		return nil, ErrHandle
	}
	defer r.Release()
	var recs []arrow.RecordBatch
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil {
		releaseAll(recs)
		return nil, ErrHandle
	}
	return recs, nil
}

// bindParameters serves DoPut(CommandPreparedStatementQuery): it returns a
// handle that carries the bound rows, or the same handle when the stream
// binds nothing.
func (s *Server) bindParameters(cmd flightsql.PreparedStatementQuery, rdr flight.MessageReader) ([]byte, error) {
	h, err := s.prepared(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	recs, err := readParams(rdr)
	if err != nil {
		return nil, err
	}
	defer releaseAll(recs)
	if len(recs) == 0 {
		return cmd.GetPreparedStatementHandle(), nil
	}
	if h.Params, err = encodeParams(recs); err != nil {
		return nil, err
	}
	return seal(s.opts.Key, preparedQueryID, h, s.opts.PreparedTTL)
}

// updateWithParameters serves DoPut(CommandPreparedStatementUpdate) of
// the prepared statement h (st, parsed from its text): the update runs
// for every row of the stream (or of the rows bound before), and the
// counts add up.
func (s *Server) updateWithParameters(ctx context.Context, h preparedHandle, st *parse.Statement, rdr flight.MessageReader) (int64, error) {
	recs, err := readParams(rdr)
	if err != nil {
		return 0, err
	}
	defer releaseAll(recs)
	if !h.Update {
		return 0, ErrNotQuery
	}
	if len(recs) == 0 {
		if recs, err = decodeParams(h.Params, s.alloc); err != nil {
			return 0, err
		}
		defer releaseAll(recs)
	}
	return s.execBatch(ctx, h.session(), st, recs)
}

// execBatch runs an update once, or for every row of the parameter
// batches, and returns the total count.
func (s *Server) execBatch(ctx context.Context, sess planner.Session, st *parse.Statement, recs []arrow.RecordBatch) (int64, error) {
	queryreg.From(ctx).Run()
	if len(recs) == 0 {
		return s.execute(ctx, sess, st)
	}
	return s.opts.Backend.ExecBatch(ctx, sess, st, recs)
}

// preparedInfo is GetFlightInfo of a prepared statement (st, parsed from
// h's text) with the rows bound to its handle.
func (s *Server) preparedInfo(ctx context.Context, h preparedHandle, st *parse.Statement, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	recs, err := decodeParams(h.Params, s.alloc)
	if err != nil {
		return nil, err
	}
	defer releaseAll(recs)
	if h.Update {
		n, err := s.execBatch(ctx, h.session(), st, recs)
		if err != nil {
			return nil, err
		}
		return s.countInfo(n, desc)
	}
	rows, err := planner.ParamRows(recs)
	if err != nil {
		return nil, err
	}
	switch len(rows) {
	case 0:
		return s.queryInfo(ctx, h.session(), st, desc)
	case 1:
		return s.queryInfo(ctx, h.session(), st, desc, rows[0]...)
	}
	return nil, fmt.Errorf("%w: a query bound to %d parameter rows; bind one row per execution", planner.ErrUnsupported, len(rows))
}
