package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// tablePageRows is how many rows the table format holds before it prints
// them: the client's memory for a result is one page, whatever its size.
const tablePageRows = 1000

// tableWriter prints aligned columns, psql style: a header, a rule, the
// rows (numeric columns right-aligned, NULL for nulls, control characters
// escaped) and a "(N rows)" footer. Results are separated by a blank line.
// Rows are printed a page at a time; a column only widens when a later
// page needs it, so one page is aligned with itself and the ones before.
type tableWriter struct {
	out     io.Writer
	printed bool
	names   []string
	right   []bool
	widths  []int
	header  bool // printed for the current result
	page    [][]string
	rows    int64
}

func (t *tableWriter) separate() error {
	if t.printed {
		if _, err := io.WriteString(t.out, "\n"); err != nil {
			return err
		}
	}
	t.printed = true
	return nil
}

func (t *tableWriter) begin(schema *arrow.Schema) error {
	t.names = make([]string, schema.NumFields())
	t.right = make([]bool, schema.NumFields())
	t.widths = make([]int, schema.NumFields())
	for i, f := range schema.Fields() {
		t.names[i] = escapeControl(f.Name)
		t.right[i] = isNumeric(f.Type)
		t.widths[i] = utf8.RuneCountInString(t.names[i])
	}
	t.page, t.rows, t.header = t.page[:0], 0, false
	return nil
}

func (t *tableWriter) write(rec arrow.RecordBatch) error {
	cols := rec.Columns()
	for r := range int(rec.NumRows()) {
		row := make([]string, len(cols))
		for c, col := range cols {
			if col.IsNull(r) {
				row[c] = "NULL"
			} else {
				row[c] = escapeControl(cellText(col, r))
			}
		}
		t.page = append(t.page, row)
		if len(t.page) >= tablePageRows {
			if err := t.flushPage(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flushPage prints the header (once per result) and the rows held.
func (t *tableWriter) flushPage() error {
	for _, row := range t.page {
		for i, v := range row {
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(v))
		}
	}
	var b strings.Builder
	if !t.header {
		if err := t.separate(); err != nil {
			return err
		}
		t.line(&b, t.names)
		rule := make([]string, len(t.widths))
		for i, w := range t.widths {
			rule[i] = strings.Repeat("-", w+2)
		}
		b.WriteString(strings.Join(rule, "+") + "\n")
		t.header = true
	}
	for _, row := range t.page {
		t.line(&b, row)
	}
	t.rows += int64(len(t.page))
	t.page = t.page[:0]
	_, err := io.WriteString(t.out, b.String())
	return err
}

// line appends one row of cells, padded to the column widths, without
// trailing blanks.
func (t *tableWriter) line(b *strings.Builder, cells []string) {
	var l strings.Builder
	l.WriteByte(' ')
	for i, v := range cells {
		if i > 0 {
			l.WriteString(" | ")
		}
		pad := strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(v))
		if t.right[i] {
			l.WriteString(pad + v)
		} else {
			l.WriteString(v + pad)
		}
	}
	b.WriteString(strings.TrimRight(l.String(), " "))
	b.WriteByte('\n')
}

func (t *tableWriter) end() error {
	if err := t.flushPage(); err != nil {
		return err
	}
	footer := fmt.Sprintf("(%d rows)\n", t.rows)
	if t.rows == 1 {
		footer = "(1 row)\n"
	}
	_, err := io.WriteString(t.out, footer)
	return err
}

func (t *tableWriter) affected(n int64) error {
	if err := t.separate(); err != nil {
		return err
	}
	_, err := io.WriteString(t.out, affectedText(n)+"\n")
	return err
}
