package engine

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// resourceMarks are the texts of DuckDB's errors that say it ran out of a
// resource rather than that the statement is wrong: its memory_limit, or
// the disk of its spill folder (max_temp_directory_size or a full disk);
// and the text of ENOSPC, a full warehouse disk, as it reads once it
// crossed from a worker to the coordinator.
var resourceMarks = []string{
	"Out of Memory Error",
	"max_temp_directory_size",
	"No space left on device",
	"Disk full",
	"no space left on device",
	"limit key " + ValueSizeKey,
}

// IsResourceError says whether err is DuckDB running out of memory or of
// spill disk, or a write finding its disk full: the statement may succeed later or with more resources, so
// it is ResourceExhausted at the Flight boundary, and running it at
// another worker of the same size will not help.
func IsResourceError(err error) bool {
	if err == nil {
		return false
	}
	var de *duckdb.Error
	if errors.As(err, &de) && de.Type == duckdb.ErrorTypeOutOfMemory || errors.Is(err, syscall.ENOSPC) {
		return true
	}
	msg := err.Error()
	for _, m := range resourceMarks {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// hintMark starts the advice DuckDB appends to an out-of-memory error.
const hintMark = "\n\nPossible solutions:"

// withoutHints drops the advice DuckDB appends to an out-of-memory error
// (SET threads, SET memory_limit, a link): a client can change none of
// those settings here, and the boundary names the limit that was hit.
func withoutHints(err error) error {
	var de *duckdb.Error
	if errors.As(err, &de) {
		if i := strings.Index(de.Msg, hintMark); i >= 0 {
			de.Msg = strings.TrimRight(de.Msg[:i], "\n")
		}
	}
	return err
}

// Config keys of the limits behind DuckDB's resource errors.
const (
	MemoryKey   = "limits.memory_budget"
	TempSizeKey = "limits.max_temp_directory_size"
	// ValueSizeKey bounds one value built from a count (repeat, lpad):
	// the planner's guard raises an error naming it.
	ValueSizeKey = "limits.max_value_bytes"
)

// ResourceKey is the config key of the limit a resource error (see
// IsResourceError) hit: the value size's, the spill disk's or the memory
// budget's; "" for a full disk, which is no limit of icefloe's.
func ResourceKey(err error) string {
	msg := err.Error()
	var de *duckdb.Error
	switch {
	case strings.Contains(msg, "limit key "+ValueSizeKey):
		return ValueSizeKey
	case strings.Contains(msg, "max_temp_directory_size"):
		return TempSizeKey
	case strings.Contains(msg, "Out of Memory Error"), errors.As(err, &de) && de.Type == duckdb.ErrorTypeOutOfMemory:
		return MemoryKey
	}
	return ""
}

// pressurePoll is how often WaitForMemory reads DuckDB's memory use.
const pressurePoll = 20 * time.Millisecond

// WaitForMemory waits, up to max or ctx's end, until the buffer memory
// DuckDB holds in this connection's database is below half its
// memory_limit, and says whether it got there. A statement that failed
// for memory another statement held (a stand-in table of no rows cannot
// need it itself) runs again once that statement let go, rather than
// failing with it: one heavy query does not fail its neighbours.
func (c *Conn) WaitForMemory(ctx context.Context, max time.Duration) bool {
	if c.e.memLimit <= 0 {
		return false
	}
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	tick := time.NewTicker(pressurePoll)
	defer tick.Stop()
	for {
		var used int64
		row := c.c.QueryRowContext(ctx, "SELECT coalesce(sum(memory_usage_bytes), 0)::BIGINT FROM duckdb_memory()")
		if err := row.Scan(&used); err != nil {
			return false
		}
		if used < c.e.memLimit/2 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
}

// IsOutOfMemory says whether err is DuckDB refusing memory (its
// memory_limit or the heap bound), not a full disk or a value too large.
func IsOutOfMemory(err error) bool {
	return err != nil && IsResourceError(err) && ResourceKey(err) == MemoryKey
}
