package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Answers from metadata: Iceberg's manifests hold every data file's row
// count, so count(*) of a whole table is their sum, with no file opened,
// and count(*) of whole partitions the sum over the files whose identity
// partition value satisfies the WHERE. Only where that is exact: one
// table read once, at its current snapshot; a WHERE only of `column =
// constant` conjuncts on columns every file's partition spec holds as an
// identity field (int, long or string, the constant of the
// column's kind, not NULL); no GROUP BY, HAVING, QUALIFY, sample, DISTINCT,
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
	case in.restriction != nil:
		// The manifests count the rows the reader's filter hides too.
		return nil, "a table under a row filter", nil
	}
	var conds []partitionCond
	if w, _ := root["where_clause"].(node); w != nil {
		from, _ := root["from_table"].(node)
		if conds, why = identityConds(w, in, str(from, "alias")); why != "" {
			return nil, why, nil
		}
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
	// Every file of the snapshot, unpruned: each is judged here.
	probe := *in
	probe.bytes, probe.filter, probe.filterJSON = 0, nil, ""
	if err := p.planFiles(ctx, &probe); err != nil {
		return nil, "", err
	}
	var rows int64
	seen := map[string]bool{}
	md := in.pinned.Table.Metadata()
	for _, t := range probe.tasks {
		if len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) > 0 {
			return nil, "a data file has deletes", nil
		}
		path := t.File.FilePath()
		if seen[path] {
			continue
		}
		seen[path] = true
		match, why := filePartitionMatches(md.PartitionSpecByID(int(t.File.SpecID())), t.File.Partition(), conds)
		if why != "" {
			return nil, why, nil
		}
		if match {
			rows += t.File.Count()
		}
	}
	a, err := int64Row(b.schema, rows)
	if err != nil {
		return nil, "", err
	}
	a.Source = "metadata"
	what := fmt.Sprintf("count from %d manifest entries: %d rows", len(seen), rows)
	if len(conds) > 0 {
		what += fmt.Sprintf(" in the files whose identity partition matches the WHERE (%d conditions)", len(conds))
	}
	lines := []string{
		fmt.Sprintf("table\t%s snapshot %d, metadata %s", in.ref, snapshotID(in), in.pinned.MetadataLocation),
		"answered from metadata\t" + what,
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

// partitionCond is one `column = constant` conjunct of a WHERE over an
// identity-partitioned column.
type partitionCond struct {
	fieldID int
	value   any // int64 or string
}

// identityConds reads w as a conjunction of `column = constant` on the
// input's top-level int, long or string columns (DuckDB spells a
// boolean constant as a cast, which is not read); why says why
// not.
func identityConds(w node, in *input, alias string) ([]partitionCond, string) {
	const not = "a WHERE that is not column = constant on identity partition columns"
	var out []partitionCond
	cond := func(n node) bool {
		if str(n, "class") != "COMPARISON" || str(n, "type") != "COMPARE_EQUAL" {
			return false
		}
		col, _ := n["left"].(node)
		cst, _ := n["right"].(node)
		if str(col, "class") != "COLUMN_REF" {
			col, cst = cst, col
		}
		names := anyList(col["column_names"])
		if str(col, "class") != "COLUMN_REF" || len(names) == 0 || len(names) > 2 {
			return false
		}
		if q, _ := names[0].(string); len(names) == 2 && !strings.EqualFold(q, alias) {
			return false // a struct's field, or another scope's table
		}
		name, _ := names[len(names)-1].(string)
		f, ok := in.pinned.Table.Schema().FindFieldByNameCaseInsensitive(name)
		if !ok || strings.Contains(name, ".") {
			return false
		}
		id, _, v, ok := constant(cst)
		if !ok {
			return false
		}
		var val any
		switch f.Type.(type) {
		case iceberg.Int32Type, iceberg.Int64Type:
			num, isNum := v.(json.Number)
			if !isNum || !integerTypes[id] {
				return false
			}
			i, err := num.Int64()
			if err != nil {
				return false
			}
			val = i
		case iceberg.StringType:
			sv, isStr := v.(string)
			if !isStr || id != "VARCHAR" {
				return false
			}
			val = sv
		default:
			return false
		}
		out = append(out, partitionCond{fieldID: f.ID, value: val})
		return true
	}
	for _, c := range conjuncts(w) {
		if !cond(c) {
			return nil, not
		}
	}
	return out, ""
}

// integerTypes are DuckDB's integer constant types that fit an int64.
var integerTypes = map[string]bool{"TINYINT": true, "SMALLINT": true, "INTEGER": true, "BIGINT": true,
	"UTINYINT": true, "USMALLINT": true, "UINTEGER": true}

// filePartitionMatches tells whether every row of a file with spec and
// partition values satisfies conds (all or none of them do, each
// condition being on an identity partition field); why says why that
// cannot be told.
func filePartitionMatches(spec *iceberg.PartitionSpec, values map[int]any, conds []partitionCond) (bool, string) {
	if len(conds) == 0 {
		return true, ""
	}
	if spec == nil {
		return false, "a file's partition spec is missing"
	}
	match := true
	for _, c := range conds {
		found := false
		for _, pf := range spec.Fields() {
			if _, ok := pf.Transform.(iceberg.IdentityTransform); !ok || pf.SourceID() != c.fieldID || len(pf.SourceIDs) != 1 {
				continue
			}
			found = true
			if !partitionEquals(values[pf.FieldID], c.value) {
				match = false
			}
		}
		if !found {
			return false, "a WHERE column that is not an identity partition of every file"
		}
	}
	return match, ""
}

// partitionEquals compares a partition value (nil for NULL, which equals
// nothing) with a condition's constant.
func partitionEquals(pv, want any) bool {
	switch v := pv.(type) {
	case int32:
		w, ok := want.(int64)
		return ok && int64(v) == w
	case int64:
		w, ok := want.(int64)
		return ok && v == w
	case string:
		w, ok := want.(string)
		return ok && v == w
	}
	return false
}
