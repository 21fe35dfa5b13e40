package planner

import (
	"errors"
	"sync/atomic"

	"github.com/apache/iceberg-go/table"
)

// CommitStats count the planner's commits to the catalogs.
type CommitStats struct {
	// Attempts are the commits sent to a catalog (each retry included);
	// Conflicts those that lost to a concurrent commit; Retries the
	// attempts after the first of one statement's commit.
	Attempts, Conflicts, Retries atomic.Int64
}

// attempt counts one commit attempt of a commit that made tries of them.
func (s *CommitStats) attempt(tries *atomic.Int32, err error) {
	if s == nil {
		return
	}
	s.Attempts.Add(1)
	if tries != nil && tries.Add(1) > 1 {
		s.Retries.Add(1)
	}
	if errors.Is(err, table.ErrCommitFailed) {
		s.Conflicts.Add(1)
	}
}

// Commits returns the planner's commit counters.
func (p *Planner) Commits() *CommitStats { return &p.commits }
