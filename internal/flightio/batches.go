package flightio

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/status"
)

// ErrMalformed marks a client's stream whose batches are not what they
// claim to be, or that does not decode as Arrow IPC.
var ErrMalformed = errors.New("flightio: malformed Arrow stream")

// Checked wraps a client's DoPut stream of record batches (bulk ingest,
// bound parameters) so each batch is checked whole before anything reads
// it: it must be valid Arrow as array.ValidateRecordFull checks it
// (buffers as long as the lengths and offsets say, offsets non-negative,
// increasing and within their values, children as long as their parents
// need, view buffers that exist, dictionary indices within their
// dictionary), else the stream ends with ErrMalformed. A stream that does
// not decode (a dictionary batch missing, a message cut short) ends with
// ErrMalformed too; the transport's own errors and cancellation stay what
// they are. Without the check, arrow-go's kernels and the IPC writer
// index the client's buffers by the client's offsets and panic.
func Checked(r array.RecordReader) array.RecordReader { return &checked{RecordReader: r} }

type checked struct {
	array.RecordReader
	batches int
	err     error
}

func (r *checked) Next() bool {
	if r.err != nil || !r.RecordReader.Next() {
		return false
	}
	r.batches++
	if err := array.ValidateRecordFull(r.RecordReader.RecordBatch()); err != nil {
		r.err = fmt.Errorf("%w: batch %d of the stream is not valid Arrow: %v", ErrMalformed, r.batches, err)
		return false
	}
	return true
}

func (r *checked) Err() error {
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
	return fmt.Errorf("%w: batch %d of the stream cannot be read as Arrow IPC: %v", ErrMalformed, r.batches+1, err)
}
