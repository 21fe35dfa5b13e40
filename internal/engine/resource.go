package engine

import (
	"errors"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

// resourceMarks are the texts of DuckDB's errors that say it ran out of a
// resource rather than that the statement is wrong: its memory_limit, or
// the disk of its spill folder (max_temp_directory_size or a full disk).
var resourceMarks = []string{
	"Out of Memory Error",
	"max_temp_directory_size",
	"No space left on device",
	"Disk full",
	"limit key " + ValueSizeKey,
}

// IsResourceError says whether err is DuckDB running out of memory or of
// spill disk: the statement may succeed later or with more resources, so
// it is ResourceExhausted at the Flight boundary, and running it at
// another worker of the same size will not help.
func IsResourceError(err error) bool {
	if err == nil {
		return false
	}
	var de *duckdb.Error
	if errors.As(err, &de) && de.Type == duckdb.ErrorTypeOutOfMemory {
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

// Config keys of the limits behind DuckDB's resource errors.
const (
	MemoryKey   = "limits.memory_budget"
	TempSizeKey = "limits.max_temp_directory_size"
	// ValueSizeKey bounds one value built from a count (repeat, lpad):
	// the planner's guard raises an error naming it.
	ValueSizeKey = "limits.max_value_bytes"
)

// ResourceKey is the config key of the limit a resource error (see
// IsResourceError) hit: the spill disk's or the memory budget's.
func ResourceKey(err error) string {
	msg := err.Error()
	if strings.Contains(msg, "limit key "+ValueSizeKey) {
		return ValueSizeKey
	}
	for _, m := range resourceMarks[1:4] {
		if strings.Contains(msg, m) {
			return TempSizeKey
		}
	}
	return MemoryKey
}
