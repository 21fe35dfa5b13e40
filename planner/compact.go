package planner

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/icemeta"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner/plan"
	"github.com/icefloe/icefloe/wire"
)

// The planning of a compaction (rewrite_data_files, ALTER TABLE …
// EXECUTE optimize; package statement runs and commits it):
// PlanCompaction plans the table's files once, picks the small ones (and
// the ones with many deletes) and bin-packs them per partition with
// iceberg-go's compaction planner; whole groups become write fragments
// (the same fragments INSERT … SELECT runs), which read their files with
// deletes applied, order the rows by the partition columns and the sort
// order and write new files.

// CompactSpec says what a compaction rewrites (package statement reads
// it from rewrite_data_files' and optimize's arguments).
type CompactSpec struct {
	// Config holds the size and delete thresholds; Config.MinInputFiles
	// is not used by the planner (see groups).
	Config        compaction.Config
	MinInputFiles int
	RewriteAll    bool
	// Where selects the files that may hold matching rows; "" is all.
	Where string
	// Sort replaces the table's sort order for the new files
	// (ParseSortOrder).
	Sort []parse.SortItem
}

// DefaultCompactSpec is the spec with iceberg-go's (and Spark's) defaults
// for tbl: the target file size is the table's.
func DefaultCompactSpec(tbl *table.Table) CompactSpec {
	cfg := compaction.DefaultConfig()
	target := tbl.Properties().GetInt64(table.WriteTargetFileSizeBytesKey, table.WriteTargetFileSizeBytesDefault)
	if target > 0 {
		cfg.TargetFileSizeBytes, cfg.MinFileSizeBytes, cfg.MaxFileSizeBytes = target, target*3/4, target*9/5
	}
	return CompactSpec{Config: cfg, MinInputFiles: int(compaction.DefaultMinInputFiles)}
}

// CompactPlan is a planned compaction: its write and one endpoint per
// fragment, the snapshot it was planned from (Base) and the data files it
// rewrites (Old, OldBytes in all) with their scan tasks.
type CompactPlan struct {
	// WritePlan is the compaction's plan, its rewrite-files sink at the
	// root, and its fragments.
	WritePlan
	Base     int64
	Old      []iceberg.DataFile
	Tasks    []table.FileScanTask
	OldBytes int64
}

// PlanCompaction plans one compaction of tgt over workers (package
// statement runs and commits it); nil when there is nothing to rewrite.
func (p *Planner) PlanCompaction(ctx context.Context, sess Session, tgt *WriteTarget, spec CompactSpec, workers []Worker) (*CompactPlan, error) {
	if err := spec.Config.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	tbl := tgt.Pinned.Table
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil, nil
	}
	candidates, err := p.candidateFiles(ctx, sess, tgt, spec.Where)
	if err != nil {
		return nil, err
	}
	all, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan files of %s: %w", tgt.Ref, err)
	}
	files, _ := filesOf(all, candidates)
	groups, err := spec.groups(files)
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		return nil, nil
	}
	frags := packGroups(groups, targetGroups(workers, 0, 0))
	cp, err := p.compactFragments(ctx, tgt, spec, frags, workers)
	if err != nil {
		return nil, err
	}
	cp.Base = snap.SnapshotID
	for _, g := range groups {
		for _, f := range g {
			cp.Old = append(cp.Old, f.file)
			cp.Tasks = append(cp.Tasks, f.tasks...)
			cp.OldBytes += f.file.FileSizeBytes()
		}
	}
	return cp, nil
}

// candidateFiles are the data files a compaction's where predicate may
// match (by partition values and column metrics); nil means every file.
func (p *Planner) candidateFiles(ctx context.Context, sess Session, tgt *WriteTarget, where string) (map[string]bool, error) {
	if where == "" {
		return nil, nil
	}
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	name := engine.Quote(tgt.Ref.Catalog) + "." + engine.Quote(tgt.Ref.Schema) + "." + engine.Quote(tgt.Ref.Table)
	// The predicate is client text: the query around it is parsed as a
	// statement of its own.
	q, err := parse.Parse("SELECT count(*) FROM " + name + " WHERE " + where)
	if err != nil {
		return nil, err
	}
	b, err := p.bind(ctx, conn, sess, q, true)
	if err != nil {
		return nil, err
	}
	root, _ := b.ast.root["node"].(node)
	if len(b.inputs) != 1 || b.inputs[0].ref != tgt.Ref || str(root, "type") != "SELECT_NODE" {
		return nil, fmt.Errorf("%w: where: a predicate over the table's columns", ErrInvalid)
	}
	f := b.inputs[0].filter
	if f == nil {
		return nil, fmt.Errorf("%w: where %q: no part of it selects files (compare columns with constants)", ErrInvalid, where)
	}
	tasks, err := b.inputs[0].pinned.Table.Scan(table.WithRowFilter(f)).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan files of %s: %w", tgt.Ref, err)
	}
	out := map[string]bool{}
	for _, t := range tasks {
		out[t.File.FilePath()] = true
	}
	return out, nil
}

