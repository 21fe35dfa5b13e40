package statement

import "github.com/icefloe/icefloe/planner"

// Executor runs statements on the coordinator. It embeds the
// *planner.Planner it was made with, so it plans queries as that planner
// does, and adds or overrides what executes. It is safe for concurrent
// use.
type Executor struct {
	*planner.Planner
	opts planner.Options
}

// New returns an executor over pl; pl's options (mounts, engine, workers,
// Flight pool, policy) are what its statements run with.
func New(pl *planner.Planner) *Executor {
	return &Executor{Planner: pl, opts: pl.Options()}
}
