package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
	bindings "github.com/duckdb/duckdb-go-bindings"
	"github.com/duckdb/duckdb-go/v2"
	"golang.org/x/sync/semaphore"
)

// Streamed results.
//
// Query runs a statement as a DuckDB streaming pending result: DuckDB
// computes chunks (≤ 2048 rows) as they are fetched, so the first batch
// leaves before the last is computed and memory stays bounded. One
// producer goroutine fetches the chunks into a queue bounded in chunks and
// in bytes (a chunk of 2048 wide rows can hold hundreds of megabytes, in
// memory DuckDB allocated for its Arrow copy); the reader
// merges them toward QueryOptions.BatchRows. A cancelled context, or
// releasing the reader early, interrupts DuckDB.

// Defaults for QueryOptions.
const (
	// DefaultQueueChunks is the least number of DuckDB chunks the
	// producer may fetch ahead of the reader.
	DefaultQueueChunks = 4
	// DefaultQueueBytes bounds the bytes of the chunks fetched ahead when
	// QueryOptions.BatchBytes is 0; otherwise BatchBytes does. A chunk
	// larger than the bound is fetched alone.
	DefaultQueueBytes = 16 << 20
	// duckChunkRows is the most rows DuckDB puts in a chunk.
	duckChunkRows = 2048
)

// QueryOptions shape how a result leaves DuckDB. The zero value hands out
// DuckDB's chunks as they come.
type QueryOptions struct {
	// BatchRows merges chunks toward this many rows per batch; 0 does not
	// merge.
	BatchRows int
	// BatchBytes cuts a merged batch short of BatchRows where its rows
	// would pass this many bytes (as their chunks' buffers count them), so
	// wide rows stay within what clients accept in one message; 0 means no
	// limit.
	BatchBytes int64
	// FlushAfter hands out what has been merged once its first rows have
	// waited this long, even short of BatchRows, so a slow query still
	// shows its first rows early; 0 waits for BatchRows (or the end).
	FlushAfter time.Duration
	// Allocator holds merged batches; nil means memory.DefaultAllocator.
	Allocator memory.Allocator
}

// Query prepares query and returns a reader of its result streamed out of
// DuckDB; text that is not exactly one statement is refused
// (ErrStatement) before anything runs. Nothing runs until the first Next.
// The caller releases the reader before running anything else on c;
// releasing it early stops the statement.
func (c *Conn) Query(ctx context.Context, query string, o QueryOptions) (array.RecordReader, error) {
	rdr, _, err := c.query(ctx, query, o, false)
	return rdr, err
}

// QueryKept is Query that keeps the prepared statement on c: the next
// QueryKept of the same text on c runs it again without preparing
// (reused says so). The statement lives until c closes; it reads what
// the connection's views and tables are when it runs, so the caller
// keeps those as they were (worker/reuse.go).
func (c *Conn) QueryKept(ctx context.Context, query string, o QueryOptions) (rdr array.RecordReader, reused bool, err error) {
	return c.query(ctx, query, o, true)
}

// keptStatement is a prepared statement QueryKept keeps on a Conn.
type keptStatement struct {
	st     bindings.PreparedStatement
	schema *arrow.Schema
}

