package parse

import (
	"strconv"
	"strings"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// CreateTable is CREATE [OR REPLACE] TABLE [IF NOT EXISTS] name
// (columns) | AS query, with Iceberg's PARTITIONED BY, ORDERED BY and
// WITH (properties) clauses (kinds CreateTable and ReplaceTable).
type CreateTable struct {
	IfNotExists bool
	Name        []string
	// Columns is the column list's text, parentheses included ("" with
	// AS): DuckDB parses it.
	Columns   string
	Partition []PartitionItem
	Order     []SortItem
	// With are WITH's properties (nil without WITH).
	With map[string]string
	// As is the query of CREATE TABLE … AS (nil with a column list).
	As *Statement
}

func (*CreateTable) body() {}

// DropTable is DROP TABLE [IF EXISTS] name [PURGE].
type DropTable struct {
	IfExists bool
	Name     []string
	Purge    bool
}

func (*DropTable) body() {}

// PartitionItem is one entry of PARTITIONED BY (or of ALTER TABLE … ADD
// or DROP PARTITION FIELD): a column with a transform (empty for
// identity) and its numeric argument (bucket count, width).
type PartitionItem struct {
	Transform string
	// Column is the (possibly dotted) source column.
	Column string
	Arg    int
	HasArg bool
}

// SortItem is one entry of ORDERED BY.
type SortItem struct {
	// Column is the (possibly dotted) column.
	Column string
	Desc   bool
	// NullsFirst is NULLS FIRST (true) or LAST (false); nil when not
	// given.
	NullsFirst *bool
}

func parseCreateTable(c *cursor) (Body, error) {
	t := &CreateTable{}
	if c.st.Kind == KindReplaceTable && c.at("IF", "NOT", "EXISTS") {
		return nil, syntaxf("CREATE OR REPLACE TABLE and IF NOT EXISTS cannot be used together")
	}
	t.IfNotExists = c.accept("IF", "NOT", "EXISTS")
	var err error
	if t.Name, err = c.name(3); err != nil {
		return nil, err
	}
	asQuery := !c.atPunct("(")
	if !asQuery {
		open, closing, err := c.group()
		if err != nil {
			return nil, err
		}
		t.Columns = c.text(open, closing)
	}
	if err := t.clauses(c, asQuery); err != nil {
		return nil, err
	}
	if asQuery && t.As == nil {
		return nil, syntaxf("CREATE TABLE needs a column list or AS query")
	}
	return t, nil
}

// clauses reads the clauses after the name (and column list) to the end
// of the statement, or with asQuery to the end of AS query (without
// asQuery, AS is unsupported there).
func (t *CreateTable) clauses(c *cursor, asQuery bool) error {
	var seenPart, seenWith, seenOrder bool
	var err error
	for !c.done() && t.As == nil {
		switch {
		case !seenPart && c.accept("PARTITIONED", "BY"):
			seenPart = true
			if t.Partition, err = c.partitionItems(); err != nil {
				return err
			}
		case !seenOrder && c.accept("ORDERED", "BY"):
			seenOrder = true
			if t.Order, err = c.sortItems(); err != nil {
				return err
			}
		case !seenWith && c.accept("WITH"):
			seenWith = true
			if t.With, err = c.properties(); err != nil {
				return err
			}
		case !asQuery && c.at("AS"):
			return unsupportedf("CREATE TABLE … AS SELECT")
		case asQuery && c.at("AS") && c.pos+1 < len(c.toks):
			t.As = c.st.subQuery(c.pos+1, c.last())
			c.pos = len(c.toks)
		default:
			return c.unexpected()
		}
	}
	return nil
}

func parseDropTable(c *cursor) (Body, error) {
	t := &DropTable{IfExists: c.accept("IF", "EXISTS")}
	var err error
	if t.Name, err = c.name(3); err != nil {
		return nil, err
	}
	t.Purge = c.accept("PURGE")
	return t, c.end()
}

// partitionItems reads "( item, … )" of PARTITIONED BY.
func (c *cursor) partitionItems() ([]PartitionItem, error) {
	if !c.acceptPunct("(") {
		return nil, c.unexpected()
	}
	var items []PartitionItem
	for {
		it, err := c.partitionItem()
		if err != nil {
			return nil, err
		}
		items = append(items, it)
		if c.acceptPunct(")") {
			return items, nil
		}
		if !c.acceptPunct(",") {
			return nil, c.unexpected()
		}
	}
}

// partitionItem reads "column" or "transform([n,] column)".
func (c *cursor) partitionItem() (PartitionItem, error) {
	var it PartitionItem
	if !(c.pos+1 < len(c.toks) && c.peek().Kind == sqltok.Word && c.toks[c.pos+1].IsOp("(")) {
		col, err := c.name(16)
		if err != nil {
			return it, err
		}
		it.Column = strings.Join(col, ".")
		return it, nil
	}
	it.Transform = c.peek().Value
	c.pos += 2
	for n := 0; ; n++ {
		if n > 1 {
			return it, syntaxf("partition transform %s takes at most two arguments", it.Transform)
		}
		if !c.done() && c.peek().Kind == sqltok.Number {
			if it.HasArg {
				return it, c.unexpected()
			}
			v, err := strconv.Atoi(c.peek().Value)
			if err != nil {
				return it, syntaxf("partition transform %s: bad number %s", it.Transform, c.peek().Value)
			}
			it.Arg, it.HasArg = v, true
			c.pos++
		} else {
			if it.Column != "" {
				return it, c.unexpected()
			}
			col, err := c.name(16)
			if err != nil {
				return it, err
			}
			it.Column = strings.Join(col, ".")
		}
		if !c.acceptPunct(",") {
			break
		}
	}
	if !c.acceptPunct(")") {
		return it, c.unexpected()
	}
	if it.Column == "" {
		return it, syntaxf("partition transform %s names no column", it.Transform)
	}
	return it, nil
}

// lonePartitionItem reads one partition item to the end of the
// statement (ALTER TABLE … ADD or DROP PARTITION FIELD item).
func (c *cursor) lonePartitionItem() (PartitionItem, error) {
	it, err := c.partitionItem()
	if err != nil {
		return it, err
	}
	if !c.done() {
		return it, syntaxf("one partition field at a time")
	}
	return it, nil
}

// sortItems reads "( col [ASC|DESC] [NULLS FIRST|LAST], … )".
func (c *cursor) sortItems() ([]SortItem, error) {
	if !c.acceptPunct("(") {
		return nil, c.unexpected()
	}
	var items []SortItem
	for {
		col, err := c.name(16)
		if err != nil {
			return nil, err
		}
		it := SortItem{Column: strings.Join(col, ".")}
		switch {
		case c.accept("DESC"):
			it.Desc = true
		case c.accept("ASC"):
		}
		switch {
		case c.accept("NULLS", "FIRST"):
			v := true
			it.NullsFirst = &v
		case c.accept("NULLS", "LAST"):
			v := false
			it.NullsFirst = &v
		}
		items = append(items, it)
		if c.acceptPunct(")") {
			return items, nil
		}
		if !c.acceptPunct(",") {
			return nil, c.unexpected()
		}
	}
}

// properties reads "( key = value, … )". Keys are strings or dotted
// names; values strings, numbers or true/false.
func (c *cursor) properties() (map[string]string, error) {
	if !c.acceptPunct("(") {
		return nil, c.unexpected()
	}
	props := map[string]string{}
	for {
		key, err := c.propertyKey()
		if err != nil {
			return nil, err
		}
		if !c.acceptPunct("=") || c.done() {
			return nil, c.unexpected()
		}
		t := c.peek()
		switch {
		case t.Kind == sqltok.String, t.Kind == sqltok.Number:
			props[key] = t.Value
		case t.Is("true"), t.Is("false"):
			props[key] = strings.ToLower(t.Value)
		default:
			return nil, c.unexpected()
		}
		c.pos++
		if c.acceptPunct(")") {
			return props, nil
		}
		if !c.acceptPunct(",") {
			return nil, c.unexpected()
		}
	}
}

// propertyKey reads a property key: a string, or words joined by "."
// or "-" (format-version, write.parquet.compression-codec).
func (c *cursor) propertyKey() (string, error) {
	if !c.done() && c.peek().Kind == sqltok.String {
		c.pos++
		return c.toks[c.pos-1].Value, nil
	}
	var b strings.Builder
	for {
		w, err := c.ident()
		if err != nil {
			return "", err
		}
		b.WriteString(w)
		if !c.atPunct(".") && !c.atPunct("-") {
			return b.String(), nil
		}
		b.WriteString(c.peek().Value)
		c.pos++
	}
}

// SortOrder reads a sort order given as text ('col [ASC|DESC] [NULLS
// FIRST|LAST], …', Spark's sort_order argument of rewrite_data_files).
func SortOrder(text string) ([]SortItem, error) {
	c, err := textCursor("(" + text + ")")
	if err != nil {
		return nil, err
	}
	items, err := c.sortItems()
	if err == nil {
		err = c.end()
	}
	return items, err
}

// TableName reads a table name given as text ('t', 'schema.t' or
// 'catalog.schema.t', a procedure's table argument).
func TableName(text string) ([]string, error) {
	c, err := textCursor(text)
	if err != nil {
		return nil, err
	}
	parts, err := c.name(3)
	if err == nil {
		err = c.end()
	}
	return parts, err
}

// textCursor is a cursor over the tokens of a piece of text that is not
// a statement (an argument's value), without trailing semicolons.
func textCursor(text string) (*cursor, error) {
	toks, err := sqltok.Tokenize(text)
	if err != nil {
		return nil, syntaxf("%v", err)
	}
	toks = sqltok.Trim(toks)
	st := &Statement{Text: text, src: text, all: toks, toks: toks}
	return &cursor{st: st, toks: toks}, nil
}
