package planner

import (
	"strings"

	"github.com/apache/iceberg-go"
)

// pruneColumns sets each input's projected columns to those the query can
// reference, conservatively: a star, COLUMNS(…), NATURAL join or anything
// unclear reads every column. aliases maps each reference's alias (lower
// case) to its input; refs are the original table names of references
// without an alias.
func pruneColumns(root node, inputs []*input, aliases map[string]*input) {
	w := &columnWalk{inputs: inputs, aliases: aliases, wanted: map[*input]map[string]bool{}, exprAliases: exprAliases(root)}
	for _, in := range inputs {
		w.wanted[in] = map[string]bool{}
	}
	walk(root, w.visit)
	lineageRef := lineageRefs(root)
	for _, in := range inputs {
		switch {
		case in.meta != "" || in.restriction != nil:
			// Metadata tables are computed whole on the worker; a
			// restricted scan's subquery names every column.
			in.cols = nil
		case w.all:
			in.cols = allColumns(in, lineageRef)
		default:
			in.cols = w.columns(in)
		}
	}
}

// columnWalk collects the columns a query's tree can reference, per input.
type columnWalk struct {
	inputs  []*input
	aliases map[string]*input
	// exprAliases are the names given to expressions (`n_name AS nation`):
	// not whole-row references even when a table has that name too.
	exprAliases map[string]bool
	wanted      map[*input]map[string]bool
	// all: something reads every column.
	all bool
}

// exprAliases are the names (lower case) the query gives to expressions.
func exprAliases(root node) map[string]bool {
	out := map[string]bool{}
	walk(root, func(n node) bool {
		if str(n, "class") != "" && str(n, "alias") != "" {
			out[strings.ToLower(str(n, "alias"))] = true
		}
		return true
	})
	return out
}

// lineageRefs are the lineage columns named anywhere in the query, also
// where a star stops the column walk (SELECT *, _row_id …).
func lineageRefs(root node) map[string]bool {
	out := map[string]bool{}
	walk(root, func(n node) bool {
		if str(n, "class") == "COLUMN_REF" {
			parts, _ := n["column_names"].([]any)
			if len(parts) > 0 {
				last, _ := parts[len(parts)-1].(string)
				for _, l := range lineageColumns {
					if strings.EqualFold(last, l) {
						out[l] = true
					}
				}
			}
		}
		return true
	})
	return out
}

// addName wants in's column named name (any case), or its lineage column.
func (w *columnWalk) addName(in *input, name string) {
	found := false
	for _, f := range in.pinned.Table.Schema().Fields() {
		if strings.EqualFold(f.Name, name) {
			w.wanted[in][f.Name] = true
			found = true
		}
	}
	if !found && hasLineage(in) {
		for _, l := range lineageColumns {
			if strings.EqualFold(l, name) {
				w.wanted[in][l] = true
			}
		}
	}
}

// addAnywhere wants the column named name of every input that has one.
func (w *columnWalk) addAnywhere(name string) {
	for _, in := range w.inputs {
		w.addName(in, name)
	}
}

// visit is the walk's visitor: it says whether to go below n.
func (w *columnWalk) visit(n node) bool {
	if w.all {
		return false
	}
	if sub := existsStar(n); sub != nil {
		// EXISTS (SELECT * …) tests for a row; its star reads nothing.
		rest := make(node, len(sub))
		for k, v := range sub {
			if k != "select_list" {
				rest[k] = v
			}
		}
		walk(rest, w.visit)
		return false
	}
	switch str(n, "class") {
	case "STAR", "COLUMNS":
		w.all = true
		return false
	case "COLUMN_REF":
		if !w.columnRef(n) {
			return false
		}
	}
	if isTableRef(n) && str(n, "type") == "JOIN" {
		return w.join(n)
	}
	return true
}

// columnRef wants what a column reference can name; false when it is a
// table alias used as a whole-row value (every column is read).
func (w *columnWalk) columnRef(n node) bool {
	parts, _ := n["column_names"].([]any)
	names := make([]string, 0, len(parts))
	for _, p := range parts {
		s, _ := p.(string)
		names = append(names, s)
	}
	switch {
	case len(names) == 0:
	case len(names) == 1:
		if _, isAlias := w.aliases[strings.ToLower(names[0])]; isAlias && !anyHas(w.inputs, names[0]) && !w.exprAliases[strings.ToLower(names[0])] {
			// A table alias used as a whole-row value.
			w.all = true
			return false
		}
		w.addAnywhere(names[0])
	default:
		// a.b may be alias.column or column.field; c.s.t.col may be
		// a qualified column. Take every reading.
		for i := 0; i < len(names)-1; i++ {
			if in, ok := w.aliases[strings.ToLower(names[i])]; ok {
				w.addName(in, names[i+1])
			}
		}
		w.addAnywhere(names[0])
	}
	return true
}

