package statement

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// The maintenance statements of the ALTER TABLE family (Trino's ALTER
// TABLE … EXECUTE, Spark's branch and tag DDL) and the compaction
// procedure; docs/sql.md has the grammar.

func init() {
	registerProcedure(&procedure{
		name: "rewrite_data_files",
		params: []procParam{{name: "table", kind: argString, required: true}, {name: "strategy", kind: argString},
			{name: "sort_order", kind: argString}, {name: "options", kind: argMap}, {name: "where", kind: argString}},
		columns: []procColumn{{"rewritten_data_files_count", "INTEGER"}, {"added_data_files_count", "INTEGER"},
			{"rewritten_bytes_count", "BIGINT"}, {"failed_data_files_count", "INTEGER"}, {"removed_delete_files_count", "INTEGER"}},
		run: runRewriteDataFiles,
	})
}

func runRewriteDataFiles(ctx context.Context, e *Executor, c *procCall) ([][]any, error) {
	tgt, err := c.target(ctx, e)
	if err != nil {
		return nil, err
	}
	spec, err := rewriteSpec(tgt.Pinned.Table, c)
	if err != nil {
		return nil, err
	}
	res, err := e.compact(ctx, c.sess, tgt, spec)
	if err != nil {
		return nil, err
	}
	return [][]any{{res.rewrittenFiles, res.addedFiles, res.rewrittenBytes, int64(0), res.removedDeleteFiles}}, nil
}

// rewriteOptions are the options rewrite_data_files understands (Spark's
// names); others are refused.
var rewriteOptions = []string{
	"target-file-size-bytes", "min-file-size-bytes", "max-file-size-bytes", "min-input-files",
	"delete-file-threshold", "delete-ratio-threshold", "rewrite-all", "partial-progress.enabled",
	"max-concurrent-file-group-rewrites", "max-file-group-size-bytes", "remove-dangling-deletes",
}

// rewriteSpec reads rewrite_data_files' arguments into a compaction spec.
func rewriteSpec(tbl *table.Table, c *procCall) (planner.CompactSpec, error) {
	spec := planner.DefaultCompactSpec(tbl)
	spec.Where = c.str("where", "")
	opts := c.options()
	var errs []error
	num := func(key string, set func(int64)) {
		v, ok := opts[key]
		if !ok {
			return
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("option %s: want a non-negative integer, got %q", key, v))
			return
		}
		set(n)
	}
	for k := range opts {
		if !slices.Contains(rewriteOptions, k) {
			errs = append(errs, fmt.Errorf("unknown option %q (known: %s)", k, strings.Join(rewriteOptions, ", ")))
		}
	}
	num("target-file-size-bytes", func(n int64) {
		spec.Config.TargetFileSizeBytes, spec.Config.MinFileSizeBytes, spec.Config.MaxFileSizeBytes = n, n*3/4, n*9/5
	})
	num("min-file-size-bytes", func(n int64) { spec.Config.MinFileSizeBytes = n })
	num("max-file-size-bytes", func(n int64) { spec.Config.MaxFileSizeBytes = n })
	num("min-input-files", func(n int64) { spec.MinInputFiles = int(max(n, 1)) })
	num("delete-file-threshold", func(n int64) { spec.Config.DeleteFileThreshold = int(min(n, math.MaxInt32)) })
	num("max-concurrent-file-group-rewrites", func(int64) {})
	num("max-file-group-size-bytes", func(int64) {})
	if v, ok := opts["delete-ratio-threshold"]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("option delete-ratio-threshold: want a number in [0, 1], got %q", v))
		}
		spec.Config.DeleteRatioThreshold = f
	}
	for _, key := range []string{"rewrite-all", "partial-progress.enabled", "remove-dangling-deletes"} {
		v, ok := opts[key]
		if !ok {
			continue
		}
		b, err := strconv.ParseBool(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("option %s: want true or false, got %q", key, v))
		case key == "rewrite-all":
			spec.RewriteAll = b
		case key == "partial-progress.enabled" && b:
			errs = append(errs, errors.New("option partial-progress.enabled: a rewrite commits once; partial progress is not supported"))
		}
	}
	switch strings.ToLower(c.str("strategy", "binpack")) {
	case "binpack":
		if c.str("sort_order", "") != "" {
			errs = append(errs, errors.New("sort_order needs strategy => 'sort'"))
		}
	case "sort":
		items, err := planner.ParseSortOrder(tbl, c.str("sort_order", ""))
		if err != nil {
			errs = append(errs, err)
		}
		spec.Sort = items
	default:
		errs = append(errs, fmt.Errorf("strategy %q: want 'binpack' or 'sort'", c.str("strategy", "")))
	}
	if err := errors.Join(errs...); err != nil {
		return spec, fmt.Errorf("%w: %v", planner.ErrInvalid, err)
	}
	return spec, nil
}

