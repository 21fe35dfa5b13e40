package statement

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/planner"
)

// CALL system.cancel_query cancels a running statement through the
// coordinator's planner.Runtime (planner/runtime.go serves the
// system.runtime tables). A principal may cancel its own statements; an
// admin (authz.AdminRole, or anyone while authentication is off) any.

func init() {
	registerProcedure(&procedure{
		name:    "cancel_query",
		params:  []procParam{{name: "query_id", kind: argString, required: true}},
		columns: []procColumn{{"query_id", "VARCHAR"}, {"principal", "VARCHAR"}, {"state", "VARCHAR"}},
		run:     runCancelQuery,
	})
}

// runCancelQuery cancels a statement: the caller's own, or any for an
// admin.
func runCancelQuery(ctx context.Context, e *Executor, c *procCall) ([][]any, error) {
	if e.opts.Runtime == nil {
		return nil, fmt.Errorf("%w: queries are cancelled on a coordinator", planner.ErrUnsupported)
	}
	id, _ := c.args["query_id"].(string)
	if id == queryreg.IDFrom(ctx) {
		return nil, fmt.Errorf("%w: a statement cannot cancel itself", planner.ErrInvalid)
	}
	admin, me := e.opts.Policy.Admin(ctx), auth.Name(ctx)
	info, err := e.opts.Runtime.CancelQuery(ctx, id, func(principal string) bool { return admin || principal == me })
	if info.ID == "" {
		return nil, err
	}
	// The statement is cancelled even if a worker could not be told (it
	// ends its streams at the tickets' expiry at the latest).
	if err != nil {
		e.log.Warn("cancel_query: not every worker was told", zap.Error(err))
	}
	return [][]any{{info.ID, info.Principal, string(info.State)}}, nil
}
