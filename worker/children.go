package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/membudget"
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
// the views the children name: a view the fragment reads once streams
// into its query, the pulls starting when DuckDB first reads it (so a
// hash join pulls its probe side only once its build side is in); others
// load into temp tables first. It returns the readers of the streamed
// views, whose errors say why a query over them failed.
func (s *Server) loadChildren(ctx context.Context, conn *engine.Conn, t *wire.Ticket) ([]*chanReader, error) {
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
	var streamed []*chanReader
	for _, v := range views {
		if byView[v][0].Once && streams(ctx) {
			rdr, err := s.streamView(ctx, conn, v, byView[v])
			if err != nil {
				return streamed, err
			}
			streamed = append(streamed, rdr)
			continue
		}
		if err := s.loadView(ctx, conn, v, byView[v]); err != nil {
			return streamed, err
		}
	}
	return streamed, nil
}

type noStreamsKey struct{}

// withoutStreams has the fragment run under ctx load every view of its
// children into a table.
func withoutStreams(ctx context.Context) context.Context {
	return context.WithValue(ctx, noStreamsKey{}, true)
}

// streams says whether the fragment run under ctx may stream views.
func streams(ctx context.Context) bool { return ctx.Value(noStreamsKey{}) == nil }

// scannedTwice says whether a fragment failed because DuckDB's plan
// scans a streamed view a second time (engine.ErrStreamRead), before any
// row left: its views must be loaded instead. The planner streams only
// views DuckDB's plan over its stand-ins scans once; this is for a plan
// that differs on the worker.
func scannedTwice(err error, sent *sentRows) bool {
	return err != nil && sent.rows == 0 && strings.Contains(err.Error(), engine.ErrStreamRead.Error())
}

// streamsErr is the first error of a streamed view's pulls.
func streamsErr(streams []*chanReader) error {
	for _, r := range streams {
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

// openView prepares the pulls of children into one view, through a
// bounded channel: the reader starts them at its first Next; stop ends
// them, frees what they left and returns their failure.
func (s *Server) openView(ctx context.Context, children []wire.Child) (rdr *chanReader, stop func() error, err error) {
	first, err := s.opts.Key.Open(children[0].Ticket, time.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("%w: child ticket: %v", errInternal, err)
	}
	schema, err := flight.DeserializeSchema(first.Schema, alloc(ctx))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: child schema: %v", errInternal, err)
	}
	// The pulls end on the first failure; DuckDB's read then ends with the
	// stream (the reader reports why), never by interrupting it mid-scan:
	// an interrupted scan may still ask a released stream for its error.
	pulls, cancel := context.WithCancelCause(ctx)
	out := make(chan arrow.RecordBatch, childBuffer)
	rdr = &chanReader{schema: schema, ch: out, ctx: pulls, limit: s.childLimit(ctx)}
	rdr.refs.Store(1)
	var started atomic.Bool
	rdr.start = func() {
		started.Store(true)
		sem := make(chan struct{}, DefaultChildParallelism)
		var wg sync.WaitGroup
		for _, c := range children {
			wg.Go(func() {
				select {
				case sem <- struct{}{}:
				case <-pulls.Done():
					return
				}
				defer func() { <-sem }()
				if err := s.pullChild(pulls, c, schema, out); err != nil {
					cancel(err)
				}
			})
		}
		go func() { wg.Wait(); close(out) }()
	}
	stop = func() error {
		cancel(nil)
		if !started.Load() {
			return nil
		}
		// Drain what is left so no pull blocks and every batch is freed.
		for b := range out {
			b.Release()
		}
		if cause := context.Cause(pulls); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		return nil
	}
	return rdr, stop, nil
}

// loadView pulls children into the temp table view.
func (s *Server) loadView(ctx context.Context, conn *engine.Conn, view string, children []wire.Child) error {
	rdr, stop, err := s.openView(ctx, children)
	if err != nil {
		return err
	}
	rdr.startOnce()
	loadErr := conn.LoadTable(ctx, view, rdr)
	if err := stop(); err != nil {
		return err
	}
	if loadErr != nil {
		if err := ctx.Err(); err != nil && rdr.err == nil {
			return loadErr
		}
		return fmt.Errorf("%w: load children into %s: %v", errInternal, view, loadErr)
	}
	return rdr.err
}

// streamView makes view a stream of the children, which DuckDB scans as
// the fragment's query runs (engine.Conn.Stream); the pulls end when the
// connection closes. The children of a stream never read are released
// then, so the producers of hash exchanges know their partitions'
// consumer is done.
func (s *Server) streamView(ctx context.Context, conn *engine.Conn, view string, children []wire.Child) (*chanReader, error) {
	rdr, stop, err := s.openView(ctx, children)
	if err != nil {
		return nil, err
	}
	var rows int64
	for _, c := range children {
		rows += c.Rows
	}
	if rows == 0 {
		rows = -1
	}
	conn.Hold(func() {
		unread := !rdr.started()
		stop()
		rdr.Release()
		if unread && children[0].Once {
			s.dropChildren(ctx, children)
		}
	})
	if err := conn.Stream(ctx, view, rdr, rows); err != nil {
		return nil, fmt.Errorf("%w: stream children into %s: %v", errInternal, view, err)
	}
	return rdr, nil
}

// dropWait bounds how long a fragment waits for the producers of the
// children it never read to hear that it is done.
const dropWait = 5 * time.Second

// dropChildren tells the worker of each hash exchange partition among
// children that its consumer is done (wire.ActionReleasePartition), so
// the producer frees what it holds for it at once rather than keep it
// until the tickets expire. Failures are ignored: the partition then
// waits for its expiry.
func (s *Server) dropChildren(ctx context.Context, children []wire.Child) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dropWait)
	defer cancel()
	sem := make(chan struct{}, DefaultChildParallelism)
	var wg sync.WaitGroup
	for _, c := range children {
		if len(c.Locations) == 0 {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			s.peers.Action(ctx, c.Locations[0], wire.ActionReleasePartition, c.Ticket)
		})
	}
	wg.Wait()
}

// pullChild streams one child, trying its locations in order until one
// answers; once rows have arrived there is no fallback. A failure is the
// child's own status, with the location it came from.
func (s *Server) pullChild(ctx context.Context, c wire.Child, schema *arrow.Schema, out chan<- arrow.RecordBatch) error {
	if len(c.Locations) == 0 {
		return fmt.Errorf("%w: child without locations", errInternal)
	}
	err := s.peers.Pull(ctx, c.Locations, c.Ticket, flightclient.PullOptions{
		Allocator: alloc(ctx),
		CheckSchema: func(got *arrow.Schema) error {
			if !got.Equal(schema) {
				return errors.New("child schema differs from the planned one")
			}
			return nil
		},
	}, membudget.Guard(alloc(ctx), flightclient.SendTo(ctx, out, flightclient.Batch)))
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
	// start starts what feeds ch, at the first Next.
	start func()
	once  sync.Once
	begun atomic.Bool
}

// startOnce starts the feed of ch if it has not started.
func (r *chanReader) startOnce() {
	r.once.Do(func() {
		r.begun.Store(true)
		if r.start != nil {
			r.start()
		}
	})
}

// started says whether the feed started.
func (r *chanReader) started() bool { return r.begun.Load() }

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
	r.startOnce()
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
