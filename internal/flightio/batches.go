package flightio

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/util"
	"google.golang.org/grpc/status"
)

// ErrMalformed marks a client's stream whose batches are not what they
// claim to be, or that does not decode as Arrow IPC.
var ErrMalformed = errors.New("flightio: malformed Arrow stream")

// Checked wraps a client's DoPut stream of record batches (bulk ingest,
// bound parameters) so each batch is checked whole before anything reads
// it: it must be valid Arrow as array.ValidateFull checks each column
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
	rec := r.RecordReader.RecordBatch()
	for i, col := range rec.Columns() {
		// A column of type null has no buffers to misread (arrow-go's
		// IPC reader gives it none, which its validator refuses as a
		// layout missing one); its length is bounded below.
		if col.DataType().ID() == arrow.NULL {
			continue
		}
		if err := array.ValidateFull(col); err != nil {
			r.err = fmt.Errorf("%w: batch %d of the stream is not valid Arrow: column %d (%s): %v", ErrMalformed, r.batches, i, rec.Schema().Field(i).Name, err)
			return false
		}
	}
	// Columns without buffers (type null) take any length the client
	// claims: a batch may not claim more rows than its bytes could hold
	// (a bit each), beyond maxBarrenRows, or filling in its missing
	// columns would allocate what the client chose.
	if size := util.TotalRecordSize(rec); rec.NumRows() > 8*size+maxBarrenRows {
		r.err = fmt.Errorf("%w: batch %d of the stream claims %d rows in %d bytes", ErrMalformed, r.batches, rec.NumRows(), size)
		return false
	}
	return true
}

// maxBarrenRows is the most rows a batch may claim beyond one per bit of
// its buffers.
const maxBarrenRows = 1 << 16

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
