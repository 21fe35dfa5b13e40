package statement

import (
	"go.uber.org/zap"

	"github.com/icefloe/icefloe/planner"
)

// Executor runs statements on the coordinator. It embeds the
// *planner.Planner it was made with, so it plans queries as that planner
// does, and adds or overrides what executes. It is safe for concurrent
// use.
type Executor struct {
	*planner.Planner
	opts planner.Options
	log  *zap.Logger
}

// New returns an executor over pl; pl's options (mounts, engine, workers,
// Flight pool, policy, logger) are what its statements run with. It
// installs its CALL procedures in pl (planner.Planner.SetProcedures), so
// pl's Bind and Plan run CALL through it.
func New(pl *planner.Planner) *Executor {
	opts := pl.Options()
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	e := &Executor{Planner: pl, opts: opts, log: log}
	pl.SetProcedures(procedureHook{e})
	return e
}