func (c *Conn) query(ctx context.Context, query string, o QueryOptions, keep bool) (array.RecordReader, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	var st bindings.PreparedStatement
	var schema *arrow.Schema
	k, reused := c.kept[query]
	if reused {
		st, schema = k.st, k.schema
	} else {
		if err := oneStatement(query); err != nil {
			return nil, false, err
		}
		var err error
		if st, err = c.prepare(query); err != nil {
			return nil, false, err
		}
		if schema, err = c.preparedSchema(st); err != nil {
			bindings.DestroyPrepare(&st)
			return nil, false, err
		}
		if keep {
			if c.kept == nil {
				c.kept = map[string]keptStatement{}
			}
			c.kept[query] = keptStatement{st: st, schema: schema}
		}
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &stream{
		conn: c.raw, stmt: st, schema: schema, opts: o, ctx: sctx, cancel: cancel, parent: ctx,
		chunks: make(chan queued, max(DefaultQueueChunks, o.BatchRows/duckChunkRows)),
		ahead:  semaphore.NewWeighted(queueBytes(o)),
		m:      newMerger(schema, o),
		kept:   keep || reused,
	}
	s.refs.Store(1)
	return s, reused, nil
}

// QuerySchema returns the Arrow schema of a query's result without
// running it.
func (c *Conn) QuerySchema(ctx context.Context, query string) (*arrow.Schema, error) {
	rdr, err := c.Query(ctx, query, QueryOptions{})
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	return rdr.Schema(), nil
}

// preparedSchema is the Arrow schema DuckDB's result of st will have.
func (c *Conn) preparedSchema(st bindings.PreparedStatement) (*arrow.Schema, error) {
	n := int(bindings.PreparedStatementColumnCount(st))
	names := make([]string, n)
	types := make([]bindings.LogicalType, n)
	for i := range n {
		names[i] = bindings.PreparedStatementColumnName(st, bindings.IdxT(i))
		types[i] = bindings.PreparedStatementColumnLogicalType(st, bindings.IdxT(i))
	}
	defer func() {
		for i := range types {
			bindings.DestroyLogicalType(&types[i])
		}
	}()
	var opts bindings.ArrowOptions
	bindings.ConnectionGetArrowOptions(c.raw, &opts)
	defer bindings.DestroyArrowOptions(&opts)
	schema, ed := bindings.NewArrowSchema(opts, types, names)
	if err := errorData(ed); err != nil {
		return nil, fmt.Errorf("engine: arrow schema of the result: %w", err)
	}
	return schema, nil
}

func errorData(ed bindings.ErrorData) error {
	defer bindings.DestroyErrorData(&ed)
	if !bindings.ErrorDataHasError(ed) {
		return nil
	}
	return withoutHints(&duckdb.Error{Type: duckdb.ErrorType(bindings.ErrorDataErrorType(ed)), Msg: bindings.ErrorDataMessage(ed)})
}

// stream is the reader Query returns.
type stream struct {
	refs   atomic.Int64
	conn   bindings.Connection
	stmt   bindings.PreparedStatement
	schema *arrow.Schema
	opts   QueryOptions
	// ctx ends when the caller's context (parent) does or the reader is
	// released; the producer stops then.
	ctx, parent context.Context
	cancel      context.CancelFunc

	start  sync.Once
	chunks chan queued
	// ahead holds the bytes of the chunks in chunks (queueBytes).
	ahead *semaphore.Weighted
	// done closes when the producer has exited; failed is its error,
	// read only after chunks is closed.
	done   chan struct{}
	failed error

	m     *merger
	since time.Time // when the oldest merged chunk arrived
	cur   arrow.RecordBatch
	err   error
	// kept: the statement is the connection's (QueryKept), destroyed
	// when it closes.
	kept bool
}

var _ array.RecordReader = (*stream)(nil)

func (s *stream) Schema() *arrow.Schema          { return s.schema }
func (s *stream) RecordBatch() arrow.RecordBatch { return s.cur }
func (s *stream) Record() arrow.RecordBatch      { return s.cur }
func (s *stream) Err() error                     { return s.err }
func (s *stream) Retain()                        { s.refs.Add(1) }

// Release stops the statement if it still runs, waits for the producer
// and frees everything the stream holds.
func (s *stream) Release() {
	if s.refs.Add(-1) != 0 {
		return
	}
	s.cancel()
	if s.done != nil {
		for q := range s.chunks {
			q.rec.Release()
		}
		<-s.done
	}
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	s.m.release()
	if !s.kept {
		bindings.DestroyPrepare(&s.stmt)
	}
}

// Next hands out the next batch: merged chunks, once BatchRows rows are
// there, FlushAfter has passed, or the result has ended.
func (s *stream) Next() bool {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	if s.err != nil {
		return false
	}
	s.start.Do(func() {
		s.done = make(chan struct{})
		go s.produce()
	})
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if out, ok := s.m.pop(); ok {
			s.cur = out
			return true
		}
		if s.err = s.m.err; s.err != nil {
			return false
		}
		var wait <-chan time.Time
		if s.m.rows > 0 && s.opts.FlushAfter > 0 {
			if timer == nil {
				timer = time.NewTimer(time.Until(s.since.Add(s.opts.FlushAfter)))
			}
			wait = timer.C
		}
		select {
		case q, ok := <-s.chunks:
			if !ok {
				if s.err = s.failed; s.err != nil {
					return false
				}
				return s.flush()
			}
			s.ahead.Release(q.weight)
			b := q.rec
			if s.opts.BatchRows <= 0 && s.opts.BatchBytes <= 0 {
				s.cur = b
				return true
			}
			if s.m.rows == 0 {
				s.since = time.Now()
			}
			s.m.add(b)
			b.Release()
			if len(s.m.ready) > 0 && s.m.rows > 0 {
				s.since = time.Now() // the rest of a chunk cut at BatchRows
			}
		case <-wait:
			return s.flush()
		}
	}
}

