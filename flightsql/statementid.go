package flightsql

import (
	"context"

	"google.golang.org/grpc/metadata"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/commit"
)

// HeaderStatementID names the call header in which a client gives a
// statement its own id (an idempotency key): every snapshot the statement
// commits records it (commit.StatementIDProp) with a digest of the
// caller's principal (commit.StatementPrincipalProp), and the same
// statement sent again by the same principal under the same id, after a
// failure whose outcome the client could not see, commits nothing again
// and fails with AlreadyExists. Another principal's id never matches.
// ADBC clients set it with the option
// "adbc.flight.sql.rpc.call_header.x-icefloe-statement-id".
const HeaderStatementID = "x-icefloe-statement-id"

// withStatementID carries the call's statement id, if it has one, into
// ctx, scoped to the call's principal; an id that is not valid is the
// client's error.
func withStatementID(ctx context.Context) (context.Context, error) {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ctx, nil
	}
	ids := md.Get(HeaderStatementID)
	if len(ids) == 0 {
		return ctx, nil
	}
	return commit.WithStatementID(ctx, ids[len(ids)-1], auth.Name(ctx))
}
