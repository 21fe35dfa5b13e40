package parse

import (
	"errors"
	"fmt"
)

// Errors of the front end, wrapped with detail. The planner re-exports
// them (planner.ErrSyntax is ErrSyntax, …) and flightsql maps them to
// gRPC codes.
var (
	// ErrSyntax: the statement does not parse (InvalidArgument).
	ErrSyntax = errors.New("parse: syntax error")
	// ErrInvalid: the statement parses but is wrong, e.g. a column set
	// twice (InvalidArgument).
	ErrInvalid = errors.New("parse: invalid statement")
	// ErrUnsupported: a statement or clause icefloe does not run
	// (Unimplemented).
	ErrUnsupported = errors.New("parse: not supported")
	// ErrRefused: a statement clients may not run (PermissionDenied).
	ErrRefused = errors.New("parse: refused")
)

func syntaxf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrSyntax}, args...)...)
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

func unsupportedf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnsupported}, args...)...)
}
