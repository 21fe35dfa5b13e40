package planner

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Answers from metadata: Iceberg's manifests hold every data file's row
// count, so count(*) of a whole table is their sum, with no file opened.
// Only where that is exact: one table read once, at its current
// snapshot, no WHERE, GROUP BY, HAVING, QUALIFY, sample, DISTINCT,
// window, CTE or modifier; every output column a bare count(*); and no
// delete file of any kind in the snapshot (positional, equality,
// deletion vectors), whose rows the counts would still include.
// Everything else reads the files. EXPLAIN says which, and why not.

// answerFromMetadata answers b from its table's manifests when it can;
// why says why not for a query that came close (empty when it did not).
func (p *Planner) answerFromMetadata(ctx context.Context, b *bound) (pl *Plan, why string, err error) {
	root, _ := b.ast.root["node"].(node)
	if !countStarShape(root, b) {
		return nil, "", nil
	}
	in := b.inputs[0]
	switch {
	case in.snapshot != 0:
		return nil, "a time-travel read", nil
	case in.meta != "":
		return nil, "a metadata table", nil
	case root["where_clause"] != nil:
		return nil, "a WHERE clause", nil
	}
	for _, f := range b.schema.Fields() {
		if f.Type.ID() != arrow.INT64 {
			return nil, "a count of another type", nil
		}
	}
	if snap := in.pinned.Table.CurrentSnapshot(); snap != nil && snap.Summary != nil {
		for _, k := range []string{"total-delete-files", "total-position-deletes", "total-equality-deletes"} {
			if n, _ := strconv.ParseInt(snap.Summary.Properties[k], 10, 64); n > 0 {
				return nil, "the snapshot has delete files", nil
			}
		}
	}
	// A copy: the plan of the files is memoised, and the query planned
	// after a refusal plans them again into in.
	probe := *in
	probe.bytes = 0
	if err := p.planFiles(ctx, &probe); err != nil {
		return nil, "", err
	}
	var rows int64
	seen := map[string]bool{}
	for _, t := range probe.tasks {
		if len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) > 0 {
			return nil, "a data file has deletes", nil
		}
		if path := t.File.FilePath(); !seen[path] {
			seen[path] = true
			rows += t.File.Count()
		}
	}
	a, err := int64Row(b.schema, rows)
	if err != nil {
		return nil, "", err
	}
	a.Source = "metadata"
	lines := []string{
		fmt.Sprintf("table\t%s snapshot %d, metadata %s", in.ref, snapshotID(in), in.pinned.MetadataLocation),
		fmt.Sprintf("answered from metadata\tcount from %d manifest entries: %d rows", len(seen), rows),
	}
	return p.answerPlan(ctx, b.schema, a, lines), "", nil
}

// countStarShape tells whether root is SELECT count(*)[, count(*)…]
// FROM one table read once, with nothing else around it (the WHERE is
// looked at by the caller).
func countStarShape(root node, b *bound) bool {
	if root == nil || str(root, "type") != "SELECT_NODE" || len(b.inputs) != 1 || b.ambiguous || b.inputs[0].refs != 1 {
		return false
	}
	from, _ := root["from_table"].(node)
	if str(from, "type") != "BASE_TABLE" || str(from, "table_name") != b.inputs[0].view || from["sample"] != nil {
		return false
	}
	if len(anyList(root["group_expressions"])) > 0 || len(anyList(root["group_sets"])) > 0 || root["having"] != nil ||
		root["qualify"] != nil || root["sample"] != nil || len(anyList(root["modifiers"])) > 0 {
		return false
	}
	if m, _ := root["cte_map"].(node); len(anyList(m["map"])) > 0 {
		return false
	}
	list := anyList(root["select_list"])
	if len(list) == 0 {
		return false
	}
	for _, it := range list {
		n, _ := it.(node)
		if str(n, "class") != "FUNCTION" || str(n, "function_name") != "count_star" || len(anyList(n["children"])) > 0 ||
			n["distinct"] == true || n["filter"] != nil || n["export_state"] == true || str(n, "schema") != "" {
			return false
		}
		if o, _ := n["order_bys"].(node); len(anyList(o["orders"])) > 0 {
			return false
		}
	}
	return true
}

// int64Row is one row of schema, every column the value v.
func int64Row(schema *arrow.Schema, v int64) (*Answer, error) {
	cols := make([]arrow.Array, schema.NumFields())
	for i := range cols {
		bld := array.NewInt64Builder(memory.DefaultAllocator)
		bld.Append(v)
		cols[i] = bld.NewArray()
		bld.Release()
	}
	rec := array.NewRecordBatch(schema, cols, 1)
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	return encodeRows(rdr, schema, 1<<20)
}