// alterExecute runs Trino's ALTER TABLE t EXECUTE name[(args)] [WHERE
// pred]: optimize (compaction; the update count is the number of data
// files rewritten), optimize_manifests, expire_snapshots and
// remove_orphan_files (counts of what they removed).
func (e *Executor) alterExecute(ctx context.Context, sess planner.Session, tgt *planner.WriteTarget, x *parse.Execute) (int64, error) {
	switch name := strings.ToLower(x.Procedure); name {
	case "optimize":
		return e.trinoOptimize(ctx, sess, tgt, x.Args, x.Where)
	case "optimize_manifests", "expire_snapshots", "remove_orphan_files":
		return e.trinoHousekeeping(ctx, sess, tgt, name, x.Args)
	}
	return 0, fmt.Errorf("%w: ALTER TABLE … EXECUTE %s (known: optimize, optimize_manifests, expire_snapshots, remove_orphan_files)", planner.ErrNotFound, x.Procedure)
}

// trinoArgs binds Trino's named EXECUTE arguments, each a string.
func trinoArgs(proc string, args []parse.Arg, known ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		if a.Name == "" || !slices.Contains(known, a.Name) {
			return nil, fmt.Errorf("%w: %s takes only named arguments: %s", planner.ErrInvalid, proc, strings.Join(known, ", "))
		}
		if a.Value.Ctor != "" {
			return nil, fmt.Errorf("%w: %s: argument %s must be a string", planner.ErrInvalid, proc, a.Name)
		}
		out[a.Name] = a.Value.Text
	}
	return out, nil
}

// trinoOptimize compacts as Trino's optimize does: every file smaller
// than file_size_threshold (default 100MB) is a candidate, and a
// partition's candidates are rewritten when there are at least two of
// them or one has deletes.
func (e *Executor) trinoOptimize(ctx context.Context, sess planner.Session, tgt *planner.WriteTarget, args []parse.Arg, where string) (int64, error) {
	a, err := trinoArgs("optimize", args, "file_size_threshold")
	if err != nil {
		return 0, err
	}
	threshold := int64(100 << 20)
	if v, ok := a["file_size_threshold"]; ok {
		if threshold, err = parseDataSize(v); err != nil {
			return 0, fmt.Errorf("%w: optimize: file_size_threshold: %v", planner.ErrInvalid, err)
		}
	}
	spec := planner.DefaultCompactSpec(tgt.Pinned.Table)
	target := max(spec.Config.TargetFileSizeBytes, threshold)
	spec.Config.TargetFileSizeBytes, spec.Config.MinFileSizeBytes, spec.Config.MaxFileSizeBytes = target, threshold, max(target*9/5, threshold+1)
	spec.Config.DeleteFileThreshold, spec.MinInputFiles, spec.Where = 1, 2, where
	res, err := e.compact(ctx, sess, tgt, spec)
	if err != nil {
		return 0, err
	}
	return res.rewrittenFiles, nil
}

// parseDataSize reads a Trino data size: a number and a unit among B,
// kB, MB, GB, TB, PB (powers of 1024), e.g. '128MB'.
func parseDataSize(s string) (int64, error) {
	v, err := parseQuantity(s, "a size such as '128MB'", "B, kB, MB, GB, TB, PB", map[string]float64{
		"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40, "pb": 1 << 50})
	return int64(v), err
}

// parseDuration reads a Trino duration: a number and a unit among ns,
// us, ms, s, m, h, d, e.g. '7d'.
func parseDuration(s string) (time.Duration, error) {
	v, err := parseQuantity(s, "a duration such as '7d'", "ns, us, ms, s, m, h, d", map[string]float64{
		"ns": float64(time.Nanosecond), "us": float64(time.Microsecond), "ms": float64(time.Millisecond),
		"s": float64(time.Second), "m": float64(time.Minute), "h": float64(time.Hour), "d": float64(24 * time.Hour)})
	return time.Duration(v), err
}

// parseQuantity reads a number followed by one of units (matched
// case-insensitively) and returns the number times the unit.
func parseQuantity(s, want, unitNames string, units map[string]float64) (float64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i <= 0 {
		return 0, fmt.Errorf("%q: want %s", s, want)
	}
	v, err := strconv.ParseFloat(t[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want %s", s, want)
	}
	u, ok := units[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit (%s)", s, unitNames)
	}
	return v * u, nil
}
