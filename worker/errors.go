package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/internal/datacache"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/membership"
	"github.com/icefloe/icefloe/internal/membudget"
	"github.com/icefloe/icefloe/wire"
)

// errInternal marks a fault of the worker or of the ticket the coordinator
// built, not of the client's statement.
var errInternal = errors.New("worker: internal error")

// Sentinels of failed actions.
var (
	// errBadAction: an action's body does not decode (InvalidArgument).
	errBadAction = errors.New("worker: malformed action")
	// errCoordinatorAction: an action that the coordinator serves, not a
	// worker (Unimplemented).
	errCoordinatorAction = errors.New("worker: action served by the coordinator")
)

// actionError is a failed action whose message is exactly msg; kind, a
// sentinel above, decides its code.
type actionError struct {
	kind error
	msg  string
}

func (e *actionError) Error() string { return e.msg }
func (e *actionError) Unwrap() error { return e.kind }

// queryError is DuckDB failing to run the fragment SQL or to produce its
// rows, e.g. a division by zero or a failed cast on the data.
type queryError struct{ err error }

func (e *queryError) Error() string { return "run fragment: " + e.err.Error() }
func (e *queryError) Unwrap() error { return e.err }

// readError is a failure to read a table's data: a data or delete file that
// cannot be opened or decoded. File names the failing data file when it is
// known, otherwise the files the read was over.
type readError struct {
	table string
	file  string
	err   error
}

func (e *readError) Error() string {
	return fmt.Sprintf("read %s data file %s: %v", e.table, e.file, e.err)
}
func (e *readError) Unwrap() error { return e.err }

// toStatus turns an error of DoGet into a gRPC status. It is the one place
// where the worker chooses codes. ctx is the DoGet's context: why it ended
// decides over the error it caused.
func toStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	st, _ := status.FromError(statusOf(ctx, err))
	// No message leaves with a catalog's secret in it.
	if clean := catalog.ScrubText(st.Message()); clean != st.Message() {
		return status.Error(st.Code(), clean)
	}
	return st.Err()
}

func statusOf(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if st := contextStatus(ctx, err); st != nil {
		return st
	}
	if st := sentinelStatus(err); st != nil {
		return st
	}
	return wrappedStatus(err)
}

// contextStatus is the status of a call that ended because the worker
// shuts down, an operator cancelled its query, the client went away or a
// deadline passed; nil for any other error.
func contextStatus(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, errShuttingDown) || errors.Is(context.Cause(ctx), errShuttingDown):
		return status.Error(codes.Unavailable, errShuttingDown.Error())
	case errors.Is(err, errQueryCancelled) || errors.Is(context.Cause(ctx), errQueryCancelled):
		return status.Error(codes.Canceled, "query cancelled by an operator (CALL system.cancel_query)")
	case errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "stream cancelled")
	case errors.Is(err, errStatementTimeout):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	}
	return nil
}

// sentinelStatus is the status of one of the worker's, membership's or
// wire's sentinel errors; nil for any other error.
func sentinelStatus(err error) error {
	switch {
	// A coordinator's key check sealed with another key, or not one.
	case errors.Is(err, membership.ErrKeyMismatch):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, membership.ErrMalformed):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, errBadAction):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, errCoordinatorAction):
		return status.Error(codes.Unimplemented, err.Error())
	// Ticket errors carry only their fixed text: nothing about the key.
	case errors.Is(err, wire.ErrUnsealed):
		return status.Error(codes.Unauthenticated, wire.ErrUnsealed.Error())
	case errors.Is(err, wire.ErrExpired):
		return status.Error(codes.Unauthenticated, wire.ErrExpired.Error())
	case errors.Is(err, wire.ErrVersion):
		return status.Error(codes.InvalidArgument, wire.ErrVersion.Error())
	case errors.Is(err, wire.ErrMalformed):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, errUnauthenticated):
		return status.Error(codes.Unauthenticated, err.Error())
	case errors.Is(err, errNotYours), errors.Is(err, errUnbound), errors.Is(err, errClusterOnly):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, errPlannedBefore):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, errDropped):
		return status.Error(codes.NotFound, err.Error())
	}
	return nil
}

// wrappedStatus is the status of what is left: a child fragment's error,
// a status already, exhausted resources, DuckDB's errors, missing or
// changed files; Internal otherwise.
func wrappedStatus(err error) error {
	var ce *childError
	if errors.As(err, &ce) {
		if ce.code == codes.InvalidArgument {
			// The statement failed on the data there: the same message
			// the child gave, not one more layer naming where.
			return status.Error(ce.code, ce.msg)
		}
		return status.Error(ce.code, ce.Error())
	}
	if _, ok := status.FromError(err); ok {
		// Already a status, e.g. from sending to a client that went away.
		return err
	}
	if admit.Exhausted(err) || membudget.Exhausted(err) {
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	var qe *queryError
	if errors.As(err, &qe) {
		// Client SQL reaches no file (table functions are refused), so a
		// DuckDB IO error is a data file of a direct scan (or the spill
		// folder): not the client's query.
		if msg := qe.err.Error(); strings.HasPrefix(msg, "IO Error") {
			if strings.Contains(msg, "No files found") || strings.Contains(msg, "No such file") {
				return status.Error(codes.NotFound, err.Error())
			}
			return status.Error(codes.Internal, err.Error())
		}
		return status.Error(codes.InvalidArgument, engine.WithoutExcerpt(qe.err.Error()))
	}
	if errors.Is(err, fs.ErrNotExist) {
		return status.Error(codes.NotFound, err.Error())
	}
	if errors.Is(err, datacache.ErrChanged) {
		// A data file no longer is what the table's metadata says.
		return status.Error(codes.DataLoss, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// isContextErr tells whether err is the end of the DoGet's context rather
// than a failure of its own.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errShuttingDown)
}
