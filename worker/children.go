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
	"github.com/apache/arrow-go/v18/arrow/ipc"
	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

// Defaults of pulling children from peers.
const (
	// DefaultPeerClients bounds the pooled Flight clients, one per peer.
	DefaultPeerClients = 64
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

// peers is the pool of Flight clients of the other workers.
type peers struct {
	mu      sync.Mutex
	clients *lru.Cache[string, flight.Client]
}

func newPeers(size int) *peers {
	c, _ := lru.NewWithEvict[string, flight.Client](size, func(_ string, cl flight.Client) { cl.Close() })
	return &peers{clients: c}
}

func (p *peers) client(location string) (flight.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cl, ok := p.clients.Get(location); ok {
		return cl, nil
	}
	addr, ok := strings.CutPrefix(location, "grpc://")
	if !ok {
		if addr, ok = strings.CutPrefix(location, "grpc+tcp://"); !ok {
			return nil, fmt.Errorf("%w: peer location %q is not grpc://", errInternal, location)
		}
	}
	cl, err := flight.NewClientWithMiddleware(addr, nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		return nil, fmt.Errorf("dial peer %s: %w", location, err)
	}
	p.clients.Add(location, cl)
	return cl, nil
}

func (p *peers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clients.Purge()
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
	ctx, cancel := context.WithCancelCause(ctx)
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
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			if err := s.pullChild(ctx, c, schema, out); err != nil {
				cancel(err)
			}
		}()
	}
	go func() { wg.Wait(); close(out) }()
	rdr := &chanReader{schema: schema, ch: out, ctx: ctx, limit: s.childLimit(ctx)}
	rdr.refs.Store(1)
	loadErr := conn.LoadTable(ctx, view, rdr)
	// Drain what is left so no producer blocks and every batch is freed.
	cancel(nil)
	for b := range out {
		b.Release()
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	if loadErr != nil {
		if err := ctx.Err(); err != nil && errors.Is(context.Cause(ctx), context.Canceled) && rdr.err == nil {
			return loadErr
		}
		return fmt.Errorf("%w: load children into %s: %v", errInternal, view, loadErr)
	}
	return rdr.err
}

// pullChild streams one child, trying its locations in order until one
// answers; once rows have arrived there is no fallback.
func (s *Server) pullChild(ctx context.Context, c wire.Child, schema *arrow.Schema, out chan<- arrow.RecordBatch) error {
	var lastErr error
	for _, loc := range c.Locations {
		started, err := s.pullFrom(ctx, loc, c.Ticket, schema, out)
		if err == nil {
			return nil
		}
		lastErr = err
		if started || ctx.Err() != nil {
			return err
		}
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("%w: child without locations", errInternal)
	}
	return lastErr
}

func (s *Server) pullFrom(ctx context.Context, loc string, ticket []byte, schema *arrow.Schema, out chan<- arrow.RecordBatch) (started bool, err error) {
	wrap := func(err error) error {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		st, _ := status.FromError(err)
		return &childError{location: loc, code: st.Code(), msg: st.Message()}
	}
	cl, err := s.peers.client(loc)
	if err != nil {
		return false, err
	}
	stream, err := cl.DoGet(ctx, &flight.Ticket{Ticket: ticket})
	if err != nil {
		return false, wrap(err)
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(s.opts.Allocator))
	if err != nil {
		return false, wrap(err)
	}
	defer rdr.Release()
	if !rdr.Schema().Equal(schema) {
		return false, &childError{location: loc, code: codes.Internal, msg: "child schema differs from the planned one"}
	}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		select {
		case out <- rec:
			started = true
		case <-ctx.Done():
			rec.Release()
			return started, context.Cause(ctx)
		}
	}
	if err := rdr.Err(); err != nil {
		return started, wrap(err)
	}
	return started, nil
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
