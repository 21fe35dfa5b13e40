package flightio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

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
		if err := array.ValidateFull(col); err != nil && !(strings.Contains(err.Error(), "not valid utf8") && validAsBytes(col)) {
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

// validAsBytes says whether col, whose strings are not all valid UTF-8, is
// valid Arrow once its strings are read as bytes (for strings and lists
// of strings): its layout is sound, and the check of what may be stored
// (internal/conform) refuses the text naming its column and row.
func validAsBytes(col arrow.Array) bool {
	dt, ok := asBytes(col.DataType())
	if !ok {
		return false
	}
	d := retype(col.Data(), dt)
	defer d.Release()
	arr := array.MakeFromData(d)
	defer arr.Release()
	return array.ValidateFull(arr) == nil
}

// asBytes is dt with its string types as the binary types of the same
// layout, for strings and lists of them.
func asBytes(dt arrow.DataType) (arrow.DataType, bool) {
	switch t := dt.(type) {
	case *arrow.StringType:
		return arrow.BinaryTypes.Binary, true
	case *arrow.LargeStringType:
		return arrow.BinaryTypes.LargeBinary, true
	case *arrow.ListType:
		if el, ok := asBytes(t.Elem()); ok {
			f := t.ElemField()
			f.Type = el
			return arrow.ListOfField(f), true
		}
	case *arrow.LargeListType:
		if el, ok := asBytes(t.Elem()); ok {
			f := t.ElemField()
			f.Type = el
			return arrow.LargeListOfField(f), true
		}
	}
	return nil, false
}

// retype is d's buffers and children under dt (see asBytes).
func retype(d arrow.ArrayData, dt arrow.DataType) arrow.ArrayData {
	var children []arrow.ArrayData
	switch t := dt.(type) {
	case *arrow.ListType:
		children = []arrow.ArrayData{retype(d.Children()[0], t.Elem())}
	case *arrow.LargeListType:
		children = []arrow.ArrayData{retype(d.Children()[0], t.Elem())}
	}
	out := array.NewData(dt, d.Len(), d.Buffers(), children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	return out
}
