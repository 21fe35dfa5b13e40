package flightsql

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/planner"
)

// clientRows is a client's DoPut stream of record batches (bulk ingest,
// bound parameters), checked before anything reads a batch: each one must
// be valid Arrow as array.ValidateRecordFull checks it (buffers as long
// as the lengths and offsets say, offsets non-negative, increasing and
// within their values, children as long as their parents need, view
// buffers that exist, dictionary indices within their dictionary), else
// the stream ends with planner.ErrInvalid. A stream that does not decode
// (a dictionary batch missing, a message cut short) ends with ErrInvalid
// too; the transport's own errors and cancellation stay what they are.
// Without this check, arrow-go's kernels and the IPC writer index the
// client's buffers by the client's offsets and panic.
type clientRows struct {
	array.RecordReader
	batches int
	err     error
}

func checkedRows(r array.RecordReader) *clientRows { return &clientRows{RecordReader: r} }

func (r *clientRows) Next() bool {
	if r.err != nil || !r.RecordReader.Next() {
		return false
	}
	r.batches++
	if err := array.ValidateRecordFull(r.RecordReader.RecordBatch()); err != nil {
		r.err = fmt.Errorf("%w: batch %d of the stream is not valid Arrow: %v", planner.ErrInvalid, r.batches, err)
		return false
	}
	return true
}

func (r *clientRows) Err() error {
	if r.err != nil {
		return r.err
	}
	err := r.RecordReader.Err()
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return fmt.Errorf("%w: batch %d of the stream cannot be read as Arrow IPC: %v", planner.ErrInvalid, r.batches+1, err)
}
