package parse

import (
	"strings"
)

// AlterTable is ALTER TABLE [IF EXISTS] name action: one action per
// statement (as in DuckDB), parsed into a typed value that package
// statement applies.
type AlterTable struct {
	IfExists bool
	Name     []string
	Action   AlterAction
}

func (*AlterTable) body() {}

// AlterAction is one typed action of ALTER TABLE: *AddColumn,
// *DropColumn, *RenameColumn, *SetColumnType, *DropNotNull, *SetNotNull,
// *SetProperties, *UnsetProperties, *AddPartitionField,
// *DropPartitionField, *RenameTable, *SetIdentifierFields,
// *DropIdentifierFields, *RefChange (branch and tag DDL, refs.go) or
// *Execute.
type AlterAction interface{ alterAction() }

// AddColumn is ADD [COLUMN] [IF NOT EXISTS] col TYPE.
type AddColumn struct {
	IfNotExists bool
	Column      string
	// Def is the column definition as written ("col TYPE …"): DuckDB
	// parses it.
	Def string
}

// DropColumn is DROP [COLUMN] [IF EXISTS] col.
type DropColumn struct {
	IfExists bool
	Column   string
}

// RenameColumn is RENAME [COLUMN] from TO to.
type RenameColumn struct{ From, To string }

// SetColumnType is ALTER [COLUMN] col [SET DATA] TYPE type; Type is the
// type as written, which DuckDB parses.
type SetColumnType struct{ Column, Type string }

// DropNotNull is ALTER [COLUMN] col DROP NOT NULL.
type DropNotNull struct{ Column string }

// SetNotNull is ALTER [COLUMN] col SET NOT NULL (refused when applied:
// existing rows may hold NULLs).
type SetNotNull struct{ Column string }

// SetProperties is SET [TBLPROPERTIES | PROPERTIES] (key = value, …).
type SetProperties struct{ Props map[string]string }

// UnsetProperties is UNSET [TBLPROPERTIES | PROPERTIES] (key, …).
type UnsetProperties struct{ Keys []string }

// AddPartitionField is ADD PARTITION FIELD|KEY item.
type AddPartitionField struct{ Item PartitionItem }

// DropPartitionField is DROP PARTITION FIELD|KEY item, or the partition
// field's name (Item nil).
type DropPartitionField struct {
	Item *PartitionItem
	Name string
}

// RenameTable is RENAME TO name.
type RenameTable struct{ To []string }

// SetIdentifierFields is SET IDENTIFIER FIELDS col, ….
type SetIdentifierFields struct{ Columns []string }

// DropIdentifierFields is DROP IDENTIFIER FIELDS [col, …] (nil: all).
type DropIdentifierFields struct{ Columns []string }

// Execute is Trino's EXECUTE procedure[(args)] [WHERE pred] (WHERE only
// for optimize).
type Execute struct {
	Procedure string
	Args      []Arg
	Where     string
}

func (*AddColumn) alterAction()            {}
func (*DropColumn) alterAction()           {}
func (*RenameColumn) alterAction()         {}
func (*SetColumnType) alterAction()        {}
func (*DropNotNull) alterAction()          {}
func (*SetNotNull) alterAction()           {}
func (*SetProperties) alterAction()        {}
func (*UnsetProperties) alterAction()      {}
func (*AddPartitionField) alterAction()    {}
func (*DropPartitionField) alterAction()   {}
func (*RenameTable) alterAction()          {}
func (*SetIdentifierFields) alterAction()  {}
func (*DropIdentifierFields) alterAction() {}
func (*Execute) alterAction()              {}

