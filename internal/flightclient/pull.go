package flightclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/tracing"
)

// PullOptions configure one Pull.
type PullOptions struct {
	// Allocator reads the stream; nil means memory.DefaultAllocator.
	Allocator memory.Allocator
	// CheckSchema, when set, is given each stream's schema before its
	// first batch; an error fails the pull without trying another
	// location (the ticket, not the location, is wrong).
	CheckSchema func(*arrow.Schema) error
	// Client, when set, resolves a location before the pool does (e.g.
	// "" for the connection the caller already has); ok false falls
	// through to the pool.
	Client func(loc string) (cl flight.Client, ok bool)
	// OnUnavailable, when set, is told each location that answered
	// codes.Unavailable (e.g. so membership can take a dead worker out
	// of planning); the pull goes on to the next location as usual.
	OnUnavailable func(loc string)
}

// Attempt is one location a pull tried and why it failed.
type Attempt struct {
	Location string
	Err      error
}

// PullError is a pull that failed at every location it tried. The last
// attempt decided: it is the one whose error Unwrap returns.
type PullError struct {
	Attempts []Attempt
	// Started says batches had arrived from the last location before it
	// failed, so no other location was tried after it.
	Started bool
}

func (e *PullError) Error() string {
	parts := make([]string, len(e.Attempts))
	for i, a := range e.Attempts {
		parts[i] = fmt.Sprintf("%s: %v", a.Location, a.Err)
	}
	return strings.Join(parts, "; ")
}

// Unwrap returns the last attempt's error.
func (e *PullError) Unwrap() error { return e.Last().Err }

// Last returns the attempt that decided.
func (e *PullError) Last() Attempt {
	if len(e.Attempts) == 0 {
		return Attempt{Err: errors.New("no location")}
	}
	return e.Attempts[len(e.Attempts)-1]
}

// errHandled marks an error of the caller's own each callback.
type errHandled struct{ err error }

func (e errHandled) Error() string { return e.err.Error() }

// Pull DoGets ticket from the first of locs that answers and hands each
// batch to each, which owns it (and releases it) from then on. It moves to
// the next location only while no batch has been handed over and ctx is
// live. An error from each ends the pull and is returned as is; failures
// of the locations come back as a *PullError.
func (p *Pool) Pull(ctx context.Context, locs []string, ticket []byte, o PullOptions, each func(arrow.RecordBatch) error) error {
	if len(locs) == 0 {
		return &PullError{Attempts: []Attempt{{Err: errors.New("endpoint has no location")}}}
	}
	pe := &PullError{}
	for _, loc := range locs {
		started, err := p.pullFrom(ctx, loc, ticket, o, each)
		if err == nil {
			return nil
		}
		var own errHandled
		if errors.As(err, &own) {
			return own.err
		}
		if o.OnUnavailable != nil && status.Code(err) == codes.Unavailable {
			o.OnUnavailable(loc)
		}
		pe.Attempts = append(pe.Attempts, Attempt{Location: loc, Err: err})
		pe.Started = started
		if started || ctx.Err() != nil || errors.Is(err, errSchema) || final(err) {
			break
		}
	}
	return pe
}

// SendTo returns a Pull callback that sends each batch on out, wrapped by
// wrap, until ctx is done: then it releases the batch and returns ctx's
// cause.
func SendTo[T any](ctx context.Context, out chan<- T, wrap func(arrow.RecordBatch) T) func(arrow.RecordBatch) error {
	return func(rec arrow.RecordBatch) error {
		select {
		case out <- wrap(rec):
			return nil
		case <-ctx.Done():
			rec.Release()
			return context.Cause(ctx)
		}
	}
}

// Batch is the wrap of SendTo for a channel of batches.
func Batch(rec arrow.RecordBatch) arrow.RecordBatch { return rec }

// final says whether a location's error would be the same at every
// location: the fragment ran out of memory or disk (ResourceExhausted) or
// ran past its statement timeout (DeadlineExceeded), so it is not tried
// again elsewhere.
func final(err error) bool {
	switch status.Code(err) {
	case codes.ResourceExhausted, codes.DeadlineExceeded:
		return true
	}
	return false
}

// errSchema marks a CheckSchema refusal, after which no location is tried.
var errSchema = errors.New("flightclient: schema refused")

type schemaError struct{ err error }

func (e schemaError) Error() string { return e.err.Error() }
func (e schemaError) Unwrap() []error {
	return []error{e.err, errSchema}
}

// client resolves loc, and returns the func that lets go of the client.
func (p *Pool) client(loc string, o PullOptions) (flight.Client, func(), error) {
	if o.Client != nil {
		if cl, ok := o.Client(loc); ok {
			return cl, func() {}, nil
		}
	}
	return p.Hold(loc)
}

func (p *Pool) pullFrom(ctx context.Context, loc string, ticket []byte, o PullOptions, each func(arrow.RecordBatch) error) (started bool, err error) {
	cl, release, err := p.client(loc, o)
	if err != nil {
		return false, err
	}
	defer release()
	// One span per location tried: a fallback shows as a failed pull
	// followed by the next.
	ctx, span := tracing.Span(ctx, "pull", attribute.String("icefloe.peer", loc))
	defer func() {
		span.SetAttributes(attribute.Bool("icefloe.started", started))
		tracing.End(span, err)
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := cl.DoGet(ctx, &flight.Ticket{Ticket: ticket})
	if err != nil {
		return false, err
	}
	alloc := o.Allocator
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(alloc))
	if err != nil {
		return false, err
	}
	defer rdr.Release()
	if o.CheckSchema != nil {
		if err := o.CheckSchema(rdr.Schema()); err != nil {
			return false, schemaError{err}
		}
	}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		started = true
		if err := each(rec); err != nil {
			return true, errHandled{err}
		}
	}
	return started, rdr.Err()
}
