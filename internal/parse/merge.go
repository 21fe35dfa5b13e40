package parse

import "strings"

// Merge is
//
//	MERGE INTO target [[AS] t] USING source [[AS] s] ON cond
//	WHEN MATCHED [AND c] THEN UPDATE SET col = e, … | UPDATE SET * | DELETE | DO NOTHING
//	WHEN NOT MATCHED [BY TARGET] [AND c] THEN INSERT [(cols)] VALUES (e, …) | INSERT * | DO NOTHING
//	WHEN NOT MATCHED BY SOURCE [AND c] THEN UPDATE SET … | DELETE | DO NOTHING
//
// Its expressions are text DuckDB parses, numbered in Exprs.
type Merge struct {
	Target []string
	// Alias is the target's alias ("" without one).
	Alias string
	// Source is the text after USING: a table, a subquery or VALUES,
	// with its alias.
	Source string
	// On indexes Exprs: the join condition.
	On      int
	Clauses []MergeClause
	Exprs   []string
}

func (*Merge) body() {}

// MergeWhen is the kind of a WHEN clause.
type MergeWhen uint8

const (
	WhenMatched MergeWhen = iota
	WhenNotMatched
	WhenNotMatchedBySource
)

// MergeClause is one WHEN clause; Cond and Exprs index Merge.Exprs (Cond
// -1 without a condition).
type MergeClause struct {
	When MergeWhen
	Cond int
	// Action is UPDATE, DELETE, INSERT or NOTHING.
	Action string
	// Star is UPDATE SET * or INSERT *.
	Star  bool
	Cols  []string
	Exprs []int
}

func parseMerge(c *cursor) (Body, error) {
	m := &Merge{}
	if !c.accept("INTO") {
		return nil, c.unexpected()
	}
	var err error
	if m.Target, err = c.name(3); err != nil {
		return nil, err
	}
	if c.accept("AS") || (!c.done() && c.peek().IsIdent() && !c.at("USING")) {
		if m.Alias, err = c.ident(); err != nil {
			return nil, err
		}
	}
	if !c.accept("USING") {
		return nil, c.unexpected()
	}
	if m.Source, err = c.exprUntil("ON"); err != nil {
		return nil, err
	}
	if !c.accept("ON") {
		return nil, syntaxf("MERGE needs ON and a join condition")
	}
	if m.On, err = m.expr(c, "WHEN"); err != nil {
		return nil, err
	}
	for !c.done() {
		cl, err := m.clause(c)
		if err != nil {
			return nil, err
		}
		m.Clauses = append(m.Clauses, cl)
	}
	if len(m.Clauses) == 0 {
		return nil, syntaxf("MERGE needs at least one WHEN clause")
	}
	return m, nil
}

// clause reads one WHEN clause.
func (m *Merge) clause(c *cursor) (MergeClause, error) {
	cl := MergeClause{Cond: -1}
	switch {
	case c.accept("WHEN", "MATCHED"):
		cl.When = WhenMatched
	case c.accept("WHEN", "NOT", "MATCHED", "BY", "SOURCE"):
		cl.When = WhenNotMatchedBySource
	case c.accept("WHEN", "NOT", "MATCHED"):
		c.accept("BY", "TARGET")
		cl.When = WhenNotMatched
	default:
		return cl, c.unexpected()
	}
	var err error
	if c.accept("AND") {
		if cl.Cond, err = m.expr(c, "THEN"); err != nil {
			return cl, err
		}
	}
	if !c.accept("THEN") {
		return cl, c.unexpected()
	}
	switch {
	case c.accept("DO", "NOTHING"):
		cl.Action = "NOTHING"
	case c.accept("DELETE"):
		cl.Action = "DELETE"
	case c.accept("UPDATE", "SET"):
		cl.Action = "UPDATE"
		err = m.updateSet(c, &cl)
	case c.accept("INSERT"):
		cl.Action = "INSERT"
		err = m.insertValues(c, &cl)
	default:
		return cl, c.unexpected()
	}
	if err != nil {
		return cl, err
	}
	if cl.Action != "NOTHING" && (cl.When == WhenNotMatched) != (cl.Action == "INSERT") {
		return cl, invalidf("WHEN NOT MATCHED [BY TARGET] takes INSERT; WHEN MATCHED and WHEN NOT MATCHED BY SOURCE take UPDATE or DELETE")
	}
	if !c.done() && !c.at("WHEN") {
		return cl, c.unexpected()
	}
	return cl, nil
}

// updateSet reads "col = e, …" or "*" after UPDATE SET.
func (m *Merge) updateSet(c *cursor, cl *MergeClause) error {
	if c.acceptPunct("*") {
		cl.Star = true
		return nil
	}
	seen := map[string]bool{}
	for {
		col, err := c.ident()
		if err != nil {
			return err
		}
		if seen[strings.ToLower(col)] {
			return invalidf("column %q is set twice", col)
		}
		seen[strings.ToLower(col)] = true
		if !c.acceptPunct("=") {
			return c.unexpected()
		}
		e, err := m.expr(c, "WHEN", ",")
		if err != nil {
			return err
		}
		cl.Cols, cl.Exprs = append(cl.Cols, col), append(cl.Exprs, e)
		if !c.acceptPunct(",") {
			return nil
		}
	}
}

// insertValues reads "[(cols)] VALUES (e, …)" or "*" after INSERT.
func (m *Merge) insertValues(c *cursor, cl *MergeClause) error {
	if c.acceptPunct("*") {
		cl.Star = true
		return nil
	}
	if c.acceptPunct("(") {
		for {
			col, err := c.ident()
			if err != nil {
				return err
			}
			cl.Cols = append(cl.Cols, col)
			if c.acceptPunct(")") {
				break
			}
			if !c.acceptPunct(",") {
				return c.unexpected()
			}
		}
	}
	if !c.accept("VALUES") || !c.acceptPunct("(") {
		return c.unexpected()
	}
	for {
		e, err := m.expr(c, ",", ")")
		if err != nil {
			return err
		}
		cl.Exprs = append(cl.Exprs, e)
		if c.acceptPunct(")") {
			break
		}
		if !c.acceptPunct(",") {
			return c.unexpected()
		}
	}
	if len(cl.Cols) > 0 && len(cl.Cols) != len(cl.Exprs) {
		return invalidf("INSERT names %d columns but gives %d values", len(cl.Cols), len(cl.Exprs))
	}
	return nil
}

// expr reads an expression up to one of stops and returns its index.
func (m *Merge) expr(c *cursor, stops ...string) (int, error) {
	text, err := c.exprUntil(stops...)
	if err != nil {
		return 0, err
	}
	m.Exprs = append(m.Exprs, text)
	return len(m.Exprs) - 1, nil
}