func parseAlterTable(c *cursor) (Body, error) {
	a := &AlterTable{IfExists: c.accept("IF", "EXISTS")}
	var err error
	if a.Name, err = c.name(3); err != nil {
		return nil, err
	}
	switch {
	case c.accept("EXECUTE"):
		a.Action, err = parseExecute(c)
	case c.at("SET", "IDENTIFIER", "FIELDS"), c.at("DROP", "IDENTIFIER", "FIELDS"):
		a.Action, err = parseIdentifierFields(c)
	case atRefDDL(c):
		a.Action, err = parseRefChange(c)
	case c.accept("RENAME", "TO"):
		var to []string
		if to, err = c.name(3); err == nil {
			a.Action, err = &RenameTable{To: to}, c.end()
		}
	case c.at("ADD", "PARTITION"), c.at("DROP", "PARTITION"):
		a.Action, err = parsePartitionField(c)
	case c.at("ALTER"):
		a.Action, err = parseAlterColumn(c)
	case c.at("SET"), c.at("UNSET"):
		a.Action, err = parseProperties(c)
	default:
		a.Action, err = parseColumnAction(c)
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// parsePartitionField reads ADD PARTITION FIELD|KEY item and DROP
// PARTITION FIELD|KEY (item | name).
func parsePartitionField(c *cursor) (AlterAction, error) {
	add := c.at("ADD")
	if !c.accept("ADD", "PARTITION", "FIELD") && !c.accept("ADD", "PARTITION", "KEY") &&
		!c.accept("DROP", "PARTITION", "FIELD") && !c.accept("DROP", "PARTITION", "KEY") {
		return parseColumnAction(c) // a column called partition
	}
	if add {
		it, err := c.lonePartitionItem()
		if err != nil {
			return nil, err
		}
		return &AddPartitionField{Item: it}, nil
	}
	if c.pos+1 < len(c.toks) && c.toks[c.pos+1].IsOp("(") {
		it, err := c.lonePartitionItem()
		if err != nil {
			return nil, err
		}
		return &DropPartitionField{Item: &it}, nil
	}
	name, err := c.ident()
	if err != nil {
		return nil, err
	}
	return &DropPartitionField{Name: name}, c.end()
}

// parseColumnAction reads ADD, DROP and RENAME of a column.
func parseColumnAction(c *cursor) (AlterAction, error) {
	switch {
	case c.accept("ADD"):
		c.accept("COLUMN")
		ifNotExists := c.accept("IF", "NOT", "EXISTS")
		if c.done() {
			return nil, c.unexpected()
		}
		if !c.balanced() {
			return nil, syntaxf("unbalanced parentheses in the column definition")
		}
		name := c.peek().Value
		return &AddColumn{IfNotExists: ifNotExists, Column: name, Def: c.rest()}, nil
	case c.accept("DROP"):
		c.accept("COLUMN")
		ifExists := c.accept("IF", "EXISTS")
		name, err := c.ident()
		if err != nil {
			return nil, err
		}
		return &DropColumn{IfExists: ifExists, Column: name}, c.end()
	case c.accept("RENAME"):
		c.accept("COLUMN")
		from, err := c.ident()
		if err != nil {
			return nil, err
		}
		if !c.accept("TO") {
			return nil, c.unexpected()
		}
		to, err := c.ident()
		if err != nil {
			return nil, err
		}
		return &RenameColumn{From: from, To: to}, c.end()
	}
	return nil, c.unexpected()
}

// parseAlterColumn reads ALTER [COLUMN] col DROP NOT NULL | SET NOT NULL
// | [SET DATA] TYPE type.
func parseAlterColumn(c *cursor) (AlterAction, error) {
	c.accept("ALTER")
	c.accept("COLUMN")
	name, err := c.ident()
	if err != nil {
		return nil, err
	}
	switch {
	case c.accept("DROP", "NOT", "NULL"):
		return &DropNotNull{Column: name}, c.end()
	case c.accept("SET", "NOT", "NULL"):
		return &SetNotNull{Column: name}, nil
	case c.accept("SET", "DATA", "TYPE"), c.accept("TYPE"):
	default:
		return nil, c.unexpected()
	}
	if c.done() {
		return nil, c.unexpected()
	}
	if !c.balanced() {
		return nil, syntaxf("unbalanced parentheses in the type")
	}
	return &SetColumnType{Column: name, Type: c.rest()}, nil
}

// parseProperties reads SET and UNSET [TBLPROPERTIES | PROPERTIES].
func parseProperties(c *cursor) (AlterAction, error) {
	set := c.accept("SET")
	if !set {
		c.accept("UNSET")
	}
	c.accept("TBLPROPERTIES")
	c.accept("PROPERTIES")
	if set {
		props, err := c.properties()
		if err != nil {
			return nil, err
		}
		return &SetProperties{Props: props}, c.end()
	}
	if !c.acceptPunct("(") {
		return nil, c.unexpected()
	}
	var keys []string
	for {
		k, err := c.propertyKey()
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
		if c.acceptPunct(")") {
			break
		}
		if !c.acceptPunct(",") {
			return nil, c.unexpected()
		}
	}
	return &UnsetProperties{Keys: keys}, c.end()
}

// parseIdentifierFields reads SET IDENTIFIER FIELDS a, b and DROP
// IDENTIFIER FIELDS [a, b].
func parseIdentifierFields(c *cursor) (AlterAction, error) {
	set := c.accept("SET", "IDENTIFIER", "FIELDS")
	if !set {
		c.accept("DROP", "IDENTIFIER", "FIELDS")
	}
	var names []string
	for !c.done() {
		n, err := c.name(16)
		if err != nil {
			return nil, err
		}
		names = append(names, strings.Join(n, "."))
		if !c.acceptPunct(",") {
			break
		}
	}
	if err := c.end(); err != nil {
		return nil, err
	}
	if set {
		if len(names) == 0 {
			return nil, c.unexpected()
		}
		return &SetIdentifierFields{Columns: names}, nil
	}
	return &DropIdentifierFields{Columns: names}, nil
}

// parseExecute reads EXECUTE's procedure[(args)] [WHERE pred].
func parseExecute(c *cursor) (AlterAction, error) {
	name, err := c.ident()
	if err != nil {
		return nil, err
	}
	x := &Execute{Procedure: name}
	if c.atPunct("(") {
		if x.Args, err = c.args(); err != nil {
			return nil, err
		}
	}
	if !c.done() {
		if !strings.EqualFold(name, "optimize") {
			return nil, c.unexpected()
		}
		if x.Where, err = c.where("ALTER TABLE … EXECUTE optimize"); err != nil {
			return nil, err
		}
	}
	return x, nil
}
