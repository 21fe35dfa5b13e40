package commit

import (
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/apache/iceberg-go/table"
)

// Stats count commits to the catalogs.
type Stats struct {
	// Attempts are the commits sent to a catalog (each retry included);
	// Conflicts those that lost a race to a concurrent commit, and the
	// commits whose scope conflicted with one (nothing sent); Retries the
	// attempts after the first of one statement's commit.
	Attempts, Conflicts, Retries atomic.Int64
	// Written are the bytes of the files the committed snapshots added
	// (their summaries' added-files-size: data and delete files).
	Written atomic.Int64
}

// committed counts the bytes the snapshots of a landed commit added.
func (s *Stats) committed(snaps []table.Snapshot) {
	if s == nil {
		return
	}
	for _, snap := range snaps {
		if snap.Summary == nil {
			continue
		}
		if n, err := strconv.ParseInt(snap.Summary.Properties["added-files-size"], 10, 64); err == nil {
			s.Written.Add(n)
		}
	}
}

// attempt counts one commit attempt of a commit that made tries of them.
func (s *Stats) attempt(tries *atomic.Int32, err error) {
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

// conflict counts a commit that its scope check found in conflict with a
// concurrent commit (nothing was sent).
func (s *Stats) conflict() {
	if s != nil {
		s.Conflicts.Add(1)
	}
}
