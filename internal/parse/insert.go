package parse

// Insert is INSERT INTO name [(columns)] VALUES … | query.
type Insert struct {
	Name []string
	// Columns are the column list's names (nil without one).
	Columns []string
	// Query is INSERT … SELECT's query (nil for VALUES).
	Query *Statement
	// Values is the text from VALUES to the end ("" for a query):
	// DuckDB checks it is exactly a list of rows.
	Values string
}

func (*Insert) body() {}

func parseInsert(c *cursor) (Body, error) {
	if c.at("OR") {
		return nil, unsupportedf("INSERT OR …")
	}
	if !c.accept("INTO") {
		return nil, c.unexpected()
	}
	ins := &Insert{}
	var err error
	if ins.Name, err = c.name(3); err != nil {
		return nil, err
	}
	if c.atPunct("(") {
		open, closing, err := c.group()
		if err != nil {
			return nil, err
		}
		inner := c.within(open+1, closing-1)
		if inner.atQuery() {
			ins.Query = c.st.subQuery(open, c.last())
			return ins, nil
		}
		if ins.Columns, err = inner.columnNames(); err != nil {
			return nil, err
		}
	}
	switch {
	case c.atQuery():
		ins.Query = c.st.subQuery(c.pos, c.last())
		return ins, nil
	case c.at("DEFAULT", "VALUES"):
		return nil, unsupportedf("INSERT … DEFAULT VALUES")
	case c.at("BY"):
		return nil, unsupportedf("INSERT … BY NAME / BY POSITION")
	case !c.at("VALUES"):
		return nil, c.unexpected()
	}
	toks := c.toks
	for i, depth := c.pos, 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.IsOp("("):
			depth++
		case t.IsOp(")"):
			depth--
		case depth == 0 && t.Is("RETURNING"):
			return nil, unsupportedf("INSERT … RETURNING")
		case depth == 0 && t.Is("ON") && i+1 < len(toks) && toks[i+1].Is("CONFLICT"):
			return nil, unsupportedf("INSERT … ON CONFLICT")
		}
	}
	ins.Values = c.rest()
	return ins, nil
}