// filesOf groups tasks by data file, keeping files in candidates (all
// when nil), in planning order, and indexes them by path.
func filesOf(tasks []table.FileScanTask, candidates map[string]bool) ([]*dataFileTasks, map[string]*dataFileTasks) {
	var files []*dataFileTasks
	byPath := map[string]*dataFileTasks{}
	for _, t := range tasks {
		path := t.File.FilePath()
		if candidates != nil && !candidates[path] {
			continue
		}
		f, ok := byPath[path]
		if !ok {
			f = &dataFileTasks{file: t.File}
			byPath[path] = f
			files = append(files, f)
		}
		f.tasks = append(f.tasks, t)
		f.bytes += t.Length
	}
	return files, byPath
}

// groups picks and bin-packs the files to rewrite: iceberg-go's planner
// chooses the candidates (small files, files with many deletes) and packs
// them per partition toward the target size; a group is rewritten when it
// has at least MinInputFiles files, more than a target's worth of bytes,
// or a file with too many deletes (Spark's rule). RewriteAll packs every
// file.
func (s CompactSpec) groups(files []*dataFileTasks) ([][]*dataFileTasks, error) {
	byPath := map[string]*dataFileTasks{}
	reps := make([]table.FileScanTask, len(files))
	for i, f := range files {
		byPath[f.file.FilePath()] = f
		reps[i] = f.tasks[0]
	}
	if s.RewriteAll {
		return packByPartition(files, s.Config.TargetFileSizeBytes), nil
	}
	cfg := s.Config
	cfg.MinInputFiles = 1
	plan, err := cfg.PlanCompaction(reps)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	var out [][]*dataFileTasks
	for _, g := range plan.Groups {
		keep := len(g.Tasks) >= s.MinInputFiles || g.TotalSizeBytes > cfg.TargetFileSizeBytes
		var group []*dataFileTasks
		for _, t := range g.Tasks {
			keep = keep || s.deleteHeavy(t)
			group = append(group, byPath[t.File.FilePath()])
		}
		if keep {
			out = append(out, group)
		}
	}
	return out, nil
}

// deleteHeavy tells a file rewritten for its deletes: at least the
// delete-file threshold of delete files, or deletes that hide at least
// the delete-ratio threshold of its rows.
func (s CompactSpec) deleteHeavy(t table.FileScanTask) bool {
	n := len(t.DeleteFiles) + len(t.EqualityDeleteFiles) + len(t.DeletionVectorFiles)
	if n == 0 {
		return false
	}
	if n >= s.Config.DeleteFileThreshold {
		return true
	}
	var deleted int64
	for _, d := range slices.Concat(t.DeleteFiles, t.DeletionVectorFiles) {
		if ref := d.ReferencedDataFile(); ref != nil && *ref == t.File.FilePath() {
			deleted += d.Count()
		}
	}
	rows := t.File.Count()
	return s.Config.DeleteRatioThreshold > 0 && rows > 0 && float64(min(deleted, rows))/float64(rows) >= s.Config.DeleteRatioThreshold
}

// packByPartition packs every file into groups of one partition (and
// spec) each, of about target bytes.
func packByPartition(files []*dataFileTasks, target int64) [][]*dataFileTasks {
	parts := map[string][]*dataFileTasks{}
	var keys []string
	for _, f := range files {
		k := icemeta.PartitionKey(f.file)
		if _, ok := parts[k]; !ok {
			keys = append(keys, k)
		}
		parts[k] = append(parts[k], f)
	}
	var out [][]*dataFileTasks
	for _, k := range keys {
		var cur []*dataFileTasks
		var size int64
		for _, f := range parts[k] {
			if len(cur) > 0 && size+f.file.FileSizeBytes() > target {
				out = append(out, cur)
				cur, size = nil, 0
			}
			cur = append(cur, f)
			size += f.file.FileSizeBytes()
		}
		out = append(out, cur)
	}
	return out
}

