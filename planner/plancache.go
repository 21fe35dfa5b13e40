package planner

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/directscan"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

// File plans are memoised in the mounts' metadata cache (catalog.Memo,
// memo class "scan"):
// a scan's planned tasks depend only on the pinned metadata version (its
// location, the snapshot and schema read) and on the scan's options
// (columns, pruning filter), all immutable, so the same scan of the same
// version plans once. A repeated query then neither reads nor decodes the
// table's manifests (iceberg-go parses each manifest's Avro schema anew,
// which dominates planning many files), and its tasks come encoded for
// tickets. Manifests themselves are read through the cache too
// (PlanningTable), so a scan with other options costs no storage reads.

// filePlan is one memoised plan of a scan.
type filePlan struct {
	tasks []table.FileScanTask
	// unfiltered: the filter could not be evaluated on the table's
	// metrics and the scan was planned without it.
	unfiltered bool
	encoded    map[taskID]wire.Task
}

// taskID identifies a task within one plan.
type taskID struct {
	path          string
	start, length int64
}

func taskKey(t table.FileScanTask) taskID {
	return taskID{path: t.File.FilePath(), start: t.Start, length: t.Length}
}

// planFiles plans the input's file tasks once, on the coordinator, with
// its pruning filter, through the plan memo.
func (p *Planner) planFiles(ctx context.Context, in *input) error {
	tbl := in.pinned.Table
	snap := tbl.CurrentSnapshot()
	if snap == nil || in.meta != "" {
		return nil
	}
	if snap.Summary != nil {
		in.filesBefore, _ = strconv.ParseInt(snap.Summary.Properties["total-data-files"], 10, 64)
		in.bytesBefore, _ = strconv.ParseInt(snap.Summary.Properties["total-files-size"], 10, 64)
	}
	cache := p.opts.Mounts.Cache()
	v, err := cache.Memo(ctx, planKey(in), func(ctx context.Context) (any, error) {
		return planScan(ctx, cache.PlanningTable(tbl), in, p.readableInPlace(in))
	})
	if err != nil {
		return fmt.Errorf("plan files of %s: %w", in.ref, err)
	}
	fp := v.(*filePlan)
	if fp.unfiltered {
		in.filter, in.filterJSON = nil, ""
	}
	in.tasks, in.encoded = fp.tasks, fp.encoded
	for _, t := range fp.tasks {
		in.bytes += t.Length
	}
	return nil
}

// planKey names a scan of one metadata version with its options.
func planKey(in *input) string {
	tbl := in.pinned.Table
	filter := ""
	if in.filter != nil {
		// The bound JSON: it carries the columns' types with the values.
		filter = in.filterJSON
		if filter == "" {
			filter = in.filter.String()
		}
	}
	cols := "*"
	if in.cols != nil {
		cols = strings.Join(in.cols, "\x00")
	}
	return fmt.Sprintf("scan\x00%s\x00%d\x00%d\x00%s\x00%s", in.pinned.MetadataLocation, tbl.CurrentSnapshot().SnapshotID,
		tbl.Metadata().CurrentSchema().ID, cols, filter)
}

// readableInPlace says which of in's data files the workers read in place
// with DuckDB's Parquet reader (see readsDirect): local files under
// Options.DirectDirs, object-store files with Options.DataCache unless the
// table is encrypted. nil when none are.
func (p *Planner) readableInPlace(in *input) func(path string) bool {
	if len(p.opts.DirectDirs) == 0 && !p.opts.DataCache {
		return nil
	}
	cached := p.opts.DataCache && !encryptedInput(in)
	return func(path string) bool {
		if lp, local := catalog.LocalPath(path); local {
			return engine.Under(lp, p.opts.DirectDirs)
		}
		return cached
	}
}

// planScan plans the scan with iceberg-go and encodes its tasks. The
// files inPlace says workers read in place are planned whole
// (directscan.Coalesce); nil keeps iceberg-go's splits.
func planScan(ctx context.Context, tbl *table.Table, in *input, inPlace func(path string) bool) (any, error) {
	opts := catalog.ScanOptions(0, in.cols)
	if in.filter != nil {
		opts = append(opts, table.WithRowFilter(in.filter))
	}
	fp := &filePlan{}
	tasks, err := tbl.Scan(opts...).PlanFiles(ctx)
	if err != nil && in.filter != nil {
		// iceberg-go cannot read the column metrics of files written
		// before a type widening (ALTER COLUMN … TYPE, e.g. int → long):
		// pruning only skips files, so plan without it.
		fp.unfiltered = true
		tasks, err = tbl.Scan(catalog.ScanOptions(0, in.cols)...).PlanFiles(ctx)
	}
	if err != nil {
		return nil, err
	}
	if inPlace != nil {
		tasks = directscan.Coalesce(tasks, inPlace)
	}
	fp.tasks = tasks
	scan, err := encodeScan(in, tasks)
	if err != nil {
		return nil, err
	}
	fp.encoded = make(map[taskID]wire.Task, len(tasks))
	for i, t := range tasks {
		fp.encoded[taskKey(t)] = scan.Tasks[i]
	}
	return fp, nil
}
