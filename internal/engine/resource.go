package engine

import (
	"errors"
	"strings"
	"syscall"

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