// packGroups spreads whole groups over at most n fragments, largest
// first onto the lightest.
func packGroups(groups [][]*dataFileTasks, n int) [][]*dataFileTasks {
	size := func(g []*dataFileTasks) (s int64) {
		for _, f := range g {
			s += f.file.FileSizeBytes()
		}
		return s
	}
	order := slices.Clone(groups)
	slices.SortStableFunc(order, func(a, b []*dataFileTasks) int { return cmp.Compare(size(b), size(a)) })
	n = max(1, min(n, len(order)))
	frags := make([][]*dataFileTasks, n)
	sizes := make([]int64, n)
	for _, g := range order {
		j := lightest(sizes)
		frags[j] = append(frags[j], g...)
		sizes[j] += size(g)
	}
	return frags
}

// lightest is the index of the smallest size (the first of equals).
func lightest(sizes []int64) int {
	j := 0
	for k := 1; k < len(sizes); k++ {
		if sizes[k] < sizes[j] {
			j = k
		}
	}
	return j
}

// compactFragments builds the write of a compaction and one endpoint per
// fragment: the fragment reads its files whole, with deletes applied
// (and the row-lineage columns on a v3 table), and writes their rows
// sorted as the spec says.
func (p *Planner) compactFragments(ctx context.Context, tgt *WriteTarget, spec CompactSpec, frags [][]*dataFileTasks, workers []Worker) (*CompactPlan, error) {
	tbl := tgt.Pinned.Table
	lineage := hasLineage(&input{pinned: tgt.Pinned})
	var cols, sel, project []string
	for i, f := range tbl.Schema().Fields() {
		typ, err := DuckTypeOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("%w: column %q: %v", ErrUnsupported, f.Name, err)
		}
		cols = append(cols, f.Name)
		sel = append(sel, engine.Quote(f.Name))
		project = append(project, fmt.Sprintf("CAST(__q.__c%d AS %s) AS %s", i, typ, engine.Quote(f.Name)))
	}
	if lineage {
		for _, name := range []string{iceberg.RowIDColumnName, iceberg.LastUpdatedSequenceNumberColumnName} {
			project = append(project, fmt.Sprintf("CAST(__q.__c%d AS BIGINT) AS %s", len(cols), engine.Quote(name)))
			cols = append(cols, name)
			sel = append(sel, engine.Quote(name))
		}
	}
	schema, err := catalog.ScanSchema(tbl, 0, cols)
	if err != nil {
		return nil, err
	}
	in := &input{ref: tgt.Ref, pinned: tgt.Pinned, view: "__icefloe_t0", cols: cols}
	sql := "SELECT " + strings.Join(sel, ", ") + " FROM " + in.view
	w := p.NewWrite(tgt)
	w.Project, w.InputColumns, w.Lineage = strings.Join(project, ", "), len(cols), lineage
	w.OrderBy = PartitionOrder(tbl)
	if spec.Sort != nil {
		w.OrderBy = sortOrderBy(tbl, spec.Sort)
	}
	w.TargetFileSize = spec.Config.TargetFileSizeBytes
	var scans [][]wire.Scan
	var groups []plan.Group
	for _, frag := range frags {
		var tasks []table.FileScanTask
		g := plan.Group{Files: len(frag)}
		for _, f := range frag {
			tasks = append(tasks, f.tasks...)
			g.Bytes += f.bytes
			g.Rows += f.file.Count()
		}
		scan, err := encodeScan(in, tasks)
		if err != nil {
			return nil, err
		}
		scan.RowFilter = ""
		scans = append(scans, []wire.Scan{scan})
		groups = append(groups, g)
	}
	endpoints, err := p.sinkBuilder(ctx, workers, w, schema).sinkFragments(scans, sql, schema)
	if err != nil {
		return nil, err
	}
	return &CompactPlan{WritePlan: WritePlan{Write: w, Endpoints: endpoints,
		Tree: &plan.Write{Sink: plan.SinkCompact, Table: tgt.Ref.String(), Snapshot: headOf(tgt), Fragments: len(endpoints),
			In: wholeFilesPlan("compact", tgt.Ref.String(), sql, groups)}}}, nil
}

// sortOrderBy is the ORDER BY of a sort-strategy compaction: the
// partition columns, then the given sort keys (nulls first ascending and
// last descending unless given, as in a table's sort order).
func sortOrderBy(tbl *table.Table, items []parse.SortItem) string {
	keys := partitionKeys(tbl)
	for _, it := range items {
		k, nulls := engine.Quote(it.Column)+" ASC", " NULLS FIRST"
		if it.Desc {
			k, nulls = engine.Quote(it.Column)+" DESC", " NULLS LAST"
		}
		if it.NullsFirst != nil {
			nulls = map[bool]string{true: " NULLS FIRST", false: " NULLS LAST"}[*it.NullsFirst]
		}
		keys = append(keys, k+nulls)
	}
	return strings.Join(keys, ", ")
}
