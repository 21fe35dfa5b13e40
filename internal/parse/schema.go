package parse

// CreateSchema is CREATE SCHEMA [IF NOT EXISTS] [catalog.]name [WITH (props)].
type CreateSchema struct {
	IfNotExists bool
	Name        []string
	// Props are WITH's properties, nil without WITH.
	Props map[string]string
}

func (*CreateSchema) body() {}

// DropSchema is DROP SCHEMA [IF EXISTS] [catalog.]name [CASCADE | RESTRICT].
type DropSchema struct {
	IfExists bool
	Name     []string
	Cascade  bool
}

func (*DropSchema) body() {}

func parseCreateSchema(c *cursor) (Body, error) {
	s := &CreateSchema{IfNotExists: c.accept("IF", "NOT", "EXISTS")}
	var err error
	if s.Name, err = c.name(2); err != nil {
		return nil, err
	}
	if c.accept("WITH") {
		if s.Props, err = c.properties(); err != nil {
			return nil, err
		}
	}
	return s, c.end()
}

func parseDropSchema(c *cursor) (Body, error) {
	s := &DropSchema{IfExists: c.accept("IF", "EXISTS")}
	var err error
	if s.Name, err = c.name(2); err != nil {
		return nil, err
	}
	s.Cascade = c.accept("CASCADE")
	if !s.Cascade {
		c.accept("RESTRICT")
	}
	return s, c.end()
}
