package planner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// SortItem is one entry of ORDERED BY.
type SortItem struct {
	column     string
	desc       bool
	nullsFirst *bool
}

// sortItems reads "( col [ASC|DESC] [NULLS FIRST|LAST], … )".
func (p *Parser) SortItems() ([]SortItem, error) {
	if !p.AcceptPunct("(") {
		return nil, p.Unexpected()
	}
	var items []SortItem
	for {
		col, err := p.Name(16)
		if err != nil {
			return nil, err
		}
		it := SortItem{column: joinDots(col)}
		switch {
		case p.Accept("DESC"):
			it.desc = true
		case p.Accept("ASC"):
		}
		switch {
		case p.Accept("NULLS", "FIRST"):
			v := true
			it.nullsFirst = &v
		case p.Accept("NULLS", "LAST"):
			v := false
			it.nullsFirst = &v
		}
		items = append(items, it)
		if p.AcceptPunct(")") {
			return items, nil
		}
		if !p.AcceptPunct(",") {
			return nil, p.Unexpected()
		}
	}
}

func joinDots(parts []string) string {
	out := parts[0]
	for _, p := range parts[1:] {
		out += "." + p
	}
	return out
}

// SortOrderOf builds the table's sort order; no items is the unsorted
// order. Nulls sort first ascending and last descending unless given.
func SortOrderOf(schema *iceberg.Schema, items []SortItem) (table.SortOrder, error) {
	if len(items) == 0 {
		return table.UnsortedSortOrder, nil
	}
	fields := make([]table.SortField, len(items))
	for i, it := range items {
		f, ok := schema.FindFieldByName(it.column)
		if !ok {
			f, ok = schema.FindFieldByNameCaseInsensitive(it.column)
		}
		if !ok {
			return table.SortOrder{}, fmt.Errorf("%w: sort column %q is not a column of the table", ErrInvalid, it.column)
		}
		sf := table.SortField{SourceIDs: []int{f.ID}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst}
		if it.desc {
			sf.Direction, sf.NullOrder = table.SortDESC, table.NullsLast
		}
		if it.nullsFirst != nil {
			sf.NullOrder = table.NullsLast
			if *it.nullsFirst {
				sf.NullOrder = table.NullsFirst
			}
		}
		fields[i] = sf
	}
	order, err := table.NewSortOrder(1, fields)
	if err != nil {
		return table.SortOrder{}, fmt.Errorf("%w: ORDERED BY: %v", ErrInvalid, err)
	}
	return order, nil
}

// ParseSortOrder reads Spark's sort_order ('col [ASC|DESC] [NULLS
// FIRST|LAST], …'), with the column names as tbl spells them; empty means
// the table's sort order, which must exist.
func ParseSortOrder(tbl *table.Table, text string) ([]SortItem, error) {
	if strings.TrimSpace(text) == "" {
		if tbl.SortOrder().IsUnsorted() {
			return nil, errors.New("strategy 'sort' needs a sort_order: the table has none")
		}
		return nil, nil
	}
	if strings.Contains(strings.ToLower(text), "zorder") {
		return nil, errors.New("sort_order: zorder(…) is not supported")
	}
	ps, err := ParseStatement("(" + text + ")")
	if err != nil {
		return nil, err
	}
	items, err := ps.SortItems()
	if err == nil {
		err = ps.End()
	}
	if err != nil {
		return nil, fmt.Errorf("sort_order %q: %v", text, err)
	}
	if _, err := SortOrderOf(tbl.Schema(), items); err != nil {
		return nil, err
	}
	for i, it := range items {
		f, ok := tbl.Schema().FindFieldByName(it.column)
		if !ok {
			f, _ = tbl.Schema().FindFieldByNameCaseInsensitive(it.column)
		}
		items[i].column = f.Name
	}
	return items, nil
}
