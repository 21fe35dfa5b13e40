package parse

import "strings"

// Update is UPDATE name SET col = expr, … [WHERE pred].
type Update struct {
	Name []string
	Set  []SetClause
	// Where is the WHERE clause's predicate ("" without one).
	Where string
}

func (*Update) body() {}

// SetClause is one col = expr of SET; Expr is text DuckDB parses.
type SetClause struct {
	Column, Expr string
}

// Delete is DELETE FROM name [WHERE pred].
type Delete struct {
	Name  []string
	Where string
}

func (*Delete) body() {}

func parseUpdate(c *cursor) (Body, error) {
	u := &Update{}
	var err error
	if u.Name, err = c.name(3); err != nil {
		return nil, err
	}
	if !c.accept("SET") {
		return nil, c.unexpected()
	}
	seen := map[string]bool{}
	for {
		col, err := c.ident()
		if err != nil {
			return nil, err
		}
		if !c.acceptPunct("=") {
			return nil, c.unexpected()
		}
		// The value ends at a comma outside brackets: SET l = [1, 2],
		// s = {'a': 1, 'b': 2} are two values.
		expr, err := c.exprUntil(",", "WHERE", "FROM", "RETURNING")
		if err != nil {
			return nil, err
		}
		key := strings.ToLower(col)
		if seen[key] {
			return nil, invalidf("column %q is set twice", col)
		}
		seen[key] = true
		u.Set = append(u.Set, SetClause{Column: col, Expr: expr})
		if !c.acceptPunct(",") {
			break
		}
	}
	if c.at("FROM") {
		return nil, unsupportedf("UPDATE … FROM")
	}
	u.Where, err = c.where("UPDATE")
	return u, err
}

func parseDelete(c *cursor) (Body, error) {
	if !c.accept("FROM") {
		return nil, c.unexpected()
	}
	d := &Delete{}
	var err error
	if d.Name, err = c.name(3); err != nil {
		return nil, err
	}
	d.Where, err = c.where("DELETE")
	return d, err
}
