package flightsql

import (
	"context"
	"errors"
	"regexp"
	"strings"

	icecat "github.com/apache/iceberg-go/catalog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/flightio"
	"github.com/icefloe/icefloe/internal/membership"
	"github.com/icefloe/icefloe/internal/membudget"
	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

// Errors of this package.
var (
	// ErrHandle: a prepared-statement handle or ticket is not one this
	// cluster issued, or has expired (InvalidArgument).
	ErrHandle = errors.New("flightsql: invalid or expired handle")
	// ErrNotQuery: a statement that returns rows was sent as an update
	// (InvalidArgument).
	ErrNotQuery = errors.New("flightsql: statement returns rows; execute it as a query")
	// ErrWorkerTicket: a ticket planned for a worker was sent to the
	// coordinator (FailedPrecondition).
	ErrWorkerTicket = errors.New("flightsql: this ticket is served by a worker; DoGet it at one of its endpoint's locations")
	// ErrDraining: the server is shutting down and takes no new statements
	// (Unavailable).
	ErrDraining = errors.New("flightsql: the server is draining: it takes no new statements; connect again (another coordinator answers) and retry")
	// errDrainCancelled: a statement still running when the drain's grace
	// period ended (Unavailable).
	errDrainCancelled = errors.New("flightsql: the server is draining: the statement did not finish within the drain grace period and was cancelled")
	// ErrStatementTooLarge: a statement's text is longer than
	// Options.MaxStatementBytes (ResourceExhausted).
	ErrStatementTooLarge = errors.New("flightsql: statement too large")
	// errNoRenew: RenewFlightEndpoint on a server whose backend cannot
	// renew tickets (Unimplemented).
	errNoRenew = errors.New("flightsql: RenewFlightEndpoint: the backend cannot renew tickets")
	// ErrSessionOption: a session option's value is over its size
	// (InvalidArgument).
	ErrSessionOption = errors.New("flightsql: session option too large")
	// ErrNoSession: the session middleware is not installed (FailedPrecondition).
	ErrNoSession = errors.New("flightsql: no session: install Server.ServerOptions on the gRPC server")
)

// codeTable maps sentinel errors to gRPC codes, first match wins.
var codeTable = []struct {
	err  error
	code codes.Code
}{
	// A catalog that cannot be reached or refuses icefloe's credentials
	// comes first: the message names the catalog, never the secret.
	{catalog.ErrUnavailable, codes.Unavailable},
	{catalog.ErrUnauthenticated, codes.Unauthenticated},
	{membership.ErrKeyMismatch, codes.PermissionDenied},
	{membership.ErrMalformed, codes.InvalidArgument},
	{planner.ErrSyntax, codes.InvalidArgument},
	{planner.ErrInvalid, codes.InvalidArgument},
	{commit.ErrStatementID, codes.InvalidArgument},
	{commit.ErrIsolation, codes.InvalidArgument},
	{ErrHandle, codes.InvalidArgument},
	{ErrNotQuery, codes.InvalidArgument},
	{ErrSessionOption, codes.InvalidArgument},
	{wire.ErrMalformed, codes.InvalidArgument},
	{flightio.ErrMalformed, codes.InvalidArgument},
	{wire.ErrVersion, codes.InvalidArgument},
	{wire.ErrUnsealed, codes.InvalidArgument},
	{wire.ErrExpired, codes.InvalidArgument},
	{planner.ErrNotFound, codes.NotFound},
	{catalog.ErrCatalogNotFound, codes.NotFound},
	{catalog.ErrSchemaNotFound, codes.NotFound},
	{catalog.ErrTableNotFound, codes.NotFound},
	{icecat.ErrNoSuchTable, codes.NotFound},
	{icecat.ErrNoSuchNamespace, codes.NotFound},
	{icecat.ErrNoSuchView, codes.NotFound},
	{planner.ErrExists, codes.AlreadyExists},
	{commit.ErrAlreadyCommitted, codes.AlreadyExists},
	{icecat.ErrTableAlreadyExists, codes.AlreadyExists},
	{icecat.ErrNamespaceAlreadyExists, codes.AlreadyExists},
	{icecat.ErrViewAlreadyExists, codes.AlreadyExists},
	{planner.ErrConflict, codes.Aborted},
	{planner.ErrWriteFailed, codes.Aborted},
	{planner.ErrCommitUnknown, codes.Unknown},
	{planner.ErrUnsupported, codes.Unimplemented},
	{errNoRenew, codes.Unimplemented},
	{planner.ErrRefused, codes.PermissionDenied},
	{planner.ErrDenied, codes.PermissionDenied},
	{planner.ErrNoWorkers, codes.Unavailable},
	{ErrDraining, codes.Unavailable},
	{errDrainCancelled, codes.Unavailable},
	{ErrWorkerTicket, codes.FailedPrecondition},
	{ErrNoSession, codes.FailedPrecondition},
	{icecat.ErrNamespaceNotEmpty, codes.FailedPrecondition},
	{catalog.ErrEncrypted, codes.FailedPrecondition},
	{queryreg.ErrCancelled, codes.Canceled},
	{queryreg.ErrNotFound, codes.NotFound},
	{queryreg.ErrNotYours, codes.PermissionDenied},
	{context.Canceled, codes.Canceled},
	{context.DeadlineExceeded, codes.DeadlineExceeded},
}

// ToStatus turns err into a gRPC status error: the one place where icefloe's
// errors get their gRPC codes. The message is the error's text. nil stays
// nil; an error that already is a status keeps its code unless a sentinel
// above matches first; anything else is Internal.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	// A catalog library may quote a URL or a connection string it was
	// given: no message leaves with a catalog's secret in it.
	msg := catalog.ScrubText(userMessage(err))
	switch {
	case admit.Exhausted(err), membudget.Exhausted(err), errors.Is(err, ErrStatementTooLarge), errors.Is(err, planner.ErrExhausted),
		status.Code(err) == codes.ResourceExhausted:
		return status.Error(codes.ResourceExhausted, msg)
	case errors.Is(err, admit.ErrStatementTimeout):
		return status.Error(codes.DeadlineExceeded, msg)
	}
	for _, e := range codeTable {
		if errors.Is(err, e.err) {
			return status.Error(e.code, msg)
		}
	}
	if st, ok := status.FromError(err); ok {
		if clean := catalog.ScrubText(st.Message()); clean != st.Message() {
			return status.Error(st.Code(), clean)
		}
		return st.Err()
	}
	return status.Error(codes.Internal, msg)
}

