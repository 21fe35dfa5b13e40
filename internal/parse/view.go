package parse

// CreateView is CREATE [OR REPLACE] VIEW [IF NOT EXISTS] name AS query.
type CreateView struct {
	OrReplace   bool
	IfNotExists bool
	Name        []string
	// Query is the view's query; its Text is what the catalog stores.
	Query *Statement
}

func (*CreateView) body() {}

// DropView is DROP VIEW [IF EXISTS] name.
type DropView struct {
	IfExists bool
	Name     []string
}

func (*DropView) body() {}

func parseCreateView(c *cursor) (Body, error) {
	v := &CreateView{OrReplace: c.toks[1].Is("OR"), IfNotExists: c.accept("IF", "NOT", "EXISTS")}
	var err error
	if v.Name, err = c.name(3); err != nil {
		return nil, err
	}
	if !c.at("AS") || c.pos+1 >= len(c.toks) {
		return nil, syntaxf("CREATE VIEW needs AS query")
	}
	v.Query = c.st.subQuery(c.pos+1, c.last())
	return v, nil
}

func parseDropView(c *cursor) (Body, error) {
	v := &DropView{IfExists: c.accept("IF", "EXISTS")}
	var err error
	if v.Name, err = c.name(3); err != nil {
		return nil, err
	}
	return v, c.end()
}
