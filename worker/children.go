package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/wire"
)

// Defaults of pulling children from peers.
const (
	// DefaultPeerClients bounds the pooled Flight clients, one per peer.
	DefaultPeerClients = flightclient.DefaultPoolSize
	// DefaultChildParallelism is how many children of one view are pulled
	// at once.
	DefaultChildParallelism = 8
	// childBuffer is how many batches may wait between the pulls and
	// DuckDB: bounded, so a fast peer cannot fill memory.
	childBuffer = 8
)

// childError is a child fragment failing: the parent fails with the
// child's code, its message and the location it was pulled from.
type childError struct {
	location string
	code     codes.Code
	msg      string
}

func (e *childError) Error() string {
	return fmt.Sprintf("child fragment at %s: %s", e.location, e.msg)
}

type childLimitKey struct{}

func (s *Server) childLimit(ctx context.Context) int64 {
	n, _ := ctx.Value(childLimitKey{}).(int64)
	return n
}

// loadChildren pulls every child of t from its peers, in parallel, into
// the temp tables the children name.
func (s *Server) loadChildren(ctx context.Context, conn *engine.Conn, t *wire.Ticket) error {
	if t.ChildLimit > 0 {
		ctx = context.WithValue(ctx, childLimitKey{}, t.ChildLimit)
	}
	var views []string
	byView := map[string][]wire.Child{}
	for _, c := range t.Children {
		if _, ok := byView[c.View]; !ok {
			views = append(views, c.View)
		}
		byView[c.View] = append(byView[c.View], c)
	}
	for _, v := range views {
		if err := s.loadView(ctx, conn, v, byView[v]); err != nil {
			return err
		}
	}
	return nil
}

// loadView pulls children into one view through a bounded channel.
func (s *Server) loadView(ctx context.Context, conn *engine.Conn, view string, children []wire.Child) error {
	first, err := s.opts.Key.Open(children[0].Ticket, time.Now())
	if err != nil {
		return fmt.Errorf("%w: child ticket: %v", errInternal, err)
	}
	schema, err := flight.DeserializeSchema(first.Schema, s.opts.Allocator)
	if err != nil {
		return fmt.Errorf("%w: child schema: %v", errInternal, err)
	}
	// The pulls end on the first failure; DuckDB's load then ends with the
	// stream (the reader reports why), never by interrupting it mid-scan:
	// an interrupted scan may still ask a released stream for its error.
	pulls, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	out := make(chan arrow.RecordBatch, childBuffer)
	sem := make(chan struct{}, DefaultChildParallelism)
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-pulls.Done():
				return
			}
			defer func() { <-sem }()
			if err := s.pullChild(pulls, c, schema, out); err != nil {
				cancel(err)
			}
		}()
	}
	go func() { wg.Wait(); close(out) }()
	rdr := &chanReader{schema: schema, ch: out, ctx: pulls, limit: s.childLimit(ctx)}
	rdr.refs.Store(1)
	loadErr := conn.LoadTable(ctx, view, rdr)
	// Drain what is left so no producer blocks and every batch is freed.
	cancel(nil)
	for b := range out {
		b.Release()
	}
	if cause := context.Cause(pulls); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	if loadErr != nil {
		if err := ctx.Err(); err != nil && rdr.err == nil {
			return loadErr
		}
		return fmt.Errorf("%w: load children into %s: %v", errInternal, view, loadErr)
	}
	return rdr.err
}

// pullChild streams one child, trying its locations in order until one
// answers; once rows have arrived there is no fallback. A failure is the
// child's own status, with the location it came from.
func (s *Server) pullChild(ctx context.Context, c wire.Child, schema *arrow.Schema, out chan<- arrow.RecordBatch) error {
	if len(c.Locations) == 0 {
		return fmt.Errorf("%w: child without locations", errInternal)
	}
	err := s.peers.Pull(ctx, c.Locations, c.Ticket, flightclient.PullOptions{
		Allocator: s.opts.Allocator,
		CheckSchema: func(got *arrow.Schema) error {
			if !got.Equal(schema) {
				return errors.New("child schema differs from the planned one")
			}
			return nil
		},
	}, flightclient.SendTo(ctx, out, flightclient.Batch))
	var pe *flightclient.PullError
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	last := pe.Last()
	st, ok := status.FromError(last.Err)
	if !ok {
		// Not a status from the peer: the schema check or dialing.
		return &childError{location: last.Location, code: codes.Internal, msg: last.Err.Error()}
	}
	return &childError{location: last.Location, code: st.Code(), msg: st.Message()}
}

// chanReader is an array.RecordReader over batches arriving on a channel.
// DuckDB calls it from its own threads.
type chanReader struct {
	refs   atomic.Int64
	schema *arrow.Schema
	ch     <-chan arrow.RecordBatch
	ctx    context.Context
	cur    arrow.RecordBatch
	err    error
	// limit > 0 ends the stream once that many rows have been read.
	limit, rows int64
}

func (r *chanReader) Retain() { r.refs.Add(1) }
func (r *chanReader) Release() {
	if r.refs.Add(-1) == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}
func (r *chanReader) Schema() *arrow.Schema          { return r.schema }
func (r *chanReader) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *chanReader) Record() arrow.RecordBatch      { return r.cur }
func (r *chanReader) Err() error                     { return r.err }
func (r *chanReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.limit > 0 && r.rows >= r.limit {
		return false
	}
	b, ok := <-r.ch
	if ok {
		r.rows += b.NumRows()
	}
	if !ok {
		if cause := context.Cause(r.ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			r.err = cause
		}
		return false
	}
	r.cur = b
	return true
}
