package planner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/parse"
)

// SortOrderOf builds the table's sort order; no items is the unsorted
// order. Nulls sort first ascending and last descending unless given.
func SortOrderOf(schema *iceberg.Schema, items []parse.SortItem) (table.SortOrder, error) {
	if len(items) == 0 {
		return table.UnsortedSortOrder, nil
	}
	fields := make([]table.SortField, len(items))
	for i, it := range items {
		f, ok := schema.FindFieldByName(it.Column)
		if !ok {
			f, ok = schema.FindFieldByNameCaseInsensitive(it.Column)
		}
		if !ok {
			return table.SortOrder{}, fmt.Errorf("%w: sort column %q is not a column of the table", ErrInvalid, it.Column)
		}
		sf := table.SortField{SourceIDs: []int{f.ID}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst}
		if it.Desc {
			sf.Direction, sf.NullOrder = table.SortDESC, table.NullsLast
		}
		if it.NullsFirst != nil {
			sf.NullOrder = table.NullsLast
			if *it.NullsFirst {
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
func ParseSortOrder(tbl *table.Table, text string) ([]parse.SortItem, error) {
	if strings.TrimSpace(text) == "" {
		if tbl.SortOrder().IsUnsorted() {
			return nil, errors.New("strategy 'sort' needs a sort_order: the table has none")
		}
		return nil, nil
	}
	if strings.Contains(strings.ToLower(text), "zorder") {
		return nil, errors.New("sort_order: zorder(…) is not supported")
	}
	items, err := parse.SortOrder(text)
	if err != nil {
		return nil, fmt.Errorf("sort_order %q: %v", text, err)
	}
	if _, err := SortOrderOf(tbl.Schema(), items); err != nil {
		return nil, err
	}
	for i, it := range items {
		f, ok := tbl.Schema().FindFieldByName(it.Column)
		if !ok {
			f, _ = tbl.Schema().FindFieldByNameCaseInsensitive(it.Column)
		}
		items[i].Column = f.Name
	}
	return items, nil
}
