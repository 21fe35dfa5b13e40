package statement

import (
	"context"
	"fmt"
	"strconv"

	"github.com/icefloe/icefloe/planner"
)

// CALL system.rewrite_position_delete_files: its arguments are read
// here; planner.Planner.RewritePositionDeletes merges the files and
// commits.

func init() {
	registerProcedure(&procedure{
		name:   "rewrite_position_delete_files",
		params: []procParam{{name: "table", kind: argString, required: true}, {name: "options", kind: argMap}},
		columns: []procColumn{{"rewritten_delete_files_count", "INTEGER"}, {"added_delete_files_count", "INTEGER"},
			{"rewritten_bytes_count", "BIGINT"}, {"added_bytes_count", "BIGINT"}},
		run: runRewritePositionDeletes,
	})
}

func runRewritePositionDeletes(ctx context.Context, e *Executor, c *procCall) ([][]any, error) {
	tgt, err := c.target(ctx, e)
	if err != nil {
		return nil, err
	}
	minFiles, all := 5, false
	for k, v := range c.options() {
		switch k {
		case "min-input-files":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%w: option min-input-files: want a positive integer, got %q", planner.ErrInvalid, v)
			}
			minFiles = n
		case "rewrite-all":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("%w: option rewrite-all: want true or false, got %q", planner.ErrInvalid, v)
			}
			all = b
		default:
			return nil, fmt.Errorf("%w: unknown option %q (known: min-input-files, rewrite-all)", planner.ErrInvalid, k)
		}
	}
	n, err := e.RewritePositionDeletes(ctx, tgt, minFiles, all)
	if err != nil {
		return nil, err
	}
	return [][]any{{n.Rewritten, n.Added, n.RewrittenBytes, n.AddedBytes}}, nil
}
