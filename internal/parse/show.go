package parse

import (
	"strings"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// ShowWhat is what a SHOW or DESCRIBE statement asks for.
type ShowWhat uint8

const (
	ShowCatalogs    ShowWhat = iota + 1 // SHOW CATALOGS [LIKE p]
	ShowDatabases                       // SHOW DATABASES [LIKE p]
	ShowSchemas                         // SHOW SCHEMAS [FROM|IN c] [LIKE p]
	ShowTables                          // SHOW TABLES [FROM|IN [c.]s] [LIKE p]
	ShowColumns                         // SHOW COLUMNS FROM|IN t [LIKE p]
	ShowCreateTable                     // SHOW CREATE TABLE t
	DescribeTable                       // DESCRIBE|DESC t
	DescribeQuery                       // DESCRIBE|DESC <query>
)

// Show is a statement that describes what a session can see.
type Show struct {
	What ShowWhat
	// Name is the catalog, schema or table named (nil for the
	// session's).
	Name []string
	// Like is the pattern of LIKE 'p', nil without one.
	Like *string
	// Query is DESCRIBE's query.
	Query *Statement
}

func (*Show) body() {}

func parseShow(c *cursor) (Body, error) {
	if c.toks[0].Is("DESCRIBE") || c.toks[0].Is("DESC") {
		if c.atQuery() || c.at("VALUES") {
			return &Show{What: DescribeQuery, Query: c.st.subQuery(c.pos, c.last())}, nil
		}
		name, err := c.name(3)
		if err != nil {
			return nil, err
		}
		return &Show{What: DescribeTable, Name: name}, c.end()
	}
	sh := &Show{}
	var err error
	switch {
	case c.accept("CATALOGS"):
		sh.What = ShowCatalogs
	case c.accept("DATABASES"):
		sh.What = ShowDatabases
	case c.accept("SCHEMAS"):
		sh.What = ShowSchemas
		if c.accept("FROM") || c.accept("IN") {
			var cat string
			cat, err = c.ident()
			sh.Name = []string{cat}
		}
	case c.accept("TABLES"):
		sh.What = ShowTables
		if c.accept("FROM") || c.accept("IN") {
			sh.Name, err = c.name(2)
		}
	case c.accept("COLUMNS"):
		sh.What = ShowColumns
		if !c.accept("FROM") && !c.accept("IN") {
			return nil, c.unexpected()
		}
		sh.Name, err = c.name(3)
	case c.accept("CREATE", "TABLE"):
		sh.What = ShowCreateTable
		if sh.Name, err = c.name(3); err != nil {
			return nil, err
		}
		return sh, c.end()
	default:
		return nil, unsupportedf("%s; icefloe has SHOW CATALOGS, SCHEMAS, TABLES, COLUMNS and CREATE TABLE",
			strings.TrimRight(c.text(0, min(1, c.last())), ";"))
	}
	if err != nil {
		return nil, err
	}
	if c.accept("LIKE") {
		if c.done() || c.peek().Kind != sqltok.String {
			return nil, c.unexpected()
		}
		like := c.peek().Value
		sh.Like = &like
		c.pos++
	}
	return sh, c.end()
}
