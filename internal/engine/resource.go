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
