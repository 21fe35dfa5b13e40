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
	all := false
	wanted := map[*input]map[string]bool{}
	for _, in := range inputs {
		wanted[in] = map[string]bool{}
	}
	addName := func(in *input, name string) {
		found := false
		for _, f := range in.pinned.Table.Schema().Fields() {
			if strings.EqualFold(f.Name, name) {
				wanted[in][f.Name] = true
				found = true
			}
		}
		if !found && hasLineage(in) {
			for _, l := range lineageColumns {
				if strings.EqualFold(l, name) {
					wanted[in][l] = true
				}
			}
		}
	}
	addAnywhere := func(name string) {
		for _, in := range inputs {
			addName(in, name)
		}
	}
	// Names given to expressions (`n_name AS nation`) are not whole-row
	// references even when a table has that name too.
	exprAliases := map[string]bool{}
	walk(root, func(n node) bool {
		if str(n, "class") != "" && str(n, "alias") != "" {
			exprAliases[strings.ToLower(str(n, "alias"))] = true
		}
		return true
	})
	var visit func(n node) bool
	visit = func(n node) bool {
		if all {
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
			walk(rest, visit)
			return false
		}
		switch str(n, "class") {
		case "STAR", "COLUMNS":
			all = true
			return false
		case "COLUMN_REF":
			parts, _ := n["column_names"].([]any)
			names := make([]string, 0, len(parts))
			for _, p := range parts {
				s, _ := p.(string)
				names = append(names, s)
			}
			switch {
			case len(names) == 0:
			case len(names) == 1:
				if _, isAlias := aliases[strings.ToLower(names[0])]; isAlias && !anyHas(inputs, names[0]) && !exprAliases[strings.ToLower(names[0])] {
					// A table alias used as a whole-row value.
					all = true
					return false
				}
				addAnywhere(names[0])
			default:
				// a.b may be alias.column or column.field; c.s.t.col may be
				// a qualified column. Take every reading.
				for i := 0; i < len(names)-1; i++ {
					if in, ok := aliases[strings.ToLower(names[i])]; ok {
						addName(in, names[i+1])
					}
				}
				addAnywhere(names[0])
			}
		}
		if isTableRef(n) && str(n, "type") == "JOIN" {
			if str(n, "ref_type") == "NATURAL" {
				all = true
				return false
			}
			if using, _ := n["using_columns"].([]any); len(using) > 0 {
				for _, u := range using {
					if s, ok := u.(string); ok {
						addAnywhere(s)
					}
				}
			}
		}
		return true
	}
	walk(root, visit)
	// Lineage columns named anywhere, also where a star stopped the walk
	// above (SELECT *, _row_id …).
	lineageRef := map[string]bool{}
	walk(root, func(n node) bool {
		if str(n, "class") == "COLUMN_REF" {
			parts, _ := n["column_names"].([]any)
			if len(parts) > 0 {
				last, _ := parts[len(parts)-1].(string)
				for _, l := range lineageColumns {
					if strings.EqualFold(last, l) {
						lineageRef[l] = true
					}
				}
			}
		}
		return true
	})
	for _, in := range inputs {
		if in.meta != "" || in.restriction != nil {
			// Metadata tables are computed whole on the worker; a
			// restricted scan's subquery names every column.
			in.cols = nil
			continue
		}
		if all {
			in.cols = nil
			if hasLineage(in) && len(lineageRef) > 0 {
				for _, f := range in.pinned.Table.Schema().Fields() {
					in.cols = append(in.cols, f.Name)
				}
				for _, l := range lineageColumns {
					if lineageRef[l] {
						in.cols = append(in.cols, l)
					}
				}
			}
			continue
		}
		var cols, lineage []string
		for _, f := range in.pinned.Table.Schema().Fields() {
			if wanted[in][f.Name] {
				cols = append(cols, f.Name)
			}
		}
		for _, l := range lineageColumns {
			if wanted[in][l] && hasLineage(in) {
				lineage = append(lineage, l)
			}
		}
		switch {
		case len(cols) == 0 && len(lineage) == 0:
			// count(*) and the like still need rows: read the narrowest
			// column.
			cols = []string{narrowestColumn(in.pinned.Table.Schema())}
		case len(cols) == len(in.pinned.Table.Schema().Fields()) && len(lineage) == 0:
			cols = nil
		}
		in.cols = append(cols, lineage...)
	}
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