// join wants a join's USING columns; a NATURAL join reads every column.
func (w *columnWalk) join(n node) bool {
	if str(n, "ref_type") == "NATURAL" {
		w.all = true
		return false
	}
	if using, _ := n["using_columns"].([]any); len(using) > 0 {
		for _, u := range using {
			if s, ok := u.(string); ok {
				w.addAnywhere(s)
			}
		}
	}
	return true
}

// allColumns is every column of in (nil: the whole schema), with the
// lineage columns the query names when in has them.
func allColumns(in *input, lineageRef map[string]bool) []string {
	if !hasLineage(in) || len(lineageRef) == 0 {
		return nil
	}
	var cols []string
	for _, f := range in.pinned.Table.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	for _, l := range lineageColumns {
		if lineageRef[l] {
			cols = append(cols, l)
		}
	}
	return cols
}

// columns are the columns of in the walk wants, in schema order then the
// lineage columns (nil: the whole schema; the narrowest column when none,
// since count(*) and the like still need rows).
func (w *columnWalk) columns(in *input) []string {
	var cols, lineage []string
	for _, f := range in.pinned.Table.Schema().Fields() {
		if w.wanted[in][f.Name] {
			cols = append(cols, f.Name)
		}
	}
	for _, l := range lineageColumns {
		if w.wanted[in][l] && hasLineage(in) {
			lineage = append(lineage, l)
		}
	}
	switch {
	case len(cols) == 0 && len(lineage) == 0:
		cols = []string{narrowestColumn(in.pinned.Table.Schema())}
	case len(cols) == len(in.pinned.Table.Schema().Fields()) && len(lineage) == 0:
		cols = nil
	}
	return append(cols, lineage...)
}

// lineageColumns are the row-lineage metadata columns of format-version 3
// tables, in the order a scan projects them: not in the table's schema (a
// star does not read them) but readable by name, as in Spark.
var lineageColumns = []string{iceberg.RowIDColumnName, iceberg.LastUpdatedSequenceNumberColumnName}

// hasLineage tells whether in reads a v3 table (not a metadata table) whose
// schema does not itself use the lineage columns' names.
func hasLineage(in *input) bool {
	if in.meta != "" || in.pinned.Table.Metadata().Version() < 3 {
		return false
	}
	for _, l := range lineageColumns {
		if _, ok := in.pinned.Table.Schema().FindFieldByNameCaseInsensitive(l); ok {
			return false
		}
	}
	return true
}

// narrowestColumn picks a cheap column to count rows with.
func narrowestColumn(s *iceberg.Schema) string {
	best, bestW := "", 1<<30
	for _, f := range s.Fields() {
		w := 64
		switch f.Type.(type) {
		case iceberg.BooleanType:
			w = 1
		case iceberg.Int32Type, iceberg.DateType, iceberg.Float32Type:
			w = 4
		case iceberg.Int64Type, iceberg.Float64Type, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimeType:
			w = 8
		case iceberg.DecimalType:
			w = 16
		}
		if w < bestW {
			best, bestW = f.Name, w
		}
	}
	return best
}

func anyHas(inputs []*input, name string) bool {
	for _, in := range inputs {
		for _, f := range in.pinned.Table.Schema().Fields() {
			if strings.EqualFold(f.Name, name) {
				return true
			}
		}
	}
	return false
}

// existsStar returns the SELECT node of an EXISTS subquery whose select
// list is a bare *, or nil.
func existsStar(n node) node {
	if str(n, "class") != "SUBQUERY" {
		return nil
	}
	if t := str(n, "subquery_type"); t != "EXISTS" && t != "NOT_EXISTS" {
		return nil
	}
	sq, _ := n["subquery"].(node)
	sel, _ := sq["node"].(node)
	if str(sel, "type") != "SELECT_NODE" {
		return nil
	}
	list, _ := sel["select_list"].([]any)
	if len(list) != 1 {
		return nil
	}
	star, _ := list[0].(node)
	if str(star, "class") != "STAR" || str(star, "relation_name") != "" || star["columns"] == true || star["expr"] != nil {
		return nil
	}
	return sel
}
