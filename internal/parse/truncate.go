package parse

// Truncate is TRUNCATE [TABLE] name.
type Truncate struct {
	Name []string
}

func (*Truncate) body() {}

func parseTruncate(c *cursor) (Body, error) {
	c.accept("TABLE")
	name, err := c.name(3)
	if err != nil {
		return nil, err
	}
	return &Truncate{Name: name}, c.end()
}