// flush hands out the merged chunks, if any.
func (s *stream) flush() bool {
	out, err := s.m.flush()
	if err != nil {
		s.err = err
		return false
	}
	s.cur = out
	return out != nil
}

// produce runs the statement and fetches its chunks into s.chunks until
// the end, an error or the end of s.ctx; it closes s.chunks and s.done.
func (s *stream) produce() {
	defer close(s.done)
	defer close(s.chunks)
	stop := interrupter(s.ctx, s.conn)
	defer stop()
	s.failed = s.fetchAll()
	if s.failed != nil && s.ctx.Err() != nil {
		// Interrupted: say why rather than DuckDB's "Interrupted!".
		if cause := context.Cause(s.parent); cause != nil {
			s.failed = cause
		} else {
			s.failed = context.Canceled
		}
	}
}

func (s *stream) fetchAll() error {
	var pending bindings.PendingResult
	if bindings.PendingPreparedStreaming(s.stmt, &pending) == bindings.StateError {
		msg := bindings.PendingError(pending)
		bindings.DestroyPending(&pending)
		return duckError(msg)
	}
	defer bindings.DestroyPending(&pending)
	var res bindings.Result
	defer bindings.DestroyResult(&res)
	if bindings.ExecutePending(pending, &res) == bindings.StateError {
		return resultError(&res)
	}
	var opts bindings.ArrowOptions
	opts = bindings.ResultGetArrowOptions(&res)
	defer bindings.DestroyArrowOptions(&opts)
	for {
		chunk := bindings.FetchChunk(res)
		if chunk.Ptr == nil {
			if msg := bindings.ResultError(&res); msg != "" {
				return resultError(&res)
			}
			return nil
		}
		rec, ed := bindings.DataChunkToArrowArray(opts, s.schema, chunk)
		bindings.DestroyDataChunk(&chunk)
		if err := errorData(ed); err != nil {
			return fmt.Errorf("engine: convert a result chunk to arrow: %w", err)
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		w := min(util.TotalRecordSize(rec), queueBytes(s.opts))
		if err := s.ahead.Acquire(s.ctx, w); err != nil {
			rec.Release()
			return s.ctx.Err()
		}
		select {
		case s.chunks <- queued{rec, w}:
		case <-s.ctx.Done():
			s.ahead.Release(w)
			rec.Release()
			return s.ctx.Err()
		}
	}
}

// queued is a chunk in the queue and the bytes it holds of the stream's
// ahead.
type queued struct {
	rec    arrow.RecordBatch
	weight int64
}

// queueBytes is how many bytes of chunks a stream of o fetches ahead.
func queueBytes(o QueryOptions) int64 {
	if o.BatchBytes > 0 {
		return o.BatchBytes
	}
	return DefaultQueueBytes
}

func resultError(res *bindings.Result) error {
	msg := bindings.ResultError(res)
	if msg == "" {
		return errors.New("engine: statement failed without a message")
	}
	return withoutHints(&duckdb.Error{Type: duckdb.ErrorType(bindings.ResultErrorType(res)), Msg: msg})
}