// userMessage is err's message as the client reads it: an error written
// for people (planner.UserError) says so itself; otherwise the package
// prefixes of the sentinels ("planner: ", "catalog: ") go, their words
// stay.
func userMessage(err error) string {
	var ue interface{ UserMessage() string }
	if errors.As(err, &ue) {
		return ue.UserMessage()
	}
	return packagePrefix.ReplaceAllString(err.Error(), "${1}")
}

// packagePrefix matches the prefix icefloe's sentinel errors carry, at
// the start of a message or of a wrapped one (after ": " or "; "), never
// a word inside a sentence ("no live worker: …").
var packagePrefix = regexp.MustCompile(`(^|: |; |\()(?:planner|parse|commit|catalog|flightsql|flightio|conform|engine|wire|worker|directscan|orphans|sqltok): `)

// KeyMaxStatementBytes is the config key of Options.MaxStatementBytes.
const KeyMaxStatementBytes = "limits.max_statement_bytes"

// resourceError is a statement's engine running out of a resource,
// naming the statement's query id and the limit's config key.
type resourceError struct {
	queryID string
	err     error
}

func (e *resourceError) Error() string { return e.wrap(e.err.Error()) }
func (e *resourceError) Unwrap() error { return e.err }

// UserMessage keeps the words of an error written for people.
func (e *resourceError) UserMessage() string { return e.wrap(userMessage(e.err)) }

func (e *resourceError) wrap(msg string) string {
	key := engine.ResourceKey(e.err)
	if key == "" || strings.Contains(msg, "(limit key ") {
		return "query " + e.queryID + ": " + msg
	}
	return "query " + e.queryID + ": " + msg + " (limit key " + key + ")"
}

// namedResource names the query and the limit in an engine's resource
// error that does not name them yet; other errors pass as they are.
func namedResource(queryID string, err error) error {
	var re *resourceError
	if err == nil || queryID == "" || !engine.IsResourceError(err) || errors.As(err, &re) ||
		strings.Contains(err.Error(), "query "+queryID) {
		return err
	}
	return &resourceError{queryID: queryID, err: err}
}
