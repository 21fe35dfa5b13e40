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
		for _, f := range in.pinned.Table.Schema().Fields() {
			if strings.EqualFold(f.Name, name) {
				wanted[in][f.Name] = true
			}
		}
	}
	addAnywhere := func(name string) {
		for _, in := range inputs {
			addName(in, name)
		}
	}
	walk(root, func(n node) bool {
		if all {
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
				if _, isAlias := aliases[strings.ToLower(names[0])]; isAlias && !anyHas(inputs, names[0]) {
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
	})
	for _, in := range inputs {
		if all || in.meta != "" {
			// Metadata tables are computed whole on the worker.
			in.cols = nil
			continue
		}
		var cols []string
		for _, f := range in.pinned.Table.Schema().Fields() {
			if wanted[in][f.Name] {
				cols = append(cols, f.Name)
			}
		}
		if len(cols) == 0 {
			// count(*) and the like still need rows: read the narrowest
			// column.
			cols = []string{narrowestColumn(in.pinned.Table.Schema())}
		}
		if len(cols) == len(in.pinned.Table.Schema().Fields()) {
			cols = nil
		}
		in.cols = cols
	}
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
